"""Training with cohort.torch: DistributedOptimizer on N workers ends with the
same weights as one worker on the same global batch; optimizer state,
parameters and objects broadcast; SyncBatchNorm normalizes over every rank's
samples. Run under `cohort run -np 2`."""
import pytest
import torch

GLOBAL_BATCH = 12


def make_model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))


def global_data(step):
    gen = torch.Generator().manual_seed(100 + step)
    return torch.randn(GLOBAL_BATCH, 5, generator=gen), torch.randn(GLOBAL_BATCH, 3, generator=gen)


def shard(t, hvd):
    per = GLOBAL_BATCH // hvd.size()
    return t[hvd.rank() * per:(hvd.rank() + 1) * per]


def reference_weights(make_optimizer, steps):
    model = make_model()
    opt = make_optimizer(model.parameters())
    for step in range(steps):
        x, y = global_data(step)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


OPTIMIZERS = {
    "sgd_momentum": lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9),
    "adam": lambda params: torch.optim.Adam(params, lr=0.01),
}


@pytest.mark.parametrize("opt_name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("variant", ["plain", "groups", "accumulate", "fp16", "predivide"])
def test_data_parallel_matches_one_worker(hvd, opt_name, variant):
    make_optimizer = OPTIMIZERS[opt_name]
    steps = 4
    model = make_model(seed=hvd.rank())  # different on purpose: broadcast fixes it
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    kwargs = {"groups": 2} if variant == "groups" else {}
    if variant == "accumulate":
        kwargs["backward_passes_per_step"] = 2
    if variant == "fp16":
        kwargs["compression"] = hvd.Compression.fp16
    if variant == "predivide":
        kwargs["gradient_predivide_factor"] = 2.0
    opt = hvd.DistributedOptimizer(make_optimizer(model.parameters()),
                                   named_parameters=model.named_parameters(), **kwargs)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    for step in range(steps):
        x, y = (shard(t, hvd) for t in global_data(step))
        opt.zero_grad()
        if variant == "accumulate":  # two half batches, summed locally
            half = x.shape[0] // 2
            for part in (slice(0, half), slice(half, None)):
                (torch.nn.functional.mse_loss(model(x[part]), y[part]) / 2).backward()
        else:
            torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    tol = 2e-3 if variant == "fp16" else 1e-5
    for got, want in zip(model.parameters(), reference_weights(make_optimizer, steps)):
        assert torch.allclose(got.detach(), want, atol=tol, rtol=tol), (got, want)


def test_allreduces_start_during_backward(hvd):
    """Each gradient's allreduce is submitted by its hook while backward still
    runs: the last layer's before the first layer's gradient exists."""
    model = make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    first_layer_grad_seen_at_submission = {}
    submit = opt._allreduce_grad_async

    def recording_submit(p):
        first_layer_grad_seen_at_submission[opt._parameter_names[p]] = \
            model[0].weight.grad is not None
        return submit(p)

    opt._allreduce_grad_async = recording_submit
    x, y = (shard(t, hvd) for t in global_data(0))
    torch.nn.functional.mse_loss(model(x), y).backward()
    assert len(first_layer_grad_seen_at_submission) == 4  # every parameter, before step()
    assert first_layer_grad_seen_at_submission["allreduce.2.weight"] is False
    assert all(h is not None for h, _ in opt._handles.values())
    opt.step()


def test_explicit_synchronize_then_skip_synchronize(hvd):
    model = make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    x, y = (shard(t, hvd) for t in global_data(0))
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.synchronize()
    grads = [p.grad.clone() for p in model.parameters()]
    for g in grads:  # every rank holds the same averaged gradient
        assert torch.equal(hvd.broadcast(g, 0), g)
    with opt.skip_synchronize():
        opt.step()
    for got, want in zip(model.parameters(), reference_weights(
            lambda p: torch.optim.SGD(p, lr=0.1), 1)):
        assert torch.allclose(got.detach(), want, atol=1e-6)


def state_tensors(opt):
    out = []
    for pid in sorted(opt.state_dict()["state"]):
        for key, value in sorted(opt.state_dict()["state"][pid].items()):
            out.append(torch.as_tensor(value, dtype=torch.float64).reshape(-1).clone())
    return out


@pytest.mark.parametrize("opt_name", sorted(OPTIMIZERS))
def test_broadcast_optimizer_state(hvd, opt_name):
    model = make_model()
    opt = OPTIMIZERS[opt_name](model.parameters())
    if hvd.rank() == 0:  # only root has state, from rank-specific steps
        for step in range(2):
            opt.zero_grad()
            model(torch.ones(2, 5) * (step + 1)).sum().backward()
            opt.step()
        opt.param_groups[0]["lr"] = 0.123
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    assert opt.param_groups[0]["lr"] == 0.123
    mine = state_tensors(opt)
    assert len(mine) == (4 if opt_name == "sgd_momentum" else 12)
    for t in mine:
        assert torch.equal(hvd.broadcast(t, 0), t)
    # The state is usable: from equal parameters and gradients, one more step
    # keeps every rank's parameters equal.
    hvd.broadcast_parameters(model.state_dict(), 0)
    opt.zero_grad()
    model(torch.ones(2, 5)).sum().backward()
    opt.step()
    for p in model.parameters():
        assert torch.equal(hvd.broadcast(p.detach(), 0), p.detach())


def test_broadcast_parameters_forms_and_objects(hvd):
    model = make_model(seed=hvd.rank())
    hvd.broadcast_parameters(list(model.named_parameters()), root_rank=1)
    for p in model.parameters():
        assert torch.equal(hvd.broadcast(p.detach(), 1), p.detach())
    tensors = [torch.full((2,), float(hvd.rank()))]
    hvd.broadcast_parameters(tensors, root_rank=0)
    assert tensors[0].tolist() == [0.0, 0.0]
    obj = {"rank": hvd.rank(), "f": (lambda v: v + 1) if hvd.rank() == 1 else None}
    got = hvd.broadcast_object(obj, root_rank=1)
    assert got["rank"] == 1 and got["f"](1) == 2
    assert hvd.allgather_object({"r": hvd.rank()}) == [{"r": r} for r in range(hvd.size())]


def test_sync_batch_norm_matches_batch_norm_on_the_global_batch(hvd):
    gen = torch.Generator().manual_seed(5)
    x_all = torch.randn(GLOBAL_BATCH, 3, 4, generator=gen, dtype=torch.float64)
    w_all = torch.randn(GLOBAL_BATCH, 3, 4, generator=gen, dtype=torch.float64)
    ref = torch.nn.BatchNorm1d(3).double()
    with torch.no_grad():
        ref.weight.copy_(torch.tensor([1.0, 2.0, 0.5]))
        ref.bias.copy_(torch.tensor([0.0, -1.0, 3.0]))
    sbn = hvd.SyncBatchNorm(3).double()
    sbn.load_state_dict(ref.state_dict())
    x_ref = x_all.clone().requires_grad_()
    out_ref = ref(x_ref)
    (out_ref * w_all).sum().backward()

    x = shard(x_all, hvd).clone().requires_grad_()
    out = sbn(x)
    (out * shard(w_all, hvd)).sum().backward()
    assert torch.allclose(out, shard(out_ref, hvd), atol=1e-10)
    assert torch.allclose(x.grad, shard(x_ref.grad, hvd), atol=1e-10)
    assert torch.allclose(hvd.allreduce(sbn.weight.grad, op=hvd.Sum), ref.weight.grad, atol=1e-10)
    assert torch.allclose(hvd.allreduce(sbn.bias.grad, op=hvd.Sum), ref.bias.grad, atol=1e-10)
    assert torch.allclose(sbn.running_mean, ref.running_mean, atol=1e-12)
    assert torch.allclose(sbn.running_var, ref.running_var, atol=1e-12)
    sbn.eval()
    ref.eval()
    assert torch.allclose(sbn(x.detach()), ref(shard(x_all, hvd)), atol=1e-12)
