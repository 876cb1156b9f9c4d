"""Compression once per host, for the stateful reducers (Compression.powersgd,
Compression.topk) of DistributedOptimizer: the ranks of a host sum their
gradients uncompressed (shared memory, a process set of the host's ranks),
the host's leader (its lowest rank) alone compresses that sum and reduces it
with the other hosts' leaders (a process set of the leaders), keeping the
error feedback, and broadcasts the result within its host. Bytes between
hosts are then one compressed message per host instead of one per rank, and
the compression's CPU cost is paid once per host.

On one host nothing is compressed: the average over shared memory is exact
and costs less than compressing would."""
import warnings

import torch

from .. import _cohort
from ..process_sets import add_process_set
from .reducer_comm import EngineComm

SCOPES = ("auto", "host", "rank")


def check_scope(scope, who):
    if scope not in SCOPES:
        raise ValueError("%s: scope must be 'auto', 'host' or 'rank', got %r" % (who, scope))


class HostLayout:
    """Which job ranks share a host: `hosts[r]` is rank r's host. Hosts are
    numbered in the order of their lowest rank; that rank is the leader."""

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
        self.host_comm = None  # among my_ranks, when there are several (connect())
        self.leader_comm = None  # among the leaders, on a leader (connect())

    @classmethod
    def of_job(cls):
        """The job's layout (collective: every rank says its host)."""
        from .mpi_ops import allgather
        hosts = allgather(torch.tensor([_cohort.cross_rank()], dtype=torch.int64))
        return cls(hosts.tolist(), _cohort.rank())

    def connect(self):
        """Registers the process sets (collective, on every rank in the
        same order): one per host of several ranks, then the leaders'."""
        for ranks in self.host_ranks:
            if len(ranks) > 1:
                ps = add_process_set(ranks)
                if self.rank in ranks:
                    self.host_comm = EngineComm(ps)
        ps = add_process_set(self.leaders)
        if self.is_leader:
            self.leader_comm = EngineComm(ps)
        return self

    def mode(self, scope):
        """How a reducer with `scope` runs on this layout: "host" (once per
        host), "rank" (every rank compresses) or "dense" (one host: averaged
        uncompressed)."""
        if scope == "rank":
            return "rank"
        if self.host_count == 1:
            return "dense"
        if max(len(ranks) for ranks in self.host_ranks) == 1:
            return "rank"  # one rank per host: the same thing, without the sets
        return "host"

    def describe(self, mode):
        """What a saved reducer state records of where it was made."""
        return {"scope": mode, "ranks": self.size, "hosts": self.host_count,
                "leader": mode != "host" or self.is_leader}


def once_per_host(reducer, layout, names, tensors, tag):
    """The generator of one group's reduction once per host (see the top of
    this file); the results are averages over every rank of the job."""
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


def averaged(comm, tensors, tag):
    """The generator of one group's plain average (mode "dense")."""
    yield comm.grouped_allreduce_into(tensors, "dense" + tag, average=True)


def _layout_text(info):
    text = "%d ranks" % info["ranks"]
    if info["scope"] == "host":
        text += " compressed once per host on %d hosts" % info["hosts"]
    return text + (" (scope %s)" % info["scope"] if info["scope"] != "host" else "")


def why_errors_do_not_apply(saved, current):
    """None when a reducer state saved where `saved` (describe()) says holds
    error feedback this rank (`current`) can use; otherwise why not."""
    if saved is None:  # saved before layouts were recorded: per rank
        saved = {"scope": "rank", "ranks": current["ranks"], "hosts": current["hosts"],
                 "leader": True}
    if saved["scope"] != current["scope"] or saved["ranks"] != current["ranks"] or (
            current["scope"] == "host" and saved["hosts"] != current["hosts"]):
        return "they were saved with %s, this job has %s" % (_layout_text(saved),
                                                             _layout_text(current))
    if not saved["leader"]:
        return ("they were saved by a rank that is not its host's leader, which keeps none "
                "(save the optimizer's state on a leader, e.g. rank 0)")
    return None


def restore_state(reducer, state, current):
    """The reducer `state` to load on a rank whose layout is `current`:
    as it is, or without its errors where they do not apply here (a warning
    says why; the step count and PowerSGD's warm start are kept, being the
    same on every rank). A rank that does not compress keeps no errors."""
    state = dict(state)
    if current["scope"] == "dense" or not current["leader"]:
        state["error"], state["q"] = {}, {}
        return state
    why = why_errors_do_not_apply(state.get("layout"), current)
    if why is not None:
        warnings.warn("%r: the saved error feedback is not used: %s" % (reducer, why))
        state["error"] = {}
    return state
