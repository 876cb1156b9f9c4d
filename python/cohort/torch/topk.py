"""Top-k gradient sparsification with error feedback, for cohort.torch's
DistributedOptimizer (Compression.topk) and DDP comm hooks
(cohort.torch.comm_hooks).

Each rank adds to each gradient what it did not send before (the error),
keeps the k = max(1, ratio x numel) entries of largest magnitude and
remembers the rest as the new error. The kept values and their indices of
every gradient travel in one allgather (values in the gradient's dtype,
indices as int32 into the concatenation of the gradients), and every rank
sums what all ranks sent and divides by their number: each rank moves 2k
numbers per gradient instead of the whole gradient.

A gradient where k x ranks >= numel (the allgather would move more than a
dense allreduce) is averaged as it is, with no error kept."""
import math

import torch


class TopK:
    """Stateful top-k reducer: reduce() averages a list of gradients over
    the ranks, sparsified; the errors survive steps and checkpoints."""

    is_reducer = True

    def __init__(self, ratio=0.01, error_feedback=True):
        if not 0 < ratio <= 1:
            raise ValueError("Compression.topk: ratio must be in (0, 1], got %r" % (ratio,))
        self.ratio = ratio
        self.error_feedback = error_feedback
        self.iter = 0
        self.error = {}  # name -> flat tensor

    def __repr__(self):
        return "Compression.topk(%g)" % self.ratio

    def k(self, numel):
        return max(1, int(math.floor(numel * self.ratio)))

    def reduce(self, names, tensors, comm, end_of_step=True):
        """Replaces each of `tensors` (gradients named `names`, the same
        list on every rank) by its sparsified average over the ranks
        (`end_of_step`: as PowerSGD.reduce)."""
        self.iter += 1 if end_of_step else 0
        world = comm.size
        sparse, plain = [], []
        for name, t in zip(names, tensors):
            if t.dtype.is_floating_point and self.k(t.numel()) * world < t.numel():
                sparse.append((name, t))
            else:
                plain.append(t)
        wait_plain = comm.allreduce_mean_into(plain, "topk.plain")
        if sparse:
            values, indices, offset = [], [], 0
            for name, t in sparse:
                acc = t.reshape(-1)
                if self.error_feedback:
                    err = self.error.get(name)
                    if err is not None and err.shape == acc.shape:
                        acc = acc + err
                idx = torch.topk(acc.abs(), self.k(acc.numel()), sorted=False).indices
                values.append(acc[idx])
                indices.append((idx + offset).to(torch.int32))
                if self.error_feedback:
                    err = acc.clone()
                    err[idx] = 0
                    self.error[name] = err
                offset += acc.numel()
            if offset >= 2 ** 31:
                raise ValueError("Compression.topk: the gradients hold %d elements, more than "
                                 "int32 indices address" % offset)
            dtype = sparse[0][1].dtype
            all_values, all_indices = comm.allgather(
                [torch.cat([v.to(dtype) for v in values]), torch.cat(indices)], "topk")
            dense = torch.zeros(offset, dtype=dtype)
            dense.index_add_(0, all_indices.long(), all_values)
            dense /= world
            at = 0
            for _, t in sparse:
                t.copy_(dense[at:at + t.numel()].view_as(t))
                at += t.numel()
        wait_plain()

    def state_dict(self):
        return {"kind": "topk", "iter": self.iter,
                "error": {k: v.clone() for k, v in self.error.items()}}

    def load_state_dict(self, state):
        if state.get("kind") != "topk":
            raise ValueError("Compression.topk: cannot load the state of %r"
                             % (state.get("kind"),))
        self.iter = int(state["iter"])
        self.error = {k: v.clone() for k, v in state["error"].items()}
