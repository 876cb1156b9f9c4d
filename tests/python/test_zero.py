"""Sharded data parallel: ZeroRedundancyOptimizer (stages 1, 2) and
FullyShardedDataParallel (stage 3) end with the same parameters as plain data
parallel (DistributedOptimizer) on the same data, shard what they claim to
shard, and save full states on N ranks that load on M. Run under
`cohort run -np 2` and `-np 3`."""
import pytest
import torch

GLOBAL_BATCH = 12
STEPS = 3


class Net(torch.nn.Module):
    """Parameter sizes that divide by neither 2 nor 3 (5*7, 7, 7*11, 11, ...)."""

    def __init__(self):
        super().__init__()
        self.inp = torch.nn.Linear(5, 7)
        self.body = torch.nn.Sequential(torch.nn.Linear(7, 11), torch.nn.Tanh(),
                                        torch.nn.LayerNorm(11))
        self.out = torch.nn.Linear(11, 3)
        self.scale = torch.nn.Parameter(torch.tensor(1.5))  # a root parameter, 0-d

    def forward(self, x):
        return self.out(self.body(torch.tanh(self.inp(x)))) * self.scale


def make_model(seed):
    torch.manual_seed(seed)
    return Net()


def global_data(step):
    gen = torch.Generator().manual_seed(100 + step)
    return torch.randn(GLOBAL_BATCH, 5, generator=gen), torch.randn(GLOBAL_BATCH, 3, generator=gen)


def local_data(step, position, size):
    per = GLOBAL_BATCH // size
    return tuple(t[position * per:(position + 1) * per] for t in global_data(step))


OPTIMIZERS = {
    "sgd_momentum": (torch.optim.SGD, dict(lr=0.1, momentum=0.9)),
    "adam": (torch.optim.Adam, dict(lr=0.01)),
    "adamw": (torch.optim.AdamW, dict(lr=0.01, weight_decay=0.1)),
}


def train(model, opt, steps, position, size, first=0):
    for step in range(first, first + steps):
        x, y = local_data(step, position, size)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()


def data_parallel(hvd, opt_name, steps):
    """Plain data parallel: the reference every stage must match."""
    cls, kwargs = OPTIMIZERS[opt_name]
    model = make_model(0)
    opt = hvd.DistributedOptimizer(cls(model.parameters(), **kwargs),
                                   named_parameters=model.named_parameters())
    train(model, opt, steps, hvd.rank(), hvd.size())
    return model.state_dict()


def sharded(hvd, stage, opt_name, seed=0):
    """A model (parameters broadcast from rank 0) and its stage's optimizer."""
    cls, kwargs = OPTIMIZERS[opt_name]
    model = make_model(seed)
    if stage == 3:
        model = hvd.FullyShardedDataParallel(model)  # broadcasts from rank 0 itself
        return model, cls(model.parameters(), **kwargs)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    # A small bucket: the model spreads over several buckets.
    return model, hvd.ZeroRedundancyOptimizer(model.parameters(), cls, stage=stage,
                                              bucket_cap_mb=1e-4, **kwargs)


def assert_same(got, want):
    assert list(got) == list(want)
    for name in want:
        assert torch.allclose(got[name], want[name], atol=1e-6, rtol=1e-5), name


