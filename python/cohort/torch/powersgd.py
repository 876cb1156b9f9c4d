"""PowerSGD gradient compression (Vogels et al., 2019), as torch's DDP
powerSGD_hook computes it, for cohort.torch's DistributedOptimizer
(Compression.powersgd) and DDP comm hooks (cohort.torch.comm_hooks).

Each gradient of a parameter with 2 or more dimensions, viewed as a matrix M
(n rows: the first dimension; m columns: the rest), is sent as two thin
matrices of rank r instead of n x m numbers:

    M += error                      (error feedback: what earlier steps lost)
    P = M Q                         (Q: m x r, kept from the previous step
                                     and orthogonalized: the warm start)
    P = orthogonalize(mean over ranks of P)
    Q = mean over ranks of M^T P
    approximation = P Q^T           (the same on every rank)
    error = M - approximation       (this rank's loss, added back next step)

1-D gradients and matrices where (n + m) r x min_compression_rate >= n m
(compression would not pay) are averaged as they are, in one buffer. Before
`start_iter` reductions every gradient is averaged as it is (no error kept),
as in torch's hook. All the P matrices travel in one allreduce, all the Q
matrices in another, the uncompressed gradients in a third started first.

On float32 gradients in host memory the arithmetic is cohort's (cohort.h,
PowerSgdProject and the two after it): three passes that each stream the
gradient once, no temporary; torch's operators take six to eight passes for
it and stay for other dtypes and GPU tensors. The two agree to float32
rounding, and send the same P and Q layouts."""
import zlib

import torch

from .host_reduction import check_scope
from .powersgd_passes import KernelPasses
from .reducer_comm import drive


def orthogonalize(matrix, epsilon=1e-8):
    """Gram-Schmidt on the columns of `matrix` (n x r), in place. `epsilon`
    keeps an all-zero column (a gradient that vanished) from dividing by 0."""
    for i in range(matrix.shape[1]):
        col = matrix[:, i:i + 1]
        col /= torch.norm(col) + epsilon
        if i + 1 < matrix.shape[1]:
            rest = matrix[:, i + 1:]
            rest -= (col * rest).sum(dim=0, keepdim=True) * col
    return matrix


def _kernels_fit(*tensors):
    """Whether cohort's PowerSGD passes (cohort.h, PowerSgdProject) can run
    on these matrices: float32, in host memory, rows contiguous. Otherwise
    torch's operators do the same arithmetic (other dtypes, GPU tensors).
    A None (no error feedback) fits."""
    return all(t is None or (t.dtype == torch.float32 and t.device.type == "cpu"
                             and t.is_contiguous()) for t in tensors)


def should_compress(n, m, rank, min_compression_rate):
    """torch's rule: compress an n x m matrix to rank r when the low-rank
    pair is at least `min_compression_rate` times smaller."""
    return (n + m) * rank * min_compression_rate < n * m


class _MatrixStep:
    """One compressed gradient within a reduction: its error memory (None
    without error feedback), P and Q as the phases leave them, and whether
    cohort's kernels run it (else torch's operators)."""

    def __init__(self, error, kernels):
        self.error, self.kernels = error, kernels
        self.p = self.q = None


