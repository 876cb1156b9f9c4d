"""Process sets: subsets of the job's ranks that run collectives among
themselves (Horovod's ProcessSet API, shared by cohort and cohort.torch)."""
from . import _cohort


class ProcessSet:
    """A set of ranks. Construct with the ranks, then register it with every
    rank of the job through `add_process_set` (or `init(process_sets=...)`)."""

    def __init__(self, ranks_or_comm):
        self.ranks = sorted(int(r) for r in ranks_or_comm) if ranks_or_comm is not None else None
        self.process_set_id = None

    def _require_id(self):
        if self.process_set_id is None:
            raise ValueError("process set %s has not been added (call add_process_set on every "
                             "rank first)" % self.ranks)
        return self.process_set_id

    def size(self):
        """Number of ranks in the set."""
        return len(_cohort.process_set_ranks(self._require_id()))

    def rank(self):
        """This rank's position in the set, -1 when it is not a member."""
        return _cohort.process_set_rank(self._require_id())

    def included(self):
        return self.rank() >= 0

    def __repr__(self):
        return "ProcessSet(process_set_id=%s, ranks=%s)" % (self.process_set_id, self.ranks)


class _GlobalProcessSet(ProcessSet):
    """Every rank of the job (set 0); its ranks are known once the job runs."""

    def __init__(self):
        super().__init__(None)
        self.process_set_id = 0

    @property
    def ranks(self):
        return _cohort.process_set_ranks(0) if _cohort.is_initialized() else None

    @ranks.setter
    def ranks(self, value):
        pass


global_process_set = _GlobalProcessSet()


def set_id(process_set):
    """The engine id of a ProcessSet (or of an int id)."""
    if isinstance(process_set, ProcessSet):
        return process_set._require_id()
    return int(process_set)


def add_process_set(process_set):
    """Registers a set (a ProcessSet or a list of ranks) on every rank; collective."""
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    if process_set.process_set_id is not None:
        raise ValueError("%r is already added" % (process_set,))
    process_set.process_set_id = _cohort.add_process_set(process_set.ranks)
    return process_set


def remove_process_set(process_set):
    """Removes a set on every rank; collective. Returns True when it existed."""
    if process_set is global_process_set or set_id(process_set) == 0:
        raise ValueError("the global process set cannot be removed")
    _cohort.remove_process_set(set_id(process_set))
    if isinstance(process_set, ProcessSet):
        process_set.process_set_id = None
    return True


def set_size(process_set):
    return len(_cohort.process_set_ranks(set_id(process_set)))