@pytest.mark.parametrize("opt_name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("stage", [1, 2, 3])
def test_stage_matches_data_parallel(hvd, stage, opt_name):
    want = data_parallel(hvd, opt_name, STEPS)
    model, opt = sharded(hvd, stage, opt_name, seed=hvd.rank())  # ranks differ until synced
    train(model, opt, STEPS, hvd.rank(), hvd.size())
    assert_same(model.state_dict(), want)


@pytest.mark.parametrize("stage", [1, 2])
def test_bucket_views_match_data_parallel(hvd, stage):
    """parameters_as_bucket_view=True (the parameters become views of the flat
    buffers the allgather fills), with zero_grad(set_to_none=True) every other
    step (autograd's new gradients are copied into the buckets): the same
    result as plain data parallel."""
    want = data_parallel(hvd, "adam", STEPS)
    cls, kwargs = OPTIMIZERS["adam"]
    model = make_model(hvd.rank())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    opt = hvd.ZeroRedundancyOptimizer(model.parameters(), cls, stage=stage, bucket_cap_mb=1e-4,
                                      parameters_as_bucket_view=True, **kwargs)
    for step in range(STEPS):
        x, y = local_data(step, hvd.rank(), hvd.size())
        opt.zero_grad(set_to_none=step % 2 == 1)
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    assert_same(model.state_dict(), want)
    flats = list(opt._flat_params.values())
    for p in model.parameters():
        assert any(f.data_ptr() <= p.data_ptr() < f.data_ptr() + f.numel() * f.element_size()
                   for f in flats)


@pytest.mark.parametrize("stage", [1, 2])
def test_gradients_stay_in_reused_buffers(hvd, stage):
    """From the second step on, the gradients a rank keeps are the same
    tensors' memory (stage 1: every gradient; stage 2: the owned ones), which
    autograd accumulates into: no allocation per step."""
    model, opt = sharded(hvd, stage, "sgd_momentum")
    train(model, opt, 1, hvd.rank(), hvd.size())
    kept = {p: p.grad.data_ptr() for p in model.parameters() if p.grad is not None}
    train(model, opt, 2, hvd.rank(), hvd.size(), first=1)
    assert {p: p.grad.data_ptr() for p in model.parameters() if p.grad is not None} == kept
    assert len(kept) == (len(list(model.parameters())) if stage == 1 else
                         sum(len(g["params"]) for g in opt.optim.param_groups))


@pytest.mark.parametrize("stage", [1, 2])
def test_synchronize_then_skip_synchronize(hvd, stage):
    """Horovod's pattern (optimizer.synchronize(), then step() inside
    skip_synchronize()), and step() after synchronize() outside it (Horovod's
    warning, and no second reduction): both as plain data parallel."""
    want = data_parallel(hvd, "adam", 2)
    model, opt = sharded(hvd, stage, "adam", seed=hvd.rank())
    for step in range(2):
        x, y = local_data(step, hvd.rank(), hvd.size())
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.synchronize()
        if step == 0:
            with opt.skip_synchronize():
                opt.step()
        else:
            with pytest.warns(UserWarning, match=r"optimizer.step\(\) called without "
                              r"optimizer.skip_synchronize\(\) context after "
                              r"optimizer.synchronize\(\)"):
                opt.step()
    assert_same(model.state_dict(), want)


def test_skip_synchronize_refuses_reductions_in_flight(hvd):
    model, opt = sharded(hvd, 1, "sgd_momentum")
    x, y = local_data(0, hvd.rank(), hvd.size())
    torch.nn.functional.mse_loss(model(x), y).backward()
    with pytest.raises(RuntimeError, match=r"step\(\) inside skip_synchronize\(\) while "
                       r"gradient reductions are in flight; call optimizer.synchronize\(\) "
                       r"first"):
        with opt.skip_synchronize():
            opt.step()
    opt.step()  # waits for them as usual


def test_optimizer_state_is_sharded(hvd):
    model, opt = sharded(hvd, 1, "adam")
    train(model, opt, 1, hvd.rank(), hvd.size())
    mine = {id(p) for group in opt.optim.param_groups for p in group["params"]}
    assert set(id(p) for p in opt.optim.state) == mine
    owners = hvd.allgather_object(sorted(i for i, p in enumerate(model.parameters())
                                         if id(p) in mine))
    counted = sorted(i for ranks in owners for i in ranks)
    assert counted == list(range(len(list(model.parameters()))))  # each owned exactly once
    assert all(ranks for ranks in owners)  # 7 parameters: every rank owns some


@pytest.mark.parametrize("stage", [1, 2])
def test_reductions_start_during_backward(hvd, stage):
    model, opt = sharded(hvd, stage, "sgd_momentum")
    assert len(opt._buckets) >= (2 if hvd.size() == 2 else 1)  # buckets >= size x largest
    x, y = local_data(0, hvd.rank(), hvd.size())
    torch.nn.functional.mse_loss(model(x), y).backward()
    assert opt._reduced == set(range(len(opt._buckets)))  # every bucket, before step()
    opt.step()


def test_stage2_keeps_only_owned_gradients(hvd):
    model, opt = sharded(hvd, 2, "sgd_momentum")
    train(model, opt, 1, hvd.rank(), hvd.size())
    owned = {id(p) for group in opt.optim.param_groups for p in group["params"]}
    for p in model.parameters():
        assert (p.grad is not None) == (id(p) in owned)


def test_stage3_keeps_a_slice_of_each_unit(hvd):
    model = hvd.FullyShardedDataParallel(make_model(0))
    full = sum(p.numel() for p in make_model(0).parameters())
    local = sum(p.numel() for p in model.parameters())
    units = len(model.shards)  # each unit pads to a multiple of the size
    assert full / hvd.size() <= local <= full / hvd.size() + units
    x, _ = local_data(0, hvd.rank(), hvd.size())
    model(x).sum().backward()  # the first forward: no prefetch yet (order unknown)
    model.reset_peak_gathered()
    model(x).sum().backward()
    # Prefetch keeps two units gathered at times (never more), besides the root.
    sizes = [hvd.size() * s.numel() for s in model.shards]
    root, biggest = sizes[-1], sorted(sizes[:-1])
    assert model.gathered_numel == 0
    assert biggest[-1] + root < model.peak_gathered_numel <= biggest[-1] + biggest[-2] + root
    assert all(p.grad is not None and p.grad.shape == p.shape for p in model.parameters())
    assert "Linear(in_features=5, out_features=7, bias=True)" in repr(model)
    lean = hvd.FullyShardedDataParallel(make_model(0), prefetch=False)
    for _ in range(2):
        lean(x).sum().backward()
    assert lean.peak_gathered_numel == biggest[-1] + root  # one unit at a time


def test_stage3_forward_without_grad(hvd):
    x, _ = local_data(0, hvd.rank(), hvd.size())
    model = hvd.FullyShardedDataParallel(make_model(0))
    with torch.no_grad():
        assert torch.allclose(model(x), make_model(0)(x), atol=1e-6)
    assert model.gathered_numel == 0


def test_stage3_root_without_parameters(hvd):
    """Every parameter in a unit: the root gathers nothing; each rank's
    gradient slices are those of the plain model on the global batch."""
    def net():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 3))
    model, plain = hvd.FullyShardedDataParallel(net(), prefetch=False), net()
    x, y = global_data(0)
    torch.nn.functional.mse_loss(plain(x), y).backward()
    x, y = local_data(0, hvd.rank(), hvd.size())
    torch.nn.functional.mse_loss(model(x), y).backward()
    assert model._units[-1].entries == []
    assert model.peak_gathered_numel == hvd.size() * max(s.numel() for s in model.shards[:-1])
    grads = dict((name, p.grad) for name, p in plain.named_parameters())
    for unit in model._units[:-1]:
        want = torch.cat([grads[e[0]].reshape(-1) for e in unit.entries] +
                         [torch.zeros(unit.shard.numel() * hvd.size())])
        start = hvd.rank() * unit.shard.numel()
        assert torch.allclose(unit.shard.grad, want[start:start + unit.shard.numel()],
                              atol=1e-6)