class PowerSGD:
    """Stateful PowerSGD reducer: reduce() averages a list of gradients over
    the ranks, compressed; its state (warm-start Q matrices, errors, the
    reduction count) survives steps and checkpoints (state_dict)."""

    is_reducer = True
    # host_reduction.sharded_per_host: a matrix is compressed whole, so the
    # shares of a group are whole tensors.
    shares_by_range = False

    def __init__(self, rank=1, start_iter=10, min_compression_rate=2.0, error_feedback=True,
                 warm_start=True, seed=0, scope="auto", overlap=True):
        if rank < 1:
            raise ValueError("Compression.powersgd: rank must be at least 1, got %r" % (rank,))
        if start_iter < 0:
            raise ValueError("Compression.powersgd: start_iter must be >= 0, got %r"
                             % (start_iter,))
        if not min_compression_rate > 0:
            raise ValueError("Compression.powersgd: min_compression_rate must be > 0, got %r"
                             % (min_compression_rate,))
        check_scope(scope, "Compression.powersgd")
        self.scope = scope  # host_reduction.py: "auto", "host", "leader" or "rank"
        self.overlap = overlap  # DistributedOptimizer: start groups during backward
        self.rank = rank
        self.start_iter = start_iter
        self.min_compression_rate = min_compression_rate
        self.error_feedback = error_feedback
        self.warm_start = warm_start
        self.seed = seed
        self.iter = 0  # steps reduced
        self.q = {}  # name -> m x r, the warm start
        self.error = {}  # name -> n x m, this rank's compression error
        self._passes = KernelPasses()  # float32 host matrices (_kernels_fit)

    def __repr__(self):
        return ("Compression.powersgd(rank=%d, start_iter=%d, min_compression_rate=%g)"
                % (self.rank, self.start_iter, self.min_compression_rate))

    def plan(self, tensor):
        """The rank a tensor is compressed to, or 0 if it is sent as it is."""
        if tensor.dim() < 2 or not tensor.dtype.is_floating_point:
            return 0
        n, m = tensor.shape[0], tensor.numel() // tensor.shape[0]
        r = min(n, m, self.rank)
        return r if should_compress(n, m, r, self.min_compression_rate) else 0

    def _error_of(self, name, m_):
        """(error memory of gradient `name` for its matrix `m_`, whether it
        holds an earlier step's error to fold in). A new memory is zeros;
        without error feedback there is none: (None, False)."""
        if not self.error_feedback:
            return None, False
        err = self.error.get(name)
        if err is not None and err.shape == m_.shape:
            if err.dtype != m_.dtype or err.device != m_.device:  # loaded from another run
                err = self.error[name] = err.to(device=m_.device, dtype=m_.dtype)
            return err, True
        err = self.error[name] = torch.zeros_like(m_)
        return err, False

    def _project(self, name, m_, r):
        """Phase 1 for gradient `name` as matrix `m_` at rank r: error folded
        in, P = M Q with the warm start Q orthogonalized."""
        err, folded = self._error_of(name, m_)
        q = self.q.get(name) if self.warm_start else None
        if q is None or q.shape != (m_.shape[1], r):
            q = self._initial_q(name, m_.shape[1], r, m_.dtype)
        # A warm start loaded from a run of another dtype or device joins
        # this one's (the kernels read raw float32 memory).
        q = q.to(device=m_.device, dtype=m_.dtype)
        orthogonalize(q)
        step = _MatrixStep(err, _kernels_fit(m_, err))
        if step.kernels:
            step.p = torch.empty(m_.shape[0], r, dtype=m_.dtype)
            q_t = q.t().contiguous()  # held: the kernel gets only its address
            self._passes.project(m_, err if folded else None, q_t, step.p)
        else:
            if folded:
                m_.add_(err)
            step.p = m_ @ q
        return step

    def _project_back(self, step, m_):
        """Phase 2, once P is averaged and orthogonalized: Q = M^T P."""
        p = step.p
        step.kernels = step.kernels and _kernels_fit(p)
        if not step.kernels:
            return m_.t() @ p
        return self._passes.project_back(m_, p).t()

    def _approximate(self, step, m_):
        """Phase 3, once Q is averaged: the gradient becomes P Q^T, the error
        what that leaves out."""
        p, q, err = step.p, step.q, step.error
        if step.kernels:
            q_t = q.t().contiguous()  # held: the kernel gets only its address
            if _kernels_fit(q_t):  # a group of mixed dtypes averages Q in the widest
                self._passes.approximate(m_, err, p, q_t)
                return
        approx = p @ q.t()
        if err is not None:
            torch.sub(m_, approx, out=err)
        m_.copy_(approx)

    def _initial_q(self, name, m, r, dtype):
        # The same on every rank (seeded by the name), different per tensor.
        gen = torch.Generator().manual_seed(self.seed * 1000003 + zlib.crc32(name.encode()))
        return torch.randn(m, r, generator=gen, dtype=dtype)

    def reduce(self, names, tensors, comm, end_of_step=True):
        """Replaces each of `tensors` (gradients named `names`, the same
        list on every rank) by its compressed average over the ranks.
        `end_of_step`: this call reduces a step's last gradients (a DDP hook
        reduces a step in several buckets), so the step count advances."""
        try:
            drive(self.stages(names, tensors, comm))
        finally:
            self.iter += 1 if end_of_step else 0

    def end_step(self):
        """A step's gradients were all reduced (stages() does not count)."""
        self.iter += 1

    def stages(self, names, tensors, comm, tag=""):
        """reduce() as a generator of the collectives it waits for
        (reducer_comm.Stages): the P phase starts as soon as it is advanced,
        the Q phase once P's average is in. `tag` keeps the names of
        several groups reduced at once apart."""
        if self.iter < self.start_iter:
            yield comm.allreduce_mean_into(tensors, "powersgd.dense" + tag)
            return
        compressed, plain = [], []
        for name, t in zip(names, tensors):
            r = self.plan(t)
            (compressed if r else plain).append((name, t, r))
        wait_plain = comm.allreduce_mean_into([t for _, t, _ in plain], "powersgd.plain" + tag)
        matrices = [t.view(t.shape[0], -1) for _, t, _ in compressed]
        steps = [self._project(name, m_, r) for (name, _, r), m_ in zip(compressed, matrices)]
        if compressed:
            p_flat = yield comm.allreduce_mean_async(torch.cat([s.p.reshape(-1) for s in steps]),
                                                     "powersgd.p" + tag)
            at = 0
            for s, m_ in zip(steps, matrices):
                s.p = orthogonalize(p_flat[at:at + s.p.numel()].view_as(s.p))
                at += s.p.numel()
                s.q = self._project_back(s, m_)
            q_flat = yield comm.allreduce_mean_async(torch.cat([s.q.reshape(-1) for s in steps]),
                                                     "powersgd.q" + tag)
            at = 0
            for (name, _, _), s, m_ in zip(compressed, steps, matrices):
                s.q = q_flat[at:at + s.q.numel()].view_as(s.q).clone()
                at += s.q.numel()
                self._approximate(s, m_)
                self.q[name] = s.q
        yield wait_plain

    def state_dict(self):
        return {"kind": "powersgd", "iter": self.iter,
                "q": {k: v.clone() for k, v in self.q.items()},
                "error": {k: v.clone() for k, v in self.error.items()}}

    def load_state_dict(self, state):
        if state.get("kind") != "powersgd":
            raise ValueError("Compression.powersgd: cannot load the state of %r"
                             % (state.get("kind"),))
        self.iter = int(state["iter"])
        self.q = {k: v.clone() for k, v in state["q"].items()}
        self.error = {k: v.clone() for k, v in state["error"].items()}
