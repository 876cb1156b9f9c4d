"""Top-k gradient sparsification with error feedback, for cohort.torch's
DistributedOptimizer (Compression.topk) and DDP comm hooks
(cohort.torch.comm_hooks).

Each rank adds to each gradient what it did not send before (the error),
keeps the k = max(1, ratio x numel) entries of largest magnitude and
remembers the rest as the new error. The kept values and their indices of
every gradient travel in one grouped allgather (values in the gradient's
dtype, int32 indices), and every rank sums what all ranks sent, divided by
their number, into the zeroed gradient: each rank moves 2k numbers per
gradient instead of the whole gradient.

A gradient where k x ranks >= numel (the allgather would move more than a
dense allreduce) is averaged as it is, with no error kept.

Two options of Deep Gradient Compression (Lin et al., 2018) make top-k
train as well as dense SGD with momentum:
- momentum correction (`momentum`): each rank keeps a velocity u = momentum
  u + gradient and sparsifies the velocity (plus the error) instead of the
  gradient; where an entry is sent its velocity restarts from 0 (momentum
  factor masking). The momentum is then applied here, before the
  sparsification, so the optimizer must have none (DistributedOptimizer
  refuses one that has). Dense gradients carry the velocity too, which is
  plain momentum SGD for them.
- sparsity warm-up (`warmup_steps`): the share kept falls geometrically
  from all of it to `ratio` over the first steps."""
import math
import numbers

import torch

from .host_reduction import check_scope
from .reducer_comm import drive

# Candidates for the top k of a large gradient are found from a random
# sample of this many magnitudes (see TopK.indices).
_SAMPLE = 8192