def test_stage3_needs_no_prefetch(hvd):
    want = data_parallel(hvd, "adam", 2)
    cls, kwargs = OPTIMIZERS["adam"]
    model = hvd.FullyShardedDataParallel(make_model(0), prefetch=False,
                                         wrap=lambda m: isinstance(m, torch.nn.Sequential))
    train(model, cls(model.parameters(), **kwargs), 2, hvd.rank(), hvd.size())
    assert_same(model.state_dict(), want)


def reference_after_load(opt_name, state, optim_state, steps, first):
    """One process, the global batch, a plain optimizer loaded from the saved
    full states: what any number of ranks must reach after loading."""
    cls, kwargs = OPTIMIZERS[opt_name]
    model = make_model(0)
    model.load_state_dict(state)
    opt = cls(model.parameters(), **kwargs)
    opt.load_state_dict(optim_state)
    train(model, opt, steps, 0, 1, first)
    return model.state_dict()


def names_to_indices(model, full_optim):
    """An FSDP full optimizer state (by name) as a plain optimizer's (by index)."""
    index = {name: i for i, (name, _) in enumerate(model.named_parameters())}
    return {"state": {index[n]: v for n, v in full_optim["state"].items()},
            "param_groups": [dict(g, params=[index[n] for n in g["params"]])
                             for g in full_optim["param_groups"]]}


