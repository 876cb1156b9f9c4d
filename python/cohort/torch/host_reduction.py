"""Compression once per host, for the stateful reducers (Compression.powersgd,
Compression.topk) of DistributedOptimizer. Bytes between hosts are then one
compressed message per host instead of one per rank. Two ways:

- Sharded (mode "shard", where every host has the same number L of ranks):
  the gradients of a group are split into L shares (PowerSGD: whole tensors,
  balanced by elements; top-k: contiguous ranges of the flattened group); a
  reduce-scatter within the host (shared memory, a process set of the host's
  ranks) leaves local rank i with its host's sum of share i; local rank i
  compresses share i with local rank i of every other host (a process set
  per local rank index), keeping share i's error feedback and warm start;
  an allgather within the host gives every rank every share. Every rank
  compresses, none waits for another's compression.
- Leader (mode "host", hosts of different sizes or scope="leader"): the
  ranks of a host sum their gradients uncompressed, the host's leader (its
  lowest rank) alone compresses that sum with the other hosts' leaders and
  broadcasts the result within its host.

On one host nothing is compressed: the average over shared memory is exact
and costs less than compressing would.

The process sets are the layout's (connect()); removing them is collective,
so it happens at a defined point, HostLayout.close() (DistributedOptimizer's
close()), or with the runtime at shutdown, never at garbage collection."""
import warnings

import torch

from .. import _cohort, _ops
from ..process_sets import add_process_set, remove_process_set
from .reducer_comm import EngineComm

SCOPES = ("auto", "host", "leader", "rank")


def check_scope(scope, who):
    if scope not in SCOPES:
        raise ValueError("%s: scope must be 'auto', 'host', 'leader' or 'rank', got %r"
                         % (who, scope))


class HostLayout:
    """Which job ranks share a host: `hosts[r]` is rank r's host. Hosts are
    numbered in the order of their lowest rank; that rank is the leader, a
    rank's local index is its place among its host's ranks."""

    def __init__(self, hosts, rank):
        self.size = len(hosts)
        self.rank = rank
        order = []
        for h in hosts:
            if h not in order:
                order.append(h)
        self.host_ranks = [[r for r in range(self.size) if hosts[r] == h] for h in order]
        self.host_count = len(order)
        self.leaders = [ranks[0] for ranks in self.host_ranks]
        self.my_ranks = self.host_ranks[order.index(hosts[rank])]
        self.leader = self.my_ranks[0]
        self.is_leader = rank == self.leader
        self.local_index = self.my_ranks.index(rank)
        self.local_size = len(self.my_ranks)
        self.equal_hosts = len({len(ranks) for ranks in self.host_ranks}) == 1
        self.host_comm = None  # among my_ranks, when there are several (connect())
        self.leader_comm = None  # among the leaders, on a leader (connect())
        self.shard_comm = None  # mode "shard": local index i of every host (connect())
        self._sets = []  # the process sets connect() added, in the order added
        self._runtime = None  # the runtime they were added in (_ops.Handle.runtime)

    @classmethod
    def of_job(cls):
        """The job's layout (collective: every rank says its host)."""
        from .mpi_ops import allgather
        hosts = allgather(torch.tensor([_cohort.cross_rank()], dtype=torch.int64))
        return cls(hosts.tolist(), _cohort.rank())

    def _add(self, ranks):
        ps = add_process_set(ranks)
        self._sets.append(ps)
        return EngineComm(ps) if self.rank in ranks else None

    def connect(self, mode=None):
        """Registers the process sets `mode` (default: mode("host")) needs,
        collectively, on every rank in the same order: one per host of
        several ranks, then for "shard" one per local index (the first is
        the leaders'), for "host" the leaders'."""
        mode = mode or self.mode("host")
        self._runtime = _ops.Handle.runtime
        for ranks in self.host_ranks:
            if len(ranks) > 1:
                self.host_comm = self._add(ranks) or self.host_comm
        if mode == "shard":
            for i in range(self.local_size):
                comm = self._add([ranks[i] for ranks in self.host_ranks])
                if i == self.local_index:
                    self.shard_comm = comm
            self.leader_comm = self.shard_comm if self.is_leader else None
        else:
            self.leader_comm = self._add(self.leaders)
        return self

    def close(self):
        """Removes the process sets connect() added, in the order added.
        Collective: every rank of the job calls it at the same point. After
        a shutdown they ended with the runtime: nothing is sent then."""
        sets, self._sets = self._sets, []
        if sets and not self.ended_with_the_runtime() and _cohort.is_running():
            for ps in sets:
                remove_process_set(ps)
        self.host_comm = self.leader_comm = self.shard_comm = None

    def ended_with_the_runtime(self):
        """Whether the runtime connect() added the sets in has stopped
        (shutdown, or an elastic reset): they are gone with it."""
        return self._runtime != _ops.Handle.runtime

    def process_sets(self):
        """The process sets connect() added (and close() has not removed)."""
        return list(self._sets)

    def mode(self, scope):
        """How a reducer with `scope` runs on this layout: "shard" (once per
        host, sharded over the host's ranks), "host" (once per host by the
        leader), "rank" (every rank compresses) or "dense" (one host:
        averaged uncompressed)."""
        if scope == "rank":
            return "rank"
        if self.host_count == 1:
            return "dense"
        if max(len(ranks) for ranks in self.host_ranks) == 1:
            return "rank"  # one rank per host: the same thing, without the sets
        if scope != "leader" and self.equal_hosts:
            return "shard"
        return "host"

    def explain(self, mode, scope):
        """One line saying how `mode` (from mode(scope)) compresses, and why."""
        sizes = ", ".join(str(len(ranks)) for ranks in self.host_ranks)
        if mode == "shard":
            return ("compressing once per host, sharded: each of the %d ranks of a host "
                    "compresses a share of the gradients with its counterparts on the %d "
                    "hosts" % (self.local_size, self.host_count))
        if mode == "host":
            why = ("scope='leader'" if scope == "leader" else
                   "hosts have different numbers of ranks (%s), sharding needs the same "
                   "number on every host" % sizes)
            return "compressing once per host by each host's leader (%s)" % why
        if mode == "dense":
            return "one host: averaging uncompressed"
        return "compressing on every rank"

    def describe(self, mode):
        """What a saved reducer state records of where it was made."""
        info = {"scope": mode, "ranks": self.size, "hosts": self.host_count,
                "leader": mode != "host" or self.is_leader}
        if mode == "shard":
            info.update(share=self.local_index, shares=self.local_size)
        return info


