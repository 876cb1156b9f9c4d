"""cohort.torch.parallel on 2 ranks (`cohort run -np 2`): the mesh's groups;
the tensor-parallel layers, cross-entropy and sequence parallelism against
the unsharded torch layers (outputs, and gradients slice by slice); the
pipeline under each schedule against one process's gradients, tied weights
across stages, recomputation, evaluation, activation counts; sharded
checkpoints saved, merged and loaded back."""
import os
import tempfile

import pytest
import torch
import torch.nn.functional as F
from torch import nn

RTOL, ATOL = 1e-5, 1e-6


@pytest.fixture(scope="module")
def par(hvd):
    torch.set_num_threads(1)
    from cohort.torch import parallel
    return parallel


def close(a, b):
    assert a.shape == b.shape, (a.shape, b.shape)
    assert torch.allclose(a, b, rtol=RTOL, atol=ATOL), (a - b).abs().max()


def seeded(seed, build):
    torch.manual_seed(seed)
    return build()


def piece(full, dim, rank, parts=2):
    n = full.shape[dim] // parts
    return full.narrow(dim, rank * n, n)


# ---- the mesh ----

def test_mesh_gives_each_rank_its_coordinates_and_sets(hvd, par):
    mesh = par.Mesh(tp=2)
    assert mesh.dims == {"dp": 1, "pp": 1, "tp": 2}
    assert mesh.coordinate("tp") == hvd.rank() and mesh.tp.ranks == [0, 1]
    assert mesh.tp.process_set is hvd.global_process_set  # the whole job
    assert mesh.dp.process_set is None and mesh.dp.ranks == [hvd.rank()]
    pipe = par.Mesh(pp=2)
    assert pipe.coordinate("pp") == hvd.rank() and pipe.rank_of(pp=1) == 1
    assert hvd.Mesh is par.Mesh


def test_mesh_refuses_sizes_that_do_not_make_the_job(hvd, par):
    with pytest.raises(ValueError, match=r"Mesh\(dp=2, pp=2, tp=2\): dp\*pp\*tp = 8 but the job "
                                         r"has 2 ranks"):
        par.Mesh(dp=2, pp=2, tp=2)
    with pytest.raises(ValueError, match=r"Mesh\(pp=3, tp=1\): pp\*tp = 3 does not divide the "
                                         r"job's 2 ranks"):
        par.Mesh(pp=3)


# ---- tensor parallelism ----

def test_column_then_row_parallel_mlp_equals_the_unsharded_one(hvd, par):
    mesh, r = par.Mesh(tp=2), hvd.rank()
    full1, full2 = seeded(1, lambda: nn.Linear(8, 12)), seeded(2, lambda: nn.Linear(12, 6))
    col = seeded(1, lambda: par.ColumnParallelLinear(8, 12, mesh))
    row = seeded(2, lambda: par.RowParallelLinear(12, 6, mesh))
    close(col.weight, piece(full1.weight, 0, r))
    close(row.weight, piece(full2.weight, 1, r))
    x = torch.randn(3, 5, 8, generator=torch.Generator().manual_seed(7))
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    want = full2(torch.tanh(full1(xa)))
    got = row(torch.tanh(col(xb)))
    close(got, want)
    want.square().sum().backward()
    got.square().sum().backward()
    close(xb.grad, xa.grad)
    close(col.weight.grad, piece(full1.weight.grad, 0, r))
    close(col.bias.grad, piece(full1.bias.grad, 0, r))
    close(row.weight.grad, piece(full2.weight.grad, 1, r))
    close(row.bias.grad, full2.bias.grad)


def test_gathered_output_and_unsplit_input(hvd, par):
    mesh = par.Mesh(tp=2)
    full = seeded(3, lambda: nn.Linear(4, 6))
    col = seeded(3, lambda: par.ColumnParallelLinear(4, 6, mesh, gather_output=True))
    row = seeded(3, lambda: par.RowParallelLinear(4, 6, mesh, input_is_parallel=False))
    x = torch.randn(5, 4, generator=torch.Generator().manual_seed(8), requires_grad=True)
    close(col(x), full(x))
    out = row(x)
    close(out, full(x))
    g, = torch.autograd.grad(out.sum(), x)
    close(g, torch.autograd.grad(full(x).sum(), x)[0])