@pytest.mark.parametrize("stage", [1, 2, 3])
def test_save_on_n_load_on_m(hvd, stage):
    """Saved on every rank, loaded on a set of fewer ranks (the first
    size - 1, or both ranks of two: N=M), trained on there, compared with the
    one-process reference from the same full states."""
    model, opt = sharded(hvd, stage, "adam")
    train(model, opt, 2, hvd.rank(), hvd.size())
    state = model.state_dict()
    if stage == 3:
        optim_state = model.full_optim_state_dict(opt)
    else:
        opt.consolidate_state_dict(to=0)
        optim_state = hvd.broadcast_object(opt.state_dict() if hvd.rank() == 0 else None,
                                           root_rank=0, name="test_zero.state.%d" % stage)
    m = max(2, hvd.size() - 1)
    subset = hvd.add_process_set(list(range(m))) if m < hvd.size() else hvd.global_process_set
    try:
        if subset.included():
            resumed_state_and_compare(hvd, stage, state, optim_state, subset, m)
    finally:
        if m < hvd.size():
            hvd.remove_process_set(subset)


def resumed_state_and_compare(hvd, stage, state, optim_state, subset, m):
    cls, kwargs = OPTIMIZERS["adam"]
    model = make_model(subset.rank() + 7)  # wrong values: loading must replace them
    if stage == 3:
        model = hvd.FullyShardedDataParallel(model, process_set=subset)
        opt = cls(model.parameters(), **kwargs)
        model.load_state_dict(state)
        model.load_full_optim_state_dict(opt, optim_state)
        plain_optim_state = names_to_indices(make_model(0), optim_state)
    else:
        model.load_state_dict(state)
        opt = hvd.ZeroRedundancyOptimizer(model.parameters(), cls, stage=stage,
                                          bucket_cap_mb=1e-4, process_set=subset, **kwargs)
        opt.load_state_dict(optim_state)
        plain_optim_state = optim_state
    train(model, opt, 2, subset.rank(), m, first=2)
    want = reference_after_load("adam", state, plain_optim_state, 2, 2)
    assert_same(model.state_dict(), want)


def test_add_param_group_keeps_owners(hvd):
    model, opt = sharded(hvd, 2, "sgd_momentum")
    before = dict(opt._param_to_rank)
    extra = torch.nn.Linear(3, 2)
    hvd.broadcast_parameters(extra.state_dict(), root_rank=0)
    opt.add_param_group({"params": list(extra.parameters()), "lr": 0.05})
    assert all(opt._param_to_rank[p] == r for p, r in before.items())
    x, y = local_data(0, hvd.rank(), hvd.size())
    opt.zero_grad()
    torch.nn.functional.mse_loss(extra(model(x)), y[:, :2]).backward()
    opt.step()
    gathered = hvd.allgather_object([p.detach() for p in extra.parameters()])
    for other in gathered:  # the new group's parameters are synced too
        assert all(torch.equal(a, b) for a, b in zip(other, extra.parameters()))
    assert opt.param_groups[-1]["lr"] == 0.05


# ---- collectives into caller-supplied outputs (what stages 1 and 2 run on) ----

