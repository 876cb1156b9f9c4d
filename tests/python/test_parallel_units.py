"""cohort.torch.parallel without a job: the schedules (simulated against each
other), the mesh's placement rule, the partition, and the tensor-parallel
layers and cross-entropy of a group of one, which must be the torch layers
they replace. Plain pytest (NP 0)."""
import itertools

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from cohort.torch.parallel import schedules
from cohort.torch.parallel import (ColumnParallelLinear, RowParallelLinear,
                                   VocabParallelEmbedding, vocab_parallel_cross_entropy)
from cohort.torch.parallel.mesh import layout, resolve_dims
from cohort.torch.parallel.pipeline import balanced_partition, uniform_partition

SHAPES = [("gpipe", p, m, 1) for p in (1, 2, 3, 4) for m in (1, 2, 4, 7)] + \
         [("1f1b", p, m, 1) for p in (1, 2, 3, 4) for m in (1, 2, 4, 7, 16)] + \
         [("interleaved", p, m, v) for p in (1, 2, 4) for v in (1, 2, 3) for m in (p, 2 * p, 4 * p)]


@pytest.mark.parametrize("schedule,p,m,v", SHAPES)
def test_every_schedule_runs_each_pass_once_and_never_deadlocks(schedule, p, m, v):
    for rank in range(p):
        acts = schedules.actions(schedule, p, m, rank, v)
        assert sorted(acts) == sorted(schedules.Action(k, c, mb) for k in "FB"
                                      for c in range(v) for mb in range(m))
        seen = set()
        for a in acts:  # a backward after its own forward
            if a.kind == "B":
                assert ("F", a.chunk, a.micro_batch) in seen
            seen.add((a.kind, a.chunk, a.micro_batch))
    schedules.simulate(schedule, p, m, v)  # raises on a deadlock


@pytest.mark.parametrize("schedule,p,m,v", SHAPES)
def test_simulated_bubble_is_the_textbook_fraction(schedule, p, m, v):
    # Equal forward and backward costs on every stage: the schedules reach
    # the formula exactly (the measured runs in bench/parallel add the costs
    # of real messages and Python).
    got = schedules.simulate(schedule, p, m, v, forward_time=1.0, backward_time=2.0)
    assert got["bubble"] == pytest.approx(schedules.textbook_bubble(p, m, v), abs=1e-9)


@pytest.mark.parametrize("p,m", [(2, 4), (4, 8), (4, 32), (3, 7)])
def test_1f1b_holds_at_most_p_minus_rank_micro_batches_and_gpipe_all(p, m):
    one = schedules.simulate("1f1b", p, m)["peak_in_flight"]
    gpipe = schedules.simulate("gpipe", p, m)["peak_in_flight"]
    assert one == [min(p - r, m) for r in range(p)]
    assert gpipe == [m] * p


def test_schedule_shapes_are_refused_with_the_numbers():
    with pytest.raises(ValueError, match=r"micro_batches \(6\) to be a multiple of the "
                                         r"pipeline's 4 ranks"):
        schedules.actions("interleaved", 4, 6, 0, 2)
    with pytest.raises(ValueError, match="virtual_stages=2 needs schedule='interleaved'"):
        schedules.actions("1f1b", 2, 4, 0, 2)
    with pytest.raises(ValueError, match="one of gpipe, 1f1b, interleaved, got 'zb'"):
        schedules.actions("zb", 2, 4, 0)
    with pytest.raises(ValueError, match="micro_batches must be at least 1, got 0"):
        schedules.actions("gpipe", 2, 0, 0)


def test_mesh_layout_puts_tensor_parallel_ranks_next_to_each_other():
    dims = {"dp": 2, "pp": 2, "tp": 2}
    coords = layout(8, dims)
    assert [c["tp"] for c in coords] == [0, 1] * 4
    assert [c["dp"] for c in coords] == [0, 0, 1, 1] * 2
    assert [c["pp"] for c in coords] == [0] * 4 + [1] * 4
    assert len({tuple(sorted(c.items())) for c in coords}) == 8
    other = layout(8, dims, order=("pp", "tp", "dp"))
    assert [c["pp"] for c in other] == [0, 1] * 4