def check_connected(layout, who, remake):
    """Raises why `who` cannot reduce once per host with `layout` (None:
    closed) any more; `remake`: what to make anew."""
    if layout is None:
        raise ValueError("%s: it was closed (close() removed its process sets); make a new %s"
                         % (who, remake))
    if layout.ended_with_the_runtime():
        raise ValueError("%s: its process sets ended with the runtime they were made in "
                         "(shutdown() or an elastic reset); make a new %s" % (who, remake))


def once_per_host(reducer, layout, names, tensors, tag):
    """The generator of one group's reduction once per host by the leaders
    (mode "host", see the top of this file); the results are averages over
    every rank of the job."""
    if layout.host_comm is not None:
        yield layout.host_comm.grouped_allreduce_into(tensors, "host.sum" + tag, average=False)
    if layout.is_leader:
        yield from reducer.stages(names, tensors, layout.leader_comm, ".host" + tag)
        # The reducer averaged the host sums over the hosts: / ranks in all.
        scale = layout.host_count / layout.size
        if scale != 1:
            for t in tensors:
                t.mul_(scale)
    if layout.host_comm is not None:
        yield layout.host_comm.broadcast_into(tensors, layout.leader, "host.result" + tag)


def split_shares(names, tensors, shares, by_range):
    """A group's gradients in `shares` shares: for each share, its pieces
    (name, index in tensors, first element, end). by_range: contiguous
    ranges, equal to an element, of the group flattened in name order (a
    tensor cut in two gives pieces named "name[start:end]"); otherwise whole
    tensors, the largest first to the least loaded share (the lowest on
    ties), each share's in name order. The same on every rank, and for the
    same tensors in any order (DDP reorders its buckets after the first
    step), so each tensor's error and warm start stay on one rank."""
    sizes = [t.numel() for t in tensors]
    by_name = sorted(range(len(sizes)), key=lambda j: names[j])
    if by_range:
        total = sum(sizes)
        bounds = [total * i // shares for i in range(shares + 1)]
        out, at = [[] for _ in range(shares)], 0
        for j in by_name:
            n = sizes[j]
            for i in range(shares):
                a, b = max(at, bounds[i]), min(at + n, bounds[i + 1])
                if a < b:
                    name = names[j] if b - a == n else "%s[%d:%d]" % (names[j], a - at, b - at)
                    out[i].append((name, j, a - at, b - at))
            at += n
        return out
    loads, owner = [0] * shares, {}
    for j in sorted(by_name, key=lambda j: -sizes[j]):  # stable: names break ties
        i = min(range(shares), key=lambda i: (loads[i], i))
        owner[j] = i
        loads[i] += sizes[j]
    return [[(names[j], j, 0, sizes[j]) for j in by_name if owner[j] == i]
            for i in range(shares)]


def sharded_per_host(reducer, layout, names, tensors, tag):
    """The generator of one group's reduction once per host, sharded (mode
    "shard", see the top of this file); the results are averages over every
    rank of the job. A group of several dtypes (one flat buffer cannot hold
    it) goes the leader's way, on local index 0's process set."""
    if not tensors:
        return
    if len({t.dtype for t in tensors}) > 1:
        yield from once_per_host(reducer, layout, names, tensors, tag)
        return
    shares = split_shares(names, tensors, layout.local_size,
                          getattr(reducer, "shares_by_range", False))
    pieces = [piece for share in shares for piece in share]
    flat = torch.cat([tensors[j].reshape(-1)[a:b] for _, j, a, b in pieces])
    sizes = [sum(b - a for _, _, a, b in share) for share in shares]
    start = sum(sizes[:layout.local_index])
    mine = flat[start:start + sizes[layout.local_index]]
    yield layout.host_comm.reducescatter_sum_into(flat, sizes, mine, "shard.sum" + tag)
    my_names, my_views, at = [], [], 0
    for name, j, a, b in shares[layout.local_index]:
        view = mine[at:at + b - a]
        my_names.append(name)
        my_views.append(view.view(tensors[j].shape) if b - a == tensors[j].numel() else view)
        at += b - a
    yield from reducer.stages(my_names, my_views, layout.shard_comm, ".shard" + tag)
    # The reducer averaged the host sums over the hosts: / ranks in all.
    mine.mul_(layout.host_count / layout.size)
    yield layout.host_comm.allgather_into(mine, flat, "shard.result" + tag)
    at = 0
    for _, j, a, b in pieces:
        tensors[j].view(-1)[a:b].copy_(flat[at:at + b - a])
        at += b - a


def averaged(reducer, comm, names, tensors, tag):
    """The generator of one group's plain average (mode "dense"). A reducer
    that applies the optimizer's momentum itself (top-k's momentum
    correction) still does, though it sparsifies nothing here."""
    if hasattr(reducer, "apply_momentum"):
        reducer.apply_momentum(names, tensors)
    yield comm.grouped_allreduce_into(tensors, "dense" + tag, average=True)


def _layout_text(info):
    text = "%d ranks" % info["ranks"]
    if info["scope"] == "host":
        return text + " compressed once per host on %d hosts" % info["hosts"]
    if info["scope"] == "shard":
        return text + " compressed once per host on %d hosts, sharded over %d ranks per host" % (
            info["hosts"], info["shares"])
    return text + " (scope %s)" % info["scope"]


def why_errors_do_not_apply(saved, current):
    """None when a reducer state saved where `saved` (describe()) says holds
    error feedback this rank (`current`) can use; otherwise why not."""
    if saved is None:  # saved before layouts were recorded: per rank
        saved = {"scope": "rank", "ranks": current["ranks"], "hosts": current["hosts"],
                 "leader": True}
    if saved["scope"] != current["scope"] or saved["ranks"] != current["ranks"] or (
            current["scope"] in ("host", "shard") and saved["hosts"] != current["hosts"]):
        return "they were saved with %s, this job has %s" % (_layout_text(saved),
                                                             _layout_text(current))
    if not saved["leader"]:
        return ("they were saved by a rank that is not its host's leader, which keeps none "
                "(save the optimizer's state on a leader, e.g. rank 0)")
    if current["scope"] == "shard" and saved["share"] != current["share"]:
        return ("they were saved by a rank that compresses share %d of %d (local rank %d), "
                "this rank compresses share %d (save and load each rank's own state)" % (
                    saved["share"], saved["shares"], saved["share"], current["share"]))
    return None


def restore_state(reducer, state, current):
    """The reducer `state` to load on a rank whose layout is `current`:
    as it is, or without its errors where they do not apply here (a warning
    says why; the step count and PowerSGD's warm start are kept, being the
    same on every rank that compresses the same tensors). A rank that does
    not compress keeps no errors. Top-k's velocities (momentum correction)
    belong to the rank that compresses, as its errors, and go with them."""
    state = dict(state)
    if current["scope"] == "dense" or not current["leader"]:
        state["error"], state["q"] = {}, {}
        state.pop("velocity", None)  # top-k's momentum correction: as the errors
        return state
    why = why_errors_do_not_apply(state.get("layout"), current)
    if why is not None:
        warnings.warn("%r: the saved error feedback is not used: %s" % (reducer, why))
        state["error"] = {}
        state.pop("velocity", None)
    return state
