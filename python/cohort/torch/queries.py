"""The topology queries as tensors, under the names Horovod's TensorFlow API
gives them (size_op, rank_op, ...): 0-d int32 tensors, for code that mixes
them into tensor arithmetic."""
import torch

from .. import _cohort
from ..process_sets import set_id


def _int32(value, what):
    if value < 0:
        raise ValueError("%s: cohort has not been initialized; call init() first" % what)
    return torch.tensor(value, dtype=torch.int32)


def size_op(process_set_id=0, name=None):
    """Number of ranks in the process set (default: the job)."""
    del name  # graph-op name in TensorFlow; nothing to name here
    if not _cohort.is_initialized():
        return _int32(-1, "size_op")
    return _int32(len(_cohort.process_set_ranks(set_id(process_set_id))), "size_op")


def rank_op(name=None):
    del name
    return _int32(_cohort.rank(), "rank_op")


def local_rank_op(name=None):
    del name
    return _int32(_cohort.local_rank(), "local_rank_op")


def local_size_op(name=None):
    del name
    return _int32(_cohort.local_size(), "local_size_op")


def process_set_included_op(process_set_id=0, name=None):
    """1 when this rank is a member of the process set, else 0."""
    del name
    if not _cohort.is_initialized():
        return _int32(-1, "process_set_included_op")
    return _int32(int(_cohort.process_set_rank(set_id(process_set_id)) >= 0),
                  "process_set_included_op")