def test_vocab_parallel_embedding_and_cross_entropy_equal_torch(hvd, par):
    mesh, r = par.Mesh(tp=2), hvd.rank()
    full = seeded(4, lambda: nn.Embedding(10, 3))
    emb = seeded(4, lambda: par.VocabParallelEmbedding(10, 3, mesh))
    close(emb.weight, piece(full.weight, 0, r))
    ids = torch.tensor([[0, 9, 4], [5, 5, 1]])
    close(emb(ids), full(ids))
    emb(ids).square().sum().backward()
    full(ids).square().sum().backward()
    close(emb.weight.grad, piece(full.weight.grad, 0, r))

    logits = torch.randn(4, 3, 10, generator=torch.Generator().manual_seed(9))
    target = torch.randint(0, 10, (4, 3), generator=torch.Generator().manual_seed(10))
    mine = piece(logits, 2, r).clone().requires_grad_()
    whole = logits.clone().requires_grad_()
    loss = par.vocab_parallel_cross_entropy(mine, target, mesh)
    want = F.cross_entropy(whole.reshape(-1, 10), target.reshape(-1), reduction="none")
    close(loss.reshape(-1), want)
    (loss * torch.arange(12.).reshape(4, 3)).sum().backward()
    (want * torch.arange(12.)).sum().backward()
    close(mine.grad, piece(whole.grad, 2, r))


def test_sequence_parallel_layers_keep_the_sequence_split(hvd, par):
    mesh, r = par.Mesh(tp=2), hvd.rank()
    full1, full2 = seeded(5, lambda: nn.Linear(4, 8)), seeded(6, lambda: nn.Linear(8, 4))
    norm_full = nn.LayerNorm(4)
    col = seeded(5, lambda: par.ColumnParallelLinear(4, 8, mesh, sequence_parallel=True))
    row = seeded(6, lambda: par.RowParallelLinear(8, 4, mesh, sequence_parallel=True))
    norm = par.mark_sequence_parallel(nn.LayerNorm(4))
    x = torch.randn(6, 2, 4, generator=torch.Generator().manual_seed(11))  # [seq, batch, hidden]
    whole = x.clone().requires_grad_()
    mine = piece(x, 0, r).clone().requires_grad_()
    want = full2(F.gelu(full1(norm_full(whole))))
    got = row(F.gelu(col(norm(mine))))
    close(got, piece(want, 0, r))  # each rank its rows of the sequence
    want.square().sum().backward()
    got.square().sum().backward()
    close(mine.grad, piece(whole.grad, 0, r))
    close(col.weight.grad, piece(full1.weight.grad, 0, r))
    close(row.weight.grad, piece(full2.weight.grad, 1, r))
    params = list(norm.parameters()) + [row.bias]
    par.sync_sequence_parallel_grads(params, mesh)  # each rank saw half the tokens
    close(row.bias.grad, full2.bias.grad)
    close(norm.weight.grad, norm_full.weight.grad)
    with pytest.raises(ValueError, match=r"dimension 0 \(5\) is not divisible by the 2 "
                                         r"tensor-parallel ranks"):
        row(torch.randn(5, 2, 4))  # its reduce-scatter splits the sequence


def test_layer_sizes_must_divide_over_the_ranks(hvd, par):
    mesh = par.Mesh(tp=2)
    with pytest.raises(ValueError, match="ColumnParallelLinear: out_features: 5 is not divisible "
                                         "by the 2 tensor-parallel ranks"):
        par.ColumnParallelLinear(4, 5, mesh)
    with pytest.raises(ValueError, match="VocabParallelEmbedding: num_embeddings: 7 is not "
                                         "divisible by the 2 tensor-parallel ranks"):
        par.VocabParallelEmbedding(7, 4, mesh)


# ---- pipeline ----

def mlp_layers(extra=0):
    torch.manual_seed(0)
    return [nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 16),
            nn.Tanh(), nn.Linear(16, 3)] + [nn.Identity() for _ in range(extra)]


def batch_of(n=8):
    return (torch.randn(n, 6, generator=torch.Generator().manual_seed(1)),
            torch.randn(n, 3, generator=torch.Generator().manual_seed(2)))


@pytest.mark.parametrize("schedule,v,recompute", [("gpipe", 1, False), ("1f1b", 1, False),
                                                  ("interleaved", 2, False), ("1f1b", 1, True),
                                                  ("interleaved", 2, [0, 3])])
