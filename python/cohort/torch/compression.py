"""Gradient compression for allreduce, as in horovod.torch: a compressor
turns a tensor into the tensor sent (and a context), and back.

Compression.powersgd(...) and Compression.topk(...) are of another kind: a
stateful reducer (powersgd.py, topk.py) that DistributedOptimizer hands all
of a step's gradients at once (its errors and warm-start matrices persist
across steps and are saved in the optimizer's state_dict); each call makes
a new one, to be used by one optimizer."""
import torch

from .powersgd import PowerSGD
from .topk import TopK


class Compressor:
    @staticmethod
    def compress(tensor):
        raise NotImplementedError

    @staticmethod
    def decompress(tensor, ctx):
        raise NotImplementedError


class NoneCompressor(Compressor):
    """Sends tensors as they are."""

    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


class FP16Compressor(Compressor):
    """Sends floating-point tensors as float16 (halving the bytes moved) and
    casts the result back to the original dtype."""

    @staticmethod
    def compress(tensor):
        if tensor.dtype.is_floating_point and tensor.dtype != torch.float16:
            return tensor.type(torch.float16), tensor.dtype
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor if ctx is None else tensor.type(ctx)


class Compression:
    none = NoneCompressor
    fp16 = FP16Compressor

    @staticmethod
    def powersgd(rank=1, start_iter=10, min_compression_rate=2.0, error_feedback=True,
                 warm_start=True, seed=0, scope="auto", overlap=True):
        """Low-rank (PowerSGD) compression of matrix gradients to `rank`,
        after `start_iter` uncompressed steps; see powersgd.py. `scope`:
        "auto" compresses once per host where hosts have several ranks
        (host_reduction.py: sharded over a host's ranks where every host
        has as many, else by each host's leader) and not at all on one
        host, "host" the same, "leader" once per host by the leaders
        always, "rank" on every rank. `overlap`: DistributedOptimizer starts a group
        of gradients as soon as backward produced them all."""
        return PowerSGD(rank=rank, start_iter=start_iter,
                        min_compression_rate=min_compression_rate,
                        error_feedback=error_feedback, warm_start=warm_start, seed=seed,
                        scope=scope, overlap=overlap)

    @staticmethod
    def topk(ratio=0.01, error_feedback=True, scope="auto", overlap=True, momentum=0.0,
             warmup_steps=0):
        """Top-k sparsification keeping `ratio` of each gradient's entries,
        with error feedback; `momentum`: the optimizer's momentum applied
        before sparsifying (momentum correction; the optimizer then has
        none), `warmup_steps`: steps over which the share kept falls from
        all to `ratio`; see topk.py (`scope`, `overlap`: as powersgd's)."""
        return TopK(ratio=ratio, error_feedback=error_feedback, scope=scope, overlap=overlap,
                    momentum=momentum, warmup_steps=warmup_steps)
