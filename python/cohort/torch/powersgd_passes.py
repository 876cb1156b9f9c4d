"""cohort's PowerSGD passes (cohort.h: PowerSgdProject, PowerSgdProjectBack,
PowerSgdApproximate) over float32 matrices in host memory, for powersgd.py.

The kernels work row by row, so a large matrix is cut into row blocks, one
per torch thread (torch.get_num_threads()), run at once on a small thread
pool (the binding releases the GIL): the projection and the approximation
write disjoint rows; the back-projection sums each block's partial Q^T.
Below PARALLEL_ELEMENTS, or on one torch thread, a pass is one call."""
from concurrent.futures import ThreadPoolExecutor

import torch

from .. import _cohort

# Matrices smaller than this run in one call: handing a block to a thread
# costs tens of microseconds, a pass over 256K floats about a hundred.
PARALLEL_ELEMENTS = 1 << 18


class KernelPasses:
    """The three passes, each over row blocks of a matrix `m_` (rows x
    cols, float32, contiguous). The pool is made on first need and resized
    when torch's thread count changes."""

    def __init__(self):
        self._pool = None
        self._workers = 0

    def _blocks(self, rows, cols):
        threads = torch.get_num_threads()
        if threads < 2 or rows < 2 or rows * cols < PARALLEL_ELEMENTS:
            return [(0, rows)]
        n = min(threads, rows)
        return [(rows * i // n, rows * (i + 1) // n) for i in range(n)]

    def _run(self, fn, blocks):
        """fn(i, first_row, end_row) for every block i; block 0 on this thread."""
        if len(blocks) == 1:
            fn(0, *blocks[0])
            return
        if self._workers != len(blocks) - 1:
            if self._pool is not None:
                self._pool.shutdown()
            self._workers = len(blocks) - 1
            self._pool = ThreadPoolExecutor(self._workers, "cohort-powersgd")
        futures = [self._pool.submit(fn, i, a, b) for i, (a, b) in enumerate(blocks) if i]
        fn(0, *blocks[0])
        for f in futures:
            f.result()

    def project(self, m_, err, q_t, p):
        """m_ += err (None: nothing to fold in); p = m_ q."""
        cols, r, size = m_.shape[1], q_t.shape[0], m_.element_size()

        def rows(_, a, b):
            _cohort.powersgd_project(m_.data_ptr() + a * cols * size,
                                     0 if err is None else err.data_ptr() + a * cols * size,
                                     b - a, cols, r, q_t.data_ptr(), p.data_ptr() + a * r * size)
        self._run(rows, self._blocks(*m_.shape))

    def project_back(self, m_, p):
        """Q^T = (m_^T p)^T, r x cols."""
        cols, r, size = m_.shape[1], p.shape[1], m_.element_size()
        blocks = self._blocks(*m_.shape)
        parts = [torch.empty(r, cols, dtype=m_.dtype) for _ in blocks]

        def rows(i, a, b):
            _cohort.powersgd_project_back(m_.data_ptr() + a * cols * size, b - a, cols, r,
                                          p.data_ptr() + a * r * size, parts[i].data_ptr())
        self._run(rows, blocks)
        for part in parts[1:]:
            parts[0] += part
        return parts[0]

    def approximate(self, m_, err, p, q_t):
        """m_ = p q^T; err = what that leaves out (None: not kept)."""
        cols, r, size = m_.shape[1], p.shape[1], m_.element_size()

        def rows(_, a, b):
            _cohort.powersgd_approximate(m_.data_ptr() + a * cols * size,
                                         0 if err is None else err.data_ptr() + a * cols * size,
                                         b - a, cols, r, p.data_ptr() + a * r * size,
                                         q_t.data_ptr())
        self._run(rows, self._blocks(*m_.shape))