def test_mesh_sizes_must_multiply_to_the_job_size():
    with pytest.raises(ValueError, match=r"Mesh\(dp=2, pp=2, tp=2\): dp\*pp\*tp = 8 but the job "
                                         r"has 4 ranks"):
        layout(4, {"dp": 2, "pp": 2, "tp": 2})
    with pytest.raises(ValueError, match=r"Mesh\(pp=3, tp=1\): pp\*tp = 3 does not divide the "
                                         r"job's 4 ranks"):
        resolve_dims(4, None, 3, 1)
    assert resolve_dims(8, None, 2, 2) == {"dp": 2, "pp": 2, "tp": 2}
    with pytest.raises(ValueError, match="tp must be a positive integer, got 0"):
        resolve_dims(4, None, 2, 0)


def test_uniform_partition_spreads_the_extra_layers_over_the_middle():
    assert uniform_partition(6, 2) == [3, 3]
    assert uniform_partition(6, 4) == [1, 2, 2, 1]
    assert uniform_partition(7, 4) == [2, 2, 2, 1]  # off-centre: away from the loss
    assert sum(uniform_partition(13, 5)) == 13


def test_balanced_partition_minimizes_the_largest_stage():
    gpt = [40960] + [198272] * 8 + [33024]  # embedding, 8 blocks, head
    assert balanced_partition(gpt, 4) == [3, 2, 2, 3]
    assert balanced_partition(gpt, 2) == [5, 5]
    assert balanced_partition([1] * 7, 4) == [1, 2, 2, 2]
    assert balanced_partition([9, 1, 1, 1, 1, 1], 2) == [1, 5]
    for costs, k in (([3, 1, 4, 1, 5, 9, 2, 6], 3), ([1] * 5, 5), ([7, 7, 1], 2)):
        counts = balanced_partition(costs, k)
        assert len(counts) == k and sum(counts) == len(costs) and min(counts) >= 1
        best = min(max(sum(costs[a:b]) for a, b in zip((0,) + cuts, cuts + (len(costs),)))
                   for cuts in itertools.combinations(range(1, len(costs)), k - 1))
        bounds = list(itertools.accumulate(counts, initial=0))
        assert max(sum(costs[a:b]) for a, b in zip(bounds, bounds[1:])) == best
    with pytest.raises(ValueError, match="3 layers cannot fill 4 stages"):
        balanced_partition([1, 2, 3], 4)


def test_layers_of_one_rank_are_the_torch_layers_for_a_seed():
    torch.manual_seed(3)
    ref = nn.Linear(6, 10)
    torch.manual_seed(3)
    col = ColumnParallelLinear(6, 10)
    torch.manual_seed(3)
    row = RowParallelLinear(6, 10)
    for layer in (col, row):
        assert torch.equal(layer.weight, ref.weight) and torch.equal(layer.bias, ref.bias)
    torch.manual_seed(4)
    emb = nn.Embedding(12, 5)
    torch.manual_seed(4)
    assert torch.equal(VocabParallelEmbedding(12, 5).weight, emb.weight)
    x = torch.randn(3, 6)
    assert torch.allclose(col(x), ref(x)) and torch.allclose(row(x), ref(x))


def test_vocab_cross_entropy_of_one_rank_is_torchs_with_its_gradient():
    logits = torch.randn(5, 3, 11, dtype=torch.float64, requires_grad=True)
    target = torch.randint(0, 11, (5, 3))
    ours = vocab_parallel_cross_entropy(logits, target)
    theirs = F.cross_entropy(logits.reshape(-1, 11), target.reshape(-1), reduction="none")
    assert torch.allclose(ours.reshape(-1), theirs, rtol=1e-12)
    g_ours, = torch.autograd.grad(ours.square().sum(), logits)
    g_theirs, = torch.autograd.grad(theirs.square().sum(), logits)
    assert torch.allclose(g_ours, g_theirs, rtol=1e-10)


@pytest.mark.parametrize("p,m,v", [s for s in itertools.product((2, 4), (8, 16), (1, 2, 4))])
def test_interleaving_divides_the_simulated_ramp_by_v(p, m, v):
    # v chunks of 1/v of the stage's work each: the warm-up and cool-down
    # (the time beyond m micro-batches' work) shrink v times.
    plain = schedules.simulate("1f1b", p, m)["time"]
    inter = schedules.simulate("interleaved", p, m, v, forward_time=1.0 / v,
                               backward_time=2.0 / v)["time"]
    ideal = m * 3.0
    assert inter - ideal == pytest.approx((plain - ideal) / v)
