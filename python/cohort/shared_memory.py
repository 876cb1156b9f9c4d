"""Memory the ranks of one host can map (cohort::AllocateSharedMemory).

One-host collectives on arrays that live in it copy and reduce with plain
loads and stores: no system call per copy, and an allreduce reads each
rank's input where it lies (docs/performance.md "Zero-copy shared memory").
Arrays from elsewhere give the same results through the single- or two-copy
paths. The memory is freed when the last array (or tensor) viewing it goes;
it stays valid after cohort.shutdown().
"""
import ctypes

import numpy as np

from . import _cohort


class SharedMemory:
    """One allocation of `nbytes` (zero-filled, page aligned). Requires
    cohort.init(). View it with buffer(); it is freed when this object and
    every buffer, array and tensor made from it are gone."""

    def __init__(self, nbytes):
        nbytes = int(nbytes)
        if nbytes < 0:
            raise ValueError("cohort.SharedMemory: nbytes must be >= 0, got %d" % nbytes)
        self.nbytes = nbytes
        self.address = _cohort.alloc_shared(max(nbytes, 1))

    def buffer(self):
        """A ctypes byte array over the memory that keeps it alive (what
        numpy.frombuffer and torch.frombuffer take)."""
        view = (ctypes.c_uint8 * self.nbytes).from_address(self.address)
        view.owner = self  # the memory lives as long as any view of it
        return view

    def __del__(self):
        address, self.address = getattr(self, "address", None), None
        if address:
            try:
                _cohort.free_shared(address)
            except Exception:  # noqa: BLE001 -- at interpreter exit the module may be gone
                pass


def shared_array(shape, dtype=np.float32):
    """A zero-filled numpy array in shared memory (see SharedMemory)."""
    dtype = np.dtype(dtype)
    shape = (shape,) if np.isscalar(shape) else tuple(shape)
    count = int(np.prod(shape, dtype=np.int64))
    memory = SharedMemory(count * dtype.itemsize)
    return np.frombuffer(memory.buffer(), dtype=dtype, count=count).reshape(shape)
