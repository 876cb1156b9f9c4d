"""Tensor-parallel layers (Megatron-LM's): each rank holds a slice of the
weight and the layers exchange activations through the mappings.

- ColumnParallelLinear: the output features split over the ranks (weight
  rows); input copied in (f), output left split unless gather_output;
- RowParallelLinear: the input features split (weight columns); the partial
  outputs summed (g), bias added once after the sum;
- VocabParallelEmbedding: the vocabulary split (weight rows); each rank
  looks up the tokens it holds, zeros elsewhere, summed (g).

A column layer followed by a row layer (an MLP, attention's projections)
needs one allreduce forward and one backward. Initialization draws the full
weight as the unsharded torch layer does (nn.Linear, nn.Embedding) from the
current RNG and keeps this rank's slice, so for one seed the slices together
are exactly the unsharded layer's weights, whatever the tensor-parallel size.

Each sharded parameter carries `tensor_parallel_dim` (the dimension it is
split along), which checkpoints use to merge the shards; a replicated
parameter whose gradient each rank sees only part of (sequence parallelism:
a bias after the reduce-scatter, LayerNorm) carries `sequence_parallel`,
and its gradient is summed over the group before the optimizer sees it
(Pipeline does it; see sync_sequence_parallel_grads)."""
import math

import torch
import torch.nn.functional as F
from torch import nn

from ... import _ops
from . import mappings


def _check_divisible(what, n, group):
    size = mappings.size_of(group)
    if n % size:
        raise ValueError("%s: %d is not divisible by the %d tensor-parallel ranks" % (
            what, n, size))
    return n // size


def _shard(full, dim, group):
    """This rank's slice of `full` along `dim`, as a Parameter."""
    n = full.shape[dim] // mappings.size_of(group)
    start = mappings.rank_of(group) * n
    p = nn.Parameter(full.narrow(dim, start, n).clone())
    p.tensor_parallel_dim = dim
    return p


def _linear_init(out_features, in_features, bias):
    """nn.Linear's parameters drawn exactly as nn.Linear draws them."""
    weight = torch.empty(out_features, in_features)
    nn.init.kaiming_uniform_(weight, a=math.sqrt(5))
    b = None
    if bias:
        b = torch.empty(out_features)
        bound = 1 / math.sqrt(in_features) if in_features > 0 else 0
        nn.init.uniform_(b, -bound, bound)
    return weight, b


def mark_sequence_parallel(module):
    """Marks every parameter of `module` (replicated over the tensor-parallel
    ranks, run on their slice of the sequence: LayerNorm, position
    embeddings) as needing its gradient summed over the group."""
    for p in module.parameters():
        p.sequence_parallel = True
    return module


def sync_sequence_parallel_grads(params, group):
    """Sums the gradients of the sequence-parallel parameters among `params`
    over the tensor-parallel group (after backward, before the optimizer or
    data-parallel reduction sees them). Pipeline calls it itself."""
    group = mappings.group_of(group)
    if group is None:
        return
    for p in params:
        if getattr(p, "sequence_parallel", False) and p.grad is not None:
            grad = p.grad if p.grad.is_contiguous() else p.grad.contiguous()
            mappings.allreduce_(grad, group)
            if grad is not p.grad:
                p.grad.copy_(grad)


class ColumnParallelLinear(nn.Module):
    """y = x A^T + b with A's rows (output features) split over the group.
    Output: this rank's out_features/tp features, or all of them with
    gather_output=True. sequence_parallel: x arrives split along dim 0 and
    is allgathered (instead of copied in)."""

    def __init__(self, in_features, out_features, group=None, bias=True, gather_output=False,
                 sequence_parallel=False):
        super().__init__()
        self.group = mappings.group_of(group)
        self.in_features = in_features
        self.out_features = out_features
        self.local_out_features = _check_divisible("ColumnParallelLinear: out_features",
                                                   out_features, self.group)
        self.gather_output = gather_output
        self.sequence_parallel = sequence_parallel and self.group is not None
        weight, b = _linear_init(out_features, in_features, bias)
        self.weight = _shard(weight, 0, self.group)
        self.bias = _shard(b, 0, self.group) if bias else None

    def forward(self, x):
        if self.sequence_parallel:
            x = mappings.gather_from_sequence(x, self.group)
        else:
            x = mappings.copy_to(x, self.group)
        y = F.linear(x, self.weight, self.bias)
        return mappings.gather_from(y, self.group) if self.gather_output else y

    def extra_repr(self):
        return "in_features=%d, out_features=%d (%d here)" % (
            self.in_features, self.out_features, self.local_out_features)