class TopK:
    """Stateful top-k reducer: reduce() averages a list of gradients over
    the ranks, sparsified; the errors survive steps and checkpoints."""

    is_reducer = True
    # host_reduction.sharded_per_host: any range of a gradient can be
    # sparsified on its own, so the shares of a group are equal ranges.
    shares_by_range = True

    def __init__(self, ratio=0.01, error_feedback=True, scope="auto", overlap=True,
                 momentum=0.0, warmup_steps=0):
        if not isinstance(ratio, numbers.Real) or not 0 < ratio <= 1:
            raise ValueError("Compression.topk: ratio must be in (0, 1], got %r" % (ratio,))
        if not isinstance(momentum, numbers.Real) or not 0 <= momentum < 1:
            raise ValueError("Compression.topk: momentum must be in [0, 1), got %r" % (momentum,))
        if (not isinstance(warmup_steps, numbers.Integral) or isinstance(warmup_steps, bool)
                or warmup_steps < 0):
            raise ValueError("Compression.topk: warmup_steps must be an int >= 0, got %r"
                             % (warmup_steps,))
        check_scope(scope, "Compression.topk")
        self.scope = scope  # as PowerSGD's
        self.overlap = overlap
        self.ratio = ratio
        self.error_feedback = error_feedback
        self.momentum = momentum
        self.warmup_steps = int(warmup_steps)
        self.iter = 0
        self.error = {}  # name -> flat tensor
        self.velocity = {}  # name -> flat tensor (momentum correction)
        self._gen = None  # for indices(); local to this rank, no effect on the result

    def __repr__(self):
        extra = "".join(", %s=%g" % (k, v) for k, v in (("momentum", self.momentum),
                                                       ("warmup_steps", self.warmup_steps)) if v)
        return "Compression.topk(%g%s)" % (self.ratio, extra)

    def density(self):
        """The share of each gradient kept at this step: `ratio` once
        `warmup_steps` steps were reduced; before, it falls geometrically
        from 1 (all of it: averaged dense) to `ratio`."""
        if self.iter >= self.warmup_steps:
            return self.ratio
        return self.ratio ** (self.iter / self.warmup_steps)

    def k(self, numel):
        return max(1, int(math.floor(numel * self.density())))

    def apply_momentum(self, names, tensors):
        """Momentum correction where nothing is sparsified (one host, whose
        average is dense; one rank): each floating gradient becomes its
        velocity, which is plain momentum SGD. Without momentum, nothing."""
        if not self.momentum:
            return
        for name, t in zip(names, tensors):
            if t.dtype.is_floating_point:
                flat = t.reshape(-1)  # a copy only when t is not contiguous
                self._with_velocity(name, flat)
                if flat.data_ptr() != t.data_ptr():
                    t.copy_(flat.view_as(t))

    def _with_velocity(self, name, flat):
        """Momentum correction: the velocity u = momentum u + flat, written
        into `flat` too; None without momentum."""
        if not self.momentum:
            return None
        u = self.velocity.get(name)
        if u is None or u.shape != flat.shape:
            u = self.velocity[name] = torch.zeros_like(flat)
        u.mul_(self.momentum).add_(flat)
        flat.copy_(u)
        return u

    def indices(self, magnitude, k):
        """The indices of the k largest of `magnitude` (1-D), in no order.
        torch.topk over millions of elements costs several passes of a
        selection; instead a threshold from a random sample (about 2k
        entries expected above it) narrows them to candidates, of which
        torch.topk keeps k: the same set, unless fewer than k pass (then
        the plain torch.topk runs)."""
        n = magnitude.numel()
        if n <= 8 * _SAMPLE or k * 16 > n:
            return torch.topk(magnitude, k, sorted=False).indices
        if self._gen is None:
            self._gen = torch.Generator().manual_seed(0)
        sample = magnitude[torch.randint(n, (_SAMPLE,), generator=self._gen)]
        q = min(_SAMPLE, max(1, int(2 * _SAMPLE * k / n)))
        threshold = torch.topk(sample, q, sorted=False).values.min()
        candidates = (magnitude >= threshold).nonzero().view(-1)
        if candidates.numel() < k:
            return torch.topk(magnitude, k, sorted=False).indices
        return candidates[torch.topk(magnitude[candidates], k, sorted=False).indices]

    def reduce(self, names, tensors, comm, end_of_step=True):
        """Replaces each of `tensors` (gradients named `names`, the same
        list on every rank) by its sparsified average over the ranks
        (`end_of_step`: as PowerSGD.reduce). The step count advances after
        the reduction, as DistributedOptimizer's end_step() does it: the
        warm-up's first step keeps everything either way."""
        try:
            drive(self.stages(names, tensors, comm))
        finally:
            self.iter += 1 if end_of_step else 0

    def end_step(self):
        """A step's gradients were all reduced (stages() does not count)."""
        self.iter += 1

    def stages(self, names, tensors, comm, tag=""):
        """reduce() as a generator of the collectives it waits for
        (reducer_comm.Stages): everything is sent as soon as it is
        advanced; `tag` keeps the names of several groups apart."""
        world = comm.size
        sparse, plain, plain_names = [], [], []
        for name, t in zip(names, tensors):
            if t.dtype.is_floating_point and self.k(t.numel()) * world < t.numel():
                sparse.append((name, t))
            else:
                plain_names.append(name)
                plain.append(t)
        self.apply_momentum(plain_names, plain)  # all of it is sent: no masking
        wait_plain = comm.allreduce_mean_into(plain, "topk.plain" + tag)
        if sparse:
            values, indices, ks = [], [], []
            for name, t in sparse:
                flat = t.view(-1)  # gradients are contiguous; written in place below
                velocity = self._with_velocity(name, flat)
                err = self.error.get(name) if self.error_feedback else None
                if err is not None and err.shape == flat.shape:
                    flat.add_(err)
                k = self.k(flat.numel())
                idx = self.indices(flat.abs(), k)
                values.append(flat[idx])
                indices.append(idx.to(torch.int32))
                ks.append(k)
                if self.error_feedback:
                    if err is None or err.shape != flat.shape:
                        err = self.error[name] = torch.empty_like(flat)
                    err.copy_(flat)
                    err[idx] = 0
                if velocity is not None:
                    velocity[idx] = 0  # momentum factor masking
            dtype = sparse[0][1].dtype
            all_values, all_indices = yield comm.allgather_async(
                [torch.cat([v.to(dtype) for v in values]), torch.cat(indices)], "topk" + tag)
            # Rank r's block holds every gradient's k entries in order.
            all_values /= world
            per_rank = sum(ks)
            at = 0
            for (_, t), k in zip(sparse, ks):
                rows = [slice(r * per_rank + at, r * per_rank + at + k) for r in range(world)]
                flat = t.view(-1)
                flat.zero_()
                flat.index_add_(0, torch.cat([all_indices[s] for s in rows]).long(),
                                torch.cat([all_values[s] for s in rows]).to(t.dtype))
                at += k
        yield wait_plain

    def state_dict(self):
        return {"kind": "topk", "iter": self.iter,
                "error": {k: v.clone() for k, v in self.error.items()},
                "velocity": {k: v.clone() for k, v in self.velocity.items()}}

    def load_state_dict(self, state):
        if state.get("kind") != "topk":
            raise ValueError("Compression.topk: cannot load the state of %r"
                             % (state.get("kind"),))
        self.iter = int(state["iter"])
        self.error = {k: v.clone() for k, v in state["error"].items()}
        # States saved before momentum correction have no velocities.
        self.velocity = {k: v.clone() for k, v in state.get("velocity", {}).items()}
