"""Mesh: the job's ranks arranged as a grid of data-, pipeline- and
tensor-parallel coordinates, with a cohort process set for each line of the
grid along each dimension.

    mesh = Mesh(dp=2, pp=2, tp=2)      # 8 ranks; any keyword order
    mesh.tp.process_set                # this rank's tensor-parallel set
    mesh.coordinate("pp")              # this rank's pipeline stage

Placement: the first dimension of `order` varies fastest over the job's
ranks, and the default order is ("tp", "dp", "pp"): tensor-parallel peers
are consecutive ranks, so on a launcher that numbers a host's ranks
consecutively (`cohort run`, srun, mpirun by slot) they share a host and its
shared memory, which their per-layer collectives need most; data-parallel
peers come next, and pipeline stages, which exchange only activations, are
furthest apart (across hosts first)."""
import math
import warnings

from ... import _cohort
from ...process_sets import ProcessSet, add_process_set, global_process_set

DIMENSIONS = ("dp", "pp", "tp")
DEFAULT_ORDER = ("tp", "dp", "pp")


class Group:
    """One rank's line of the mesh along some dimension(s): the global ranks
    in it (in coordinate order), this rank's position, and the cohort process
    set that runs their collectives (None for a group of one rank, which
    needs none)."""

    def __init__(self, name, ranks, process_set):
        self.name = name
        self.ranks = list(ranks)
        self.process_set = process_set
        self.rank = self.ranks.index(_cohort.rank()) if _cohort.rank() in self.ranks else -1

    @property
    def size(self):
        return len(self.ranks)

    def __repr__(self):
        return "Group(%s, ranks=%s)" % (self.name, self.ranks)


def layout(size, dims, order=DEFAULT_ORDER):
    """rank -> {dimension: coordinate} for a job of `size` ranks arranged as
    `dims` ({"dp": n, "pp": n, "tp": n}), `order[0]` varying fastest. A pure
    function (no job needed): the placement rule, tested on its own."""
    check_dims(size, dims, order)
    coords = []
    for rank in range(size):
        c, rest = {}, rank
        for d in order:
            c[d] = rest % dims[d]
            rest //= dims[d]
        coords.append(c)
    return coords


def check_dims(size, dims, order):
    if sorted(order) != sorted(DIMENSIONS):
        raise ValueError("Mesh: order must name %s once each, got %s" % (
            ", ".join(DIMENSIONS), list(order)))
    for d in DIMENSIONS:
        n = dims[d]
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError("Mesh: %s must be a positive integer, got %r" % (d, n))
    product = math.prod(dims[d] for d in DIMENSIONS)
    if product != size:
        raise ValueError("Mesh(dp=%d, pp=%d, tp=%d): dp*pp*tp = %d but the job has %d ranks" % (
            dims["dp"], dims["pp"], dims["tp"], product, size))