class RowParallelLinear(nn.Module):
    """y = x A^T + b with A's columns (input features) split over the group.
    Input: this rank's in_features/tp features (input_is_parallel, the
    output of a ColumnParallelLinear), or all of them (then sliced here).
    sequence_parallel: the partial outputs are reduce-scattered along dim 0
    (instead of allreduced), leaving each rank its slice of the sequence."""

    def __init__(self, in_features, out_features, group=None, bias=True, input_is_parallel=True,
                 sequence_parallel=False):
        super().__init__()
        self.group = mappings.group_of(group)
        self.in_features = in_features
        self.out_features = out_features
        self.local_in_features = _check_divisible("RowParallelLinear: in_features", in_features,
                                                  self.group)
        self.input_is_parallel = input_is_parallel
        self.sequence_parallel = sequence_parallel and self.group is not None
        weight, b = _linear_init(out_features, in_features, bias)
        self.weight = _shard(weight, 1, self.group)
        self.bias = nn.Parameter(b) if bias else None
        if self.bias is not None and self.sequence_parallel:
            self.bias.sequence_parallel = True

    def forward(self, x):
        if not self.input_is_parallel:
            x = mappings.scatter_to(x, self.group)
        y = F.linear(x, self.weight)
        if self.sequence_parallel:
            y = mappings.reduce_scatter_to_sequence(y, self.group)
        else:
            y = mappings.reduce_from(y, self.group)
        return y if self.bias is None else y + self.bias

    def extra_repr(self):
        return "in_features=%d (%d here), out_features=%d" % (
            self.in_features, self.local_in_features, self.out_features)


class VocabParallelEmbedding(nn.Module):
    """nn.Embedding with the vocabulary (weight rows) split over the group.
    sequence_parallel: the token ids are [sequence, ...] and each rank keeps
    its slice of the sequence of the summed embeddings (a reduce-scatter)."""

    def __init__(self, num_embeddings, embedding_dim, group=None, sequence_parallel=False):
        super().__init__()
        self.group = mappings.group_of(group)
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        per_rank = _check_divisible("VocabParallelEmbedding: num_embeddings", num_embeddings,
                                    self.group)
        self.vocab_start = mappings.rank_of(self.group) * per_rank
        self.vocab_end = self.vocab_start + per_rank
        self.sequence_parallel = sequence_parallel and self.group is not None
        weight = torch.empty(num_embeddings, embedding_dim)
        nn.init.normal_(weight)
        self.weight = _shard(weight, 0, self.group)

    def forward(self, ids):
        if self.group is None:
            return F.embedding(ids, self.weight)
        outside = (ids < self.vocab_start) | (ids >= self.vocab_end)
        local = (ids - self.vocab_start).masked_fill(outside, 0)
        out = F.embedding(local, self.weight).masked_fill(outside.unsqueeze(-1), 0.0)
        if self.sequence_parallel:
            return mappings.reduce_scatter_to_sequence(out, self.group)
        return mappings.reduce_from(out, self.group)

    def extra_repr(self):
        return "%d, %d (rows %d..%d here)" % (self.num_embeddings, self.embedding_dim,
                                              self.vocab_start, self.vocab_end - 1)


class _VocabParallelCrossEntropy(torch.autograd.Function):
    """Per-token cross-entropy of logits split along the vocabulary: two
    allreduces (the max, then the sum of exponentials with the target's
    logit), never the full logits on one rank."""

    @staticmethod
    def forward(ctx, logits, target, group, vocab_start):
        ctx.dtype = logits.dtype
        if logits.dtype in (torch.float16, torch.bfloat16):
            logits = logits.float()  # exponentials and sums in float32
        local_max = logits.max(dim=-1).values
        top = local_max if group is None else mappings.allreduce(local_max, group, op=_ops.Max)
        shifted = logits - top.unsqueeze(-1)
        local_vocab = logits.shape[-1]
        outside = (target < vocab_start) | (target >= vocab_start + local_vocab)
        local_target = (target - vocab_start).masked_fill(outside, 0)
        picked = shifted.gather(-1, local_target.unsqueeze(-1)).squeeze(-1)
        picked = picked.masked_fill(outside, 0.0)
        exp = shifted.exp()
        sums = torch.stack([exp.sum(dim=-1), picked])
        if group is not None:
            sums = mappings.allreduce(sums, group)
        sum_exp, target_logit = sums[0], sums[1]
        loss = torch.log(sum_exp) - target_logit
        softmax = exp.div_(sum_exp.unsqueeze(-1))
        ctx.save_for_backward(softmax, local_target, outside)
        return loss

    @staticmethod
    def backward(ctx, grad_loss):
        softmax, local_target, outside = ctx.saved_tensors
        grad = softmax.clone()
        hit = (~outside).to(grad.dtype)
        grad.scatter_add_(-1, local_target.unsqueeze(-1), -hit.unsqueeze(-1))
        grad.mul_(grad_loss.unsqueeze(-1))
        return grad.to(ctx.dtype), None, None, None


def vocab_parallel_cross_entropy(logits, target, group=None):
    """Per-token cross-entropy (no reduction) of `logits` [..., vocab/tp],
    this rank's slice of the vocabulary, against `target` [...] (ids in the
    full vocabulary). Equal to F.cross_entropy(full logits, target,
    reduction="none") up to rounding."""
    group = mappings.group_of(group)
    vocab_start = mappings.rank_of(group) * logits.shape[-1]
    return _VocabParallelCrossEntropy.apply(logits, target, group, vocab_start)