def test_pipeline_gradients_equal_one_process(hvd, par, schedule, v, recompute):
    x, y = batch_of()
    ref = nn.Sequential(*mlp_layers(extra=v - 1))
    want = F.mse_loss(ref(x), y)
    want.backward()
    mesh = par.Mesh(pp=2)
    pipe = par.Pipeline(mlp_layers(extra=v - 1), mesh, F.mse_loss, micro_batches=4,
                        schedule=schedule, virtual_stages=v, recompute=recompute)
    loss = pipe.train_step(x, y)
    assert (loss is not None) == (hvd.rank() == 1)
    if loss is not None:
        assert loss == pytest.approx(want.item(), rel=1e-6)
    named = dict(ref.named_parameters())
    for name, p in pipe.named_parameters():
        close(p.grad, named[name].grad)
    assert sorted(pipe.state_dict()) == sorted(k for k in ref.state_dict()
                                               if pipe.stage_of_layer(int(k.split(".")[0])) %
                                               2 == hvd.rank())


def test_tied_weights_across_stages_stay_one_parameter(hvd, par):
    def layers():
        torch.manual_seed(5)
        emb = nn.Embedding(7, 4)
        head = nn.Linear(4, 7, bias=False)
        return [emb, nn.Linear(4, 4), nn.Tanh(), head]

    ids = torch.randint(0, 7, (8, 5), generator=torch.Generator().manual_seed(3))
    tgt = torch.randint(0, 7, (8, 5), generator=torch.Generator().manual_seed(4))

    def loss_fn(logits, t):
        return F.cross_entropy(logits.reshape(-1, 7), t.reshape(-1))

    ref = nn.Sequential(*layers())
    ref[3].weight = ref[0].weight
    opt_ref = torch.optim.SGD(ref.parameters(), lr=0.5)
    mesh = par.Mesh(pp=2)
    pipe = par.Pipeline(layers(), mesh, loss_fn, micro_batches=2, tied=[["0.weight", "3.weight"]])
    opt = torch.optim.SGD(pipe.parameters(), lr=0.5)
    mine = "0.weight" if hvd.rank() == 0 else "3.weight"
    close(pipe.state_dict()[mine], ref[0].weight.detach())  # broadcast from stage 0
    for _ in range(3):
        opt_ref.zero_grad()
        loss_fn(ref(ids), tgt).backward()
        opt_ref.step()
        opt.zero_grad()
        pipe.train_step(ids, tgt)
        opt.step()
        close(pipe.state_dict()[mine], ref[0].weight.detach())
    # Two batches accumulated: each step's tied gradient summed over the stages once.
    opt_ref.zero_grad()
    opt.zero_grad()
    for _ in range(2):
        loss_fn(ref(ids), tgt).backward()
        pipe.train_step(ids, tgt)
    close(dict(pipe.named_parameters())[mine].grad, ref[0].weight.grad)
    with pytest.raises(ValueError, match=r"tied name .2.weight. is not a parameter of layer 2 \(on rank 1\)"):
        par.Pipeline(layers(), mesh, loss_fn, micro_batches=2, tied=[["0.weight", "2.weight"]])


def test_evaluate_gives_the_loss_without_gradients(hvd, par):
    x, y = batch_of()
    ref = nn.Sequential(*mlp_layers())
    pipe = par.Pipeline(mlp_layers(), par.Mesh(pp=2), F.mse_loss, micro_batches=2)
    loss = pipe.evaluate(x, y)
    if hvd.rank() == 1:
        assert loss == pytest.approx(F.mse_loss(ref(x), y).item(), rel=1e-6)
    assert all(p.grad is None for p in pipe.parameters())


def test_1f1b_holds_fewer_activations_than_gpipe(hvd, par):
    x, y = batch_of(32)
    peaks = {}
    for schedule in ("gpipe", "1f1b"):
        pipe = par.Pipeline(mlp_layers(), par.Mesh(pp=2), F.mse_loss, micro_batches=8,
                            schedule=schedule, measure_activations=True)
        pipe.train_step(x, y)
        peaks[schedule] = (pipe.stats["peak_in_flight"], pipe.stats["peak_activation_bytes"])
    assert peaks["gpipe"][0] == 8 and peaks["1f1b"][0] == 2 - hvd.rank()
    # At most p of m micro-batches' activations (plus one being computed).
    assert peaks["1f1b"][1] <= peaks["gpipe"][1] * (2 - hvd.rank() + 1) / 8