def resolve_dims(size, dp, pp, tp):
    """The three sizes, dp filled in when None (the ranks left over)."""
    for name, n in (("pp", pp), ("tp", tp)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError("Mesh: %s must be a positive integer, got %r" % (name, n))
    if dp is None:
        if size % (pp * tp) != 0:
            raise ValueError("Mesh(pp=%d, tp=%d): pp*tp = %d does not divide the job's %d ranks" %
                             (pp, tp, pp * tp, size))
        dp = size // (pp * tp)
    return {"dp": dp, "pp": pp, "tp": tp}


class Mesh:
    """The job's ranks as a dp x pp x tp grid. Construct it on every rank
    with the same arguments (it registers process sets, a collective call).
    dp=None takes the ranks that pp and tp leave (so an elastic job can
    rebuild the mesh at any size that pp*tp divides)."""

    def __init__(self, dp=None, pp=1, tp=1, order=DEFAULT_ORDER):
        if not _cohort.is_initialized():
            raise ValueError("Mesh: cohort has not been initialized; call cohort.torch.init() "
                             "first")
        self.size = _cohort.size()
        self.rank = _cohort.rank()
        self.dims = resolve_dims(self.size, dp, pp, tp)
        self.order = tuple(order)
        self._layout = layout(self.size, self.dims, self.order)
        self._coords = self._layout[self.rank]
        self._warn_if_tp_crosses_hosts()
        self._sets = {}  # tuple of ranks -> process set (a group of one: None)
        self.dp, self.pp, self.tp = self.group("dp"), self.group("pp"), self.group("tp")

    def _warn_if_tp_crosses_hosts(self):
        tp = self.dims["tp"]
        stride = math.prod(self.dims[d] for d in self.order[:self.order.index("tp")])
        if tp > 1 and _cohort.cross_size() > 1 and _cohort.local_size() % (tp * stride) != 0:
            warnings.warn("Mesh: tensor-parallel groups of %d ranks (stride %d) do not fit the "
                          "%d ranks of a host: their per-layer collectives cross hosts" % (
                              tp, stride, _cohort.local_size()))

    def coordinate(self, dim):
        """This rank's coordinate along `dim` ("dp", "pp" or "tp")."""
        return self._coords[dim]

    def coordinates(self, rank=None):
        """{dimension: coordinate} of `rank` (default: this rank)."""
        return dict(self._layout[self.rank if rank is None else rank])

    def rank_of(self, **coords):
        """The global rank at the given coordinates; those not given are this
        rank's own (mesh.rank_of(pp=0): the first stage of this rank's line)."""
        want = dict(self._coords)
        for d, c in coords.items():
            if d not in DIMENSIONS or not 0 <= c < self.dims[d]:
                raise ValueError("Mesh.rank_of: %s=%r is outside the mesh %s" % (d, c, self.dims))
            want[d] = c
        rank = 0
        for d in reversed(self.order):
            rank = rank * self.dims[d] + want[d]
        return rank

    def group(self, dim, positions=None):
        """A Group along `dim` holding the ranks at `positions` of it (default
        all) that share this rank's other coordinates, e.g. group("pp", [0,
        pp-1]): the first and last stage of this rank's pipeline. Collective:
        every rank calls it with the same arguments, since the sets of every
        line are registered on every rank. This rank need not be in it
        (Group.rank is then -1)."""
        n = self.dims[dim]
        positions = list(range(n)) if positions is None else sorted(set(positions))
        if not positions or any(not 0 <= p < n for p in positions):
            raise ValueError("Mesh.group: positions %s are not coordinates of %s (size %d)" % (
                positions, dim, n))
        lines = {}
        for rank, coords in enumerate(self._layout):
            if coords[dim] in positions:
                key = tuple(coords[d] for d in DIMENSIONS if d != dim)
                lines.setdefault(key, []).append(rank)
        mine = tuple(self._coords[d] for d in DIMENSIONS if d != dim)
        for key in sorted(lines):
            ranks = sorted(lines[key], key=lambda r: self._layout[r][dim])
            self._register(ranks)
        ranks = sorted(lines[mine], key=lambda r: self._layout[r][dim])
        return Group(dim, ranks, self._sets[tuple(sorted(ranks))])

    def _register(self, ranks):
        """The process set of `ranks` (all of the job: the global set; one
        rank: None), added on every rank unless an existing set has exactly
        these ranks (a second Mesh of the same shape reuses the first's)."""
        key = tuple(sorted(ranks))
        if key in self._sets:
            return self._sets[key]
        if len(key) == 1:
            found = None
        elif len(key) == self.size:
            found = global_process_set
        else:
            found = _existing_set(key)
            if found is None:
                found = add_process_set(ProcessSet(list(key)))
        self._sets[key] = found
        return found

    def __repr__(self):
        return "Mesh(dp=%d, pp=%d, tp=%d, rank %d at %s)" % (
            self.dims["dp"], self.dims["pp"], self.dims["tp"], self.rank, self._coords)


def _existing_set(ranks):
    """A registered process set holding exactly `ranks`, or None. Every rank
    registered the same sets, so every rank finds the same answer."""
    for set_id in _cohort.process_set_ids():
        if set_id and tuple(_cohort.process_set_ranks(set_id)) == ranks:
            ps = ProcessSet(list(ranks))
            ps.process_set_id = set_id
            return ps
    return None
