"""Tensors and gradients in memory the ranks of one host can map
(cohort.shared_memory): the engine's one-host allreduce of such gradients
reads and writes them in place, with no copy beyond the reduction's own."""
import warnings

import torch

from ..shared_memory import SharedMemory


def shared_zeros(*size, dtype=torch.float32):
    """A zero-filled CPU tensor in shared memory; the memory is freed when
    the tensor and its views are gone."""
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = tuple(size[0])
    numel = 1
    for n in size:
        numel *= int(n)
    if numel == 0:
        return torch.zeros(size, dtype=dtype)
    element = torch.empty((), dtype=dtype).element_size()
    memory = SharedMemory(numel * element)
    return torch.frombuffer(memory.buffer(), dtype=dtype, count=numel).view(size)


def share_gradients(module):
    """Puts the gradients of `module`'s CPU parameters (or of an iterable of
    parameters) in shared memory: one buffer per dtype, each parameter's
    .grad a view into it (existing gradients are copied in). Autograd then
    accumulates into those views and DistributedOptimizer reduces them in
    place. Gradients stay there while they are zeroed in place (as
    DistributedOptimizer.zero_grad() does by default); zero_grad(set_to_none=
    True) or assigning .grad moves a gradient out (it is still reduced
    exactly, through a copying path), which a warning names once. Returns the
    number of parameters whose gradients were placed."""
    params = module.parameters() if hasattr(module, "parameters") else module
    params = [p for p in params if p.requires_grad and p.device.type == "cpu"
              and p.layout == torch.strided]
    placed = 0
    warned = []  # one warning per call, however many gradients move
    for dtype in sorted({p.dtype for p in params}, key=str):
        members = [p for p in params if p.dtype == dtype]
        flat = shared_zeros(sum(p.numel() for p in members), dtype=dtype)
        at = 0
        for p in members:
            view = flat[at:at + p.numel()].view_as(p)
            at += p.numel()
            if p.grad is not None:
                view.copy_(p.grad)
            p.grad = view
            _warn_when_moved(p, view, warned)
            placed += 1
    return placed


def _warn_when_moved(p, view, warned):
    accumulator = p.expand_as(p).grad_fn.next_functions[0][0]

    def check(*_):
        if not warned and p.grad is not None and p.grad.data_ptr() != view.data_ptr():
            warned.append(True)
            warnings.warn("cohort.torch.share_gradients: a gradient is no longer in shared memory "
                          "(zero_grad(set_to_none=True) or .grad assigned); it is still reduced "
                          "exactly, with copies. Zero gradients in place to keep them shared.")
    accumulator.register_hook(check)
    # Keep the accumulator alive, or its hook goes with it.
    p._cohort_shared_grad_accumulator = accumulator
