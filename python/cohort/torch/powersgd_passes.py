"""cohort's PowerSGD passes (cohort.h: PowerSgdProject, PowerSgdProjectBack,
PowerSgdApproximate) over float32 matrices in host memory, for powersgd.py.

The kernels work row by row, so a large matrix is cut into row blocks, one
per torch thread (torch.get_num_threads()), run at once on a small thread
pool (the binding releases the GIL): the projection and the approximation
write disjoint rows; the back-projection sums each block's partial Q^T.
Below PARALLEL_ELEMENTS, or on one torch thread, a pass is one call."""
import os
from concurrent.futures import ThreadPoolExecutor, wait

import torch

from .. import _cohort

# Matrices smaller than this run in one call: handing a block to a thread
# costs tens of microseconds, a pass over 256K floats about a hundred.
PARALLEL_ELEMENTS = 1 << 18


def _at(t, row):
    """The address of row `row` of the 2-D tensor `t`."""
    return t.data_ptr() + row * t.stride(0) * t.element_size()


class KernelPasses:
    """The three passes, each over row blocks of a matrix `m_` (rows x
    cols, float32, contiguous). The pool (torch's threads less this one)
    is made on first need, and again when torch's thread count changes or
    in a forked child, which inherits the pool without its threads."""

    def __init__(self):
        self._pool, self._workers, self._pid = None, 0, None

    def __getstate__(self):
        return {}  # a pool is not copied: the copy makes its own

    def __setstate__(self, state):
        self.__init__()

    def _blocks(self, rows, cols):
        threads = torch.get_num_threads()
        if threads < 2 or rows < 2 or rows * cols < PARALLEL_ELEMENTS:
            return [(0, rows)]
        n = min(threads, rows)
        return [(rows * i // n, rows * (i + 1) // n) for i in range(n)]

    def _executor(self):
        workers = torch.get_num_threads() - 1
        if self._workers != workers or self._pid != os.getpid():
            if self._pool is not None and self._pid == os.getpid():
                self._pool.shutdown()
            self._pool = ThreadPoolExecutor(workers, "cohort-powersgd")
            self._workers, self._pid = workers, os.getpid()
        return self._pool

    def _run(self, fn, blocks):
        """fn(i, first_row, end_row) for every block i; block 0 on this
        thread. Returns once every block has ended, failed or not."""
        if len(blocks) == 1:
            fn(0, *blocks[0])
            return
        pool = self._executor()
        futures = [pool.submit(fn, i, a, b) for i, (a, b) in enumerate(blocks) if i]
        try:
            fn(0, *blocks[0])
        finally:
            wait(futures)  # no block may still write once the caller moves on
        for f in futures:
            f.result()

    def project(self, m_, err, q_t, p):
        """m_ += err (None: nothing to fold in); p = m_ q."""
        def rows(_, a, b):
            _cohort.powersgd_project(_at(m_, a), 0 if err is None else _at(err, a), b - a,
                                     m_.shape[1], q_t.shape[0], q_t.data_ptr(), _at(p, a))
        self._run(rows, self._blocks(*m_.shape))

    def project_back(self, m_, p):
        """Q^T = (m_^T p)^T, r x cols."""
        blocks = self._blocks(*m_.shape)
        parts = [torch.empty(p.shape[1], m_.shape[1], dtype=m_.dtype) for _ in blocks]

        def rows(i, a, b):
            _cohort.powersgd_project_back(_at(m_, a), b - a, m_.shape[1], p.shape[1], _at(p, a),
                                          parts[i].data_ptr())
        self._run(rows, blocks)
        for part in parts[1:]:
            parts[0] += part
        return parts[0]

    def approximate(self, m_, err, p, q_t):
        """m_ = p q^T; err = what that leaves out (None: not kept)."""
        def rows(_, a, b):
            _cohort.powersgd_approximate(_at(m_, a), 0 if err is None else _at(err, a), b - a,
                                         m_.shape[1], p.shape[1], _at(p, a), q_t.data_ptr())
        self._run(rows, self._blocks(*m_.shape))
