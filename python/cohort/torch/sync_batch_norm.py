"""SyncBatchNorm, as in horovod.torch: batch normalization whose batch
statistics (mean and variance) are computed over the samples of every rank,
so N workers with batch B normalize like one worker with batch N*B."""
import torch
import torch.nn.functional as F
from torch.nn.modules.batchnorm import _BatchNorm

from .. import _cohort
from ..process_sets import global_process_set, set_id
from .mpi_ops import Sum, allreduce_async, synchronize


def _sum_over_ranks(tensor, process_set):
    return synchronize(allreduce_async(tensor, op=Sum, process_set=process_set))


class _SyncBatchNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, eps, momentum, process_set):
        dims = [d for d in range(x.dim()) if d != 1]
        xf = x.float()
        local = torch.cat([xf.sum(dims), (xf * xf).sum(dims),
                           torch.tensor([x.numel() // x.shape[1]], dtype=torch.float32)])
        total = _sum_over_ranks(local, process_set)
        c = x.shape[1]
        count = total[2 * c]
        mean = total[:c] / count
        var = (total[c:2 * c] / count - mean * mean).clamp_min(0)
        invstd = torch.rsqrt(var + eps)
        if running_mean is not None:
            with torch.no_grad():
                running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype), alpha=momentum)
                unbiased = var * count / max(float(count) - 1, 1.0)
                running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype), alpha=momentum)
        shape = [1, c] + [1] * (x.dim() - 2)
        xhat = (xf - mean.view(shape)) * invstd.view(shape)
        out = xhat
        if weight is not None:
            out = out * weight.float().view(shape) + bias.float().view(shape)
        ctx.save_for_backward(xhat, weight, invstd, count)
        ctx.process_set = process_set
        return out.to(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        xhat, weight, invstd, count = ctx.saved_tensors
        c = xhat.shape[1]
        dims = [d for d in range(xhat.dim()) if d != 1]
        shape = [1, c] + [1] * (xhat.dim() - 2)
        g = grad.float()
        sum_dy = g.sum(dims)
        sum_dy_xhat = (g * xhat).sum(dims)
        total = _sum_over_ranks(torch.cat([sum_dy, sum_dy_xhat]), ctx.process_set)
        mean_dy, mean_dy_xhat = total[:c] / count, total[c:] / count
        scale = invstd if weight is None else invstd * weight.float()
        grad_x = (g - mean_dy.view(shape) - xhat * mean_dy_xhat.view(shape)) * scale.view(shape)
        # Weight and bias gradients stay local: DistributedOptimizer averages them.
        grad_w = sum_dy_xhat.to(weight.dtype) if weight is not None else None
        grad_b = sum_dy.to(weight.dtype) if weight is not None else None
        return grad_x.to(grad.dtype), grad_w, grad_b, None, None, None, None, None


class SyncBatchNorm(_BatchNorm):
    """Batch normalization over the samples of every rank of process_set.
    Drop-in for torch.nn.BatchNorm1d/2d/3d (the input's dimension decides)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_set=global_process_set):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)
        self.process_set = process_set

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError("expected at least 2D input (got %dD input)" % input.dim())

    def forward(self, input):
        self._check_input_dim(input)
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
        momentum = self.momentum if self.momentum is not None else \
            1.0 / float(self.num_batches_tracked)
        if not self.training or _cohort.size() <= 1 or \
                _cohort.process_set_rank(set_id(self.process_set)) < 0:
            use_batch = self.training or not self.track_running_stats
            return F.batch_norm(input, self.running_mean, self.running_var, self.weight,
                                self.bias, use_batch, momentum, self.eps)
        return _SyncBatchNormFunction.apply(input, self.weight, self.bias, self.running_mean,
                                            self.running_var, self.eps, momentum,
                                            self.process_set)