def test_stages_that_do_not_match_the_ranks_are_refused(hvd, par):
    mesh = par.Mesh(pp=2)
    with pytest.raises(ValueError, match=r"3 stage modules for 2 stages \(pp=2 ranks x "
                                         r"virtual_stages=1\)"):
        par.Pipeline.from_stages([nn.Identity()] * 3, mesh, F.mse_loss, micro_batches=2)
    with pytest.raises(ValueError, match=r"3 layers cannot fill 4 stages \(pp=2 x "
                                         r"virtual_stages=2\)"):
        par.Pipeline([nn.Identity()] * 3, mesh, F.mse_loss, micro_batches=2,
                     schedule="interleaved", virtual_stages=2)
    with pytest.raises(ValueError, match=r"the partition has 3 stages but the pipeline has 2 "
                                         r"\(pp=2 ranks x virtual_stages=1\)"):
        par.Pipeline([nn.Identity()] * 3, mesh, F.mse_loss, micro_batches=2,
                     partition=[1, 1, 1])
    with pytest.raises(ValueError, match=r"recompute names stages \[1, 2\], but the stages are "
                                         r"0\.\.1"):
        par.Pipeline(mlp_layers(), mesh, F.mse_loss, micro_batches=2, recompute=[1, 2])
    with pytest.raises(ValueError, match=r"virtual_stages=2 needs 2 pipeline ranks or more "
                                         r"\(pp=1\)"):
        par.Pipeline(mlp_layers(), par.Mesh(tp=2), F.mse_loss, micro_batches=2,
                     schedule="interleaved", virtual_stages=2)
    with pytest.raises(ValueError, match="partition='parameters' needs every layer built"):
        par.Pipeline([lambda: nn.Identity()] * 2, mesh, F.mse_loss, micro_batches=2,
                     partition="parameters")
    # Layer sizes 112, 0, 272, 0, 272, 0, 51: 384 and 323 is the most even split.
    assert par.Pipeline(mlp_layers(), mesh, F.mse_loss, micro_batches=2,
                        partition="parameters").partition == [3, 4]
    pipe = par.Pipeline(mlp_layers(), mesh, F.mse_loss, micro_batches=3)
    with pytest.raises(ValueError, match="the batch's 8 (inputs|targets) do not split into 3 "
                                         "equal micro-batches"):
        pipe.train_step(*batch_of(8))


def test_sharded_checkpoint_merges_into_the_whole_models_state(hvd, par):
    mesh = par.Mesh(pp=2)
    where = hvd.broadcast_object(tempfile.mkdtemp(prefix="cohort-pp-ckpt-")
                                 if hvd.rank() == 0 else None, root_rank=0, name="ckpt.dir")
    pipe = par.Pipeline(mlp_layers(), mesh, F.mse_loss, micro_batches=2)
    opt = torch.optim.Adam(pipe.parameters(), lr=0.1)
    pipe.train_step(*batch_of())
    opt.step()
    par.save_checkpoint(where, 7, pipe, opt)
    merged = par.merge_checkpoint(where)
    whole = nn.Sequential(*mlp_layers())
    assert sorted(merged) == sorted(whole.state_dict())
    for name, value in pipe.state_dict().items():
        assert torch.equal(merged[name], value)
    fresh = par.Pipeline(mlp_layers(), mesh, F.mse_loss, micro_batches=2)
    fresh_opt = torch.optim.Adam(fresh.parameters(), lr=0.1)
    assert par.load_checkpoint(where, fresh, fresh_opt) == (7, None)
    for (name, a), b in zip(pipe.state_dict().items(), fresh.state_dict().values()):
        assert torch.equal(a, b), name
    assert fresh_opt.state_dict()["state"].keys() == opt.state_dict()["state"].keys()
    other = par.Pipeline(mlp_layers(extra=1), mesh, F.mse_loss, micro_batches=2)
    with pytest.raises(ValueError, match=r"saved with partition=\[4, 3\] but this pipeline has "
                                         r"partition=\[4, 4\]"):
        par.load_checkpoint(where, other)
    if hvd.rank() == 0:
        assert sorted(os.listdir(where)) == ["pp0-tp0", "pp1-tp0"]