def test_reducescatter_into_output(hvd):
    size, rank = hvd.size(), hvd.rank()
    rows = 2 * size + 1  # the first rank gets one row more
    inputs = [torch.arange(rows * 3, dtype=torch.float64).reshape(rows, 3) * (r + 1) + r
              for r in range(size)]
    total = sum(inputs)
    mine = rows // size + (1 if rank < rows % size else 0)
    start = rank * (rows // size) + min(rank, rows % size)
    out = torch.full((mine, 3), -1.0, dtype=torch.float64)
    got = hvd.synchronize(hvd.reducescatter_async(inputs[rank], name="into.rs", op=hvd.Sum,
                                                  output=out))
    assert got is out
    assert torch.equal(out, total[start:start + mine])
    # In place: the output is this rank's block of the input itself.
    flat = inputs[rank].clone()
    block = flat[start:start + mine]
    hvd.synchronize(hvd.reducescatter_async(flat, name="into.rs.inplace", op=hvd.Average,
                                            output=block))
    assert torch.equal(block, total[start:start + mine] / size)
    others = torch.cat([flat[:start], flat[start + mine:]])
    assert torch.equal(others, torch.cat([inputs[rank][:start], inputs[rank][start + mine:]]))


def test_allgather_into_output(hvd):
    size, rank = hvd.size(), hvd.rank()
    # Uneven rows: rank r sends r + 1 rows.
    inputs = [torch.full((r + 1, 2), float(r), dtype=torch.float32) for r in range(size)]
    want = torch.cat(inputs)
    out = torch.empty(want.shape, dtype=torch.float32)
    got = hvd.synchronize(hvd.allgather_async(inputs[rank], name="into.ag", output=out))
    assert got is out and torch.equal(out, want)
    # In place: this rank's rows already sit in the output.
    flat = torch.zeros(want.shape, dtype=torch.float32)
    start = rank * (rank + 1) // 2
    flat[start:start + rank + 1] = inputs[rank]
    hvd.synchronize(hvd.allgather_async(flat[start:start + rank + 1], name="into.ag.inplace",
                                        output=flat))
    assert torch.equal(flat, want)


def test_collectives_into_bad_outputs(hvd):
    size, rank = hvd.size(), hvd.rank()
    x = torch.ones(2 * size, 3)
    with pytest.raises(ValueError, match=r"reducescatter: output shape \[3, 3\], expected "
                       r"\[2, 3\]"):
        hvd.reducescatter_async(x, name="into.bad", output=torch.empty(3, 3))
    with pytest.raises(ValueError, match="reducescatter: output dtype float64 differs from the "
                       "input's float32"):
        hvd.reducescatter_async(x, name="into.bad", output=torch.empty(2, 3, dtype=torch.float64))
    with pytest.raises(ValueError, match="allgather: the output tensor must be contiguous"):
        hvd.allgather_async(x, name="into.bad", output=torch.empty(3, 2 * size * 2).t())
    with pytest.raises(ValueError, match=r"allgather: output shape \[12, 2\], expected "
                       r"\[any, 3\]"):
        hvd.allgather_async(x, name="into.bad", output=torch.empty(12, 2))
    # The rows of the other ranks are known only once negotiated: a wrong
    # first dimension fails at wait, on this rank, after the collective ran.
    short = torch.empty(2 * size * size - 1, 3)
    with pytest.raises(hvd.CohortError, match="allgather of tensor 'into.short': the output "
                       "buffer holds %d elements but this rank's output has %d \\(rows per "
                       "rank:%s\\)" % (short.numel(), 2 * size * size * 3,
                                         " %d" % (2 * size) * size)):
        hvd.synchronize(hvd.allgather_async(x, name="into.short", output=short))
    # The ranks are still in step.
    got = hvd.allgather(torch.tensor([rank]))
    assert got.tolist() == list(range(size))


def test_bad_arguments(hvd):
    params = list(make_model(0).parameters())
    with pytest.raises(ValueError, match="stage must be 1 or 2, got 3"):
        hvd.ZeroRedundancyOptimizer(params, torch.optim.SGD, stage=3, lr=0.1)
    with pytest.raises(ValueError, match="overlap_with_ddp is not needed"):
        hvd.ZeroRedundancyOptimizer(params, torch.optim.SGD, overlap_with_ddp=True, lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        hvd.ZeroRedundancyOptimizer([], torch.optim.SGD, lr=0.1)
    with pytest.raises(TypeError, match="should be an iterable of Tensors"):
        hvd.ZeroRedundancyOptimizer(params[0], torch.optim.SGD, lr=0.1)
    with pytest.raises(ValueError, match="same dense type"):
        hvd.ZeroRedundancyOptimizer([params[0], params[1].double()], torch.optim.SGD, lr=0.1)
    opt = hvd.ZeroRedundancyOptimizer(params, torch.optim.SGD, lr=0.1)
    with pytest.raises(RuntimeError, match=r"call `consolidate_state_dict\(to=%d\)`" %
                       hvd.rank()):
        opt.state_dict()
    with pytest.raises(ValueError, match="to=5 is not a rank of the process set"):
        opt.consolidate_state_dict(to=5)
    with pytest.raises(ValueError, match="not a submodule of the wrapped module"):
        hvd.FullyShardedDataParallel(make_model(0), wrap=[torch.nn.Linear(2, 2)])
    half_frozen = make_model(0)
    half_frozen.inp.bias.requires_grad_(False)
    with pytest.raises(ValueError, match=r"mixes trainable and frozen parameters \(frozen: "
                       r"inp.bias\)"):
        hvd.FullyShardedDataParallel(half_frozen)
    fsdp = hvd.FullyShardedDataParallel(make_model(0))
    with pytest.raises(RuntimeError, match=r"inp.weight has shape \(2, 2\), expected \(7, 5\)"):
        sd = fsdp.state_dict()
        sd["inp.weight"] = torch.zeros(2, 2)
        fsdp.load_state_dict(sd)
    with pytest.raises(RuntimeError, match=r"missing keys \['scale'\]"):
        sd = fsdp.state_dict()
        del sd["scale"]
        fsdp.load_state_dict(sd)
