"""References for the compression tests (test_compression.py,
test_compression_hosts.py): what every rank must get, computed in one
process from every rank's gradients with plain torch."""
import torch

# e.weight is large enough for top-k's sampled candidates (topk.py, TopK.indices).
SHAPES = {"a.weight": (16, 12), "b.weight": (8, 3, 3, 2), "b.bias": (20,), "c.weight": (3, 2),
          "e.weight": (600, 200)}


def gradients(rank, step, dtype=torch.float64):
    gen = torch.Generator().manual_seed(1000 * step + rank)
    return {name: torch.randn(*shape, generator=gen, dtype=dtype)
            for name, shape in sorted(SHAPES.items())}


def run_reducer(reducer, comm, steps, rank, dtype=torch.float64):
    out = []
    for step in range(steps):
        grads = gradients(rank, step, dtype)
        names = sorted(grads)
        reducer.reduce(names, [grads[n] for n in names], comm)
        out.append(grads)
    return out


def qr_orthogonal(m):
    return torch.linalg.qr(m).Q  # another method than the reducer's Gram-Schmidt


def every_rank(world, dtype=torch.float64):
    """The inputs of a reference: step -> every rank's gradients (drawn in
    `dtype`, computed with in float64)."""
    return lambda step: [{name: g.double() for name, g in gradients(r, step, dtype).items()}
                         for r in range(world)]


def reference_powersgd(world, steps, rank, start_iter, min_rate, inputs=None, prefix="",
                       dtype=torch.float64):
    """What every rank must get, computed in float64 from all ranks'
    gradients (`inputs`: step -> the `world` compressing ranks' gradients,
    by default drawn in `dtype`; `prefix`: of the names the reducer sees,
    which seed its first Q; the reducer draws that Q in the gradients'
    `dtype`)."""
    from cohort.torch.powersgd import PowerSGD, should_compress
    init = PowerSGD(rank=rank)
    inputs = inputs or every_rank(world, dtype)
    errors = [{} for _ in range(world)]
    q = {}
    out = []
    for step in range(steps):
        per_rank = inputs(step)
        result = {}
        for name in sorted(SHAPES):
            mats = [g[name] for g in per_rank]
            shape = mats[0].shape
            n, m = shape[0], mats[0].numel() // shape[0]
            r = min(n, m, rank)
            if step < start_iter or len(shape) < 2 or not should_compress(n, m, r, min_rate):
                result[name] = sum(mats) / world
                continue
            ms = [x.reshape(n, m) + errors[i].get(name, 0) for i, x in enumerate(mats)]
            qn = q.get(name)
            if qn is None:
                qn = init._initial_q(prefix + name, m, r, dtype).double()
            qn = qr_orthogonal(qn)
            p = qr_orthogonal(sum(x @ qn for x in ms) / world)
            qn = sum(x.t() @ p for x in ms) / world
            approx = p @ qn.t()
            for i, x in enumerate(ms):
                errors[i][name] = x - approx
            q[name] = qn
            result[name] = approx.reshape(shape)
        out.append(result)
    return out


def reference_topk(world, steps, ratio, inputs=None, momentum=0.0, warmup_steps=0):
    """As reference_powersgd, for top-k: every tensor of the inputs (by
    default SHAPES') sparsified on its own, with its own errors; with
    `momentum`, each rank's velocity is what is sparsified (and restarts
    where sent); over `warmup_steps` the share kept falls from 1 to
    `ratio`, geometrically."""
    inputs = inputs or every_rank(world)
    errors = [{} for _ in range(world)]
    velocity = [{} for _ in range(world)]
    out = []
    for step in range(steps):
        per_rank = inputs(step)
        density = ratio if step >= warmup_steps else ratio ** (step / warmup_steps)
        result = {}
        for name in sorted(per_rank[0]):
            shape = per_rank[0][name].shape
            flat = [g[name].reshape(-1) for g in per_rank]
            if momentum:
                flat = [momentum * velocity[i].get(name, 0) + x for i, x in enumerate(flat)]
                for i, u in enumerate(flat):
                    velocity[i][name] = u.clone()
            numel = flat[0].numel()
            k = max(1, int(numel * density))
            if k * world >= numel:
                result[name] = (sum(flat) / world).reshape(shape)
                continue
            sent = []
            for i, x in enumerate(flat):
                acc = x + errors[i].get(name, 0)
                keep = torch.zeros_like(acc)
                idx = acc.abs().argsort(descending=True)[:k]
                keep[idx] = acc[idx]
                errors[i][name] = acc - keep
                if momentum:
                    velocity[i][name][idx] = 0
                sent.append(keep)
            result[name] = (sum(sent) / world).reshape(shape)
        out.append(result)
    return out


def assert_results_close(ours, ref, rtol=1e-6, atol=1e-7):
    for step, (a, b) in enumerate(zip(ours, ref)):
        for name in a:
            torch.testing.assert_close(a[name].double(), b[name], rtol=rtol, atol=atol,
                                       msg=lambda m: "step %d, %s: %s" % (step, name, m))
