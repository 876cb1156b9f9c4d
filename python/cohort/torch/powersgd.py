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
matrices in another, the uncompressed gradients in a third started first."""
import zlib

import torch

from .host_reduction import check_scope
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


def should_compress(n, m, rank, min_compression_rate):
    """torch's rule: compress an n x m matrix to rank r when the low-rank
    pair is at least `min_compression_rate` times smaller."""
    return (n + m) * rank * min_compression_rate < n * m


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
        matrices, ps, qs = [], [], []
        for name, t, r in compressed:
            m_ = t.view(t.shape[0], -1)
            if self.error_feedback:
                err = self.error.get(name)
                if err is not None and err.shape == m_.shape:
                    m_.add_(err)
                else:
                    self.error[name] = torch.zeros_like(m_)
            q = self.q.get(name) if self.warm_start else None
            if q is None or q.shape != (m_.shape[1], r):
                q = self._initial_q(name, m_.shape[1], r, m_.dtype)
            orthogonalize(q)
            matrices.append(m_)
            qs.append(q)
            ps.append(m_ @ q)
        if compressed:
            p_flat = yield comm.allreduce_mean_async(torch.cat([p.reshape(-1) for p in ps]),
                                                     "powersgd.p" + tag)
            at = 0
            for i, m_ in enumerate(matrices):
                p = p_flat[at:at + ps[i].numel()].view_as(ps[i])
                at += p.numel()
                ps[i] = orthogonalize(p)
                qs[i] = m_.t() @ ps[i]
            q_flat = yield comm.allreduce_mean_async(torch.cat([q.reshape(-1) for q in qs]),
                                                     "powersgd.q" + tag)
            at = 0
            for (name, _, _), m_, p, q in zip(compressed, matrices, ps, qs):
                q = q_flat[at:at + q.numel()].view_as(q).clone()
                at += q.numel()
                approx = p @ q.t()
                if self.error_feedback:
                    torch.sub(m_, approx, out=self.error[name])
                m_.copy_(approx)
                self.q[name] = q
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
