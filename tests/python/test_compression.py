"""Compression.powersgd and Compression.topk (cohort.torch): the reduced
gradients against a plain torch reference that sees every rank's gradients,
error feedback making the accumulated update converge to the uncompressed
one, training on a quadratic through DistributedOptimizer, and the state
kept in the optimizer's state_dict. Runs under `cohort run -np 2` and
`-np 3` (tests/python/CMakeLists.txt)."""
import copy

import numpy as np
import pytest
import torch

from compression_reference import (assert_results_close, reference_powersgd, reference_topk,
                                   run_reducer)

@pytest.fixture(scope="module")
def comm(hvd):
    from cohort.torch.reducer_comm import EngineComm
    return EngineComm(None)


@pytest.mark.parametrize("rank,start_iter", [(1, 0), (2, 2), (4, 1)])
def test_powersgd_matches_the_reference(hvd, comm, rank, start_iter):
    from cohort.torch import Compression
    reducer = Compression.powersgd(rank=rank, start_iter=start_iter, min_compression_rate=1.5)
    ours = run_reducer(reducer, comm, 5, hvd.rank())
    assert_results_close(ours, reference_powersgd(hvd.size(), 5, rank, start_iter, 1.5))
    assert "a.weight" in reducer.q  # 1-D and tiny ones are sent as they are
    assert "b.bias" not in reducer.q and "c.weight" not in reducer.q


@pytest.fixture
def kernel_calls(monkeypatch):
    """Counts the calls of cohort's PowerSGD kernels (each phase's; the
    test matrices are below powersgd_passes.PARALLEL_ELEMENTS, so one call
    per matrix and pass)."""
    from cohort import _cohort
    import cohort.torch.powersgd_passes as passes
    calls = {"project": 0, "project_back": 0, "approximate": 0}

    class Counting:
        def __getattr__(self, name):
            phase = name[len("powersgd_"):]
            if phase in calls:
                calls[phase] += 1
            return getattr(_cohort, name)
    monkeypatch.setattr(passes, "_cohort", Counting())
    return calls


@pytest.mark.parametrize("rank,start_iter", [(1, 0), (2, 2), (4, 1)])
def test_powersgd_float32_kernels_match_the_reference(hvd, comm, rank, start_iter, kernel_calls):
    """float32 gradients in host memory go through cohort's kernels
    (cohort.h, PowerSgdProject): the same results as the float64 reference
    to float32 rounding, at ranks 1, 2 and 4 (a rank above 1 transposes Q
    into a buffer of its own; a first version freed it before the kernel
    read it, and this test failed at ranks 2 and 4)."""
    from cohort.torch import Compression
    reducer = Compression.powersgd(rank=rank, start_iter=start_iter, min_compression_rate=1.5)
    ours = run_reducer(reducer, comm, 5, hvd.rank(), dtype=torch.float32)
    ref = reference_powersgd(hvd.size(), 5, rank, start_iter, 1.5, dtype=torch.float32)
    assert_results_close(ours, ref, rtol=2e-4, atol=2e-5)
    calls = len(reducer.q) * (5 - start_iter)  # each compressed matrix, each compressed step
    assert kernel_calls == {"project": calls, "project_back": calls, "approximate": calls}
    assert "e.weight" in reducer.q
    assert all(e.dtype == torch.float32 for e in reducer.error.values())


@pytest.mark.parametrize("error_feedback", [True, False])
def test_powersgd_kernels_and_torch_operators_agree(hvd, comm, error_feedback, monkeypatch):
    """The two ways to the same arithmetic: cohort's kernels on float32 and
    torch's operators (what other dtypes and GPU tensors take), with and
    without error feedback; errors too."""
    import cohort.torch.powersgd as powersgd
    from cohort.torch import Compression

    def run(kernels):
        if not kernels:
            monkeypatch.setattr(powersgd, "_kernels_fit", lambda *tensors: False)
        reducer = Compression.powersgd(rank=2, start_iter=1, min_compression_rate=1.5,
                                       error_feedback=error_feedback)
        out = run_reducer(reducer, comm, 4, hvd.rank(), dtype=torch.float32)
        monkeypatch.undo()
        return out, reducer

    (ours, with_kernels), (theirs, with_torch) = run(True), run(False)
    assert_results_close(ours, [{k: v.double() for k, v in step.items()} for step in theirs],
                         rtol=1e-5, atol=1e-6)
    assert sorted(with_kernels.error) == sorted(with_torch.error)
    assert bool(with_kernels.error) == error_feedback
    for name, err in with_kernels.error.items():
        torch.testing.assert_close(err, with_torch.error[name], rtol=1e-5, atol=1e-5)


def test_powersgd_row_blocks_on_several_threads_match_one_call(hvd, comm, monkeypatch):
    """With several torch threads a matrix is cut into row blocks run at
    once (powersgd_passes.py): the same results as one call per pass, to
    float32 rounding (the back-projection adds the blocks' partial sums)."""
    import cohort.torch.powersgd_passes as passes
    from cohort.torch import Compression

    def run(parallel_elements):
        monkeypatch.setattr(passes, "PARALLEL_ELEMENTS", parallel_elements)
        reducer = Compression.powersgd(rank=2, start_iter=1, min_compression_rate=1.5)
        return run_reducer(reducer, comm, 4, hvd.rank(), dtype=torch.float32), reducer

    threads = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        (blocks, split), (whole, _) = run(1), run(1 << 40)
    finally:
        torch.set_num_threads(threads)
    assert split._passes._workers == 2  # 3 blocks: 2 on the pool, 1 on the caller
    assert_results_close(blocks, [{k: v.double() for k, v in step.items()} for step in whole],
                         rtol=1e-5, atol=1e-6)


def test_powersgd_state_of_another_dtype_joins_the_kernels(hvd, comm, kernel_calls):
    """A warm start and errors saved by a float64 run, loaded into a float32
    one, are converted (the kernels read float32 memory) and continue as
    the float64 reducer would, to float32 rounding."""
    from compression_reference import gradients
    from cohort.torch import Compression

    def reducer():
        return Compression.powersgd(rank=2, start_iter=0, min_compression_rate=1.5)
    before = reducer()
    run_reducer(before, comm, 2, hvd.rank())  # float64 state
    after = reducer()
    after.load_state_dict(before.state_dict())
    for step in range(2, 4):
        grads32 = gradients(hvd.rank(), step, torch.float32)
        grads64 = {n: g.double() for n, g in grads32.items()}
        names = sorted(grads32)
        after.reduce(names, [grads32[n] for n in names], comm)
        before.reduce(names, [grads64[n] for n in names], comm)
        for n in names:
            torch.testing.assert_close(grads32[n].double(), grads64[n], rtol=1e-4, atol=1e-5)
    assert kernel_calls["project"] == 2 * len(after.q)
    assert {t.dtype for t in list(after.q.values()) + list(after.error.values())} == {
        torch.float32}


def test_topk_momentum_where_gradients_are_averaged_dense(hvd):
    """On one host (every test rank) scope "auto" averages dense: top-k's
    momentum correction still applies the momentum, so training equals
    plain momentum SGD (an optimizer without momentum would otherwise train
    with none at all)."""
    from cohort.torch import Compression
    with pytest.warns(UserWarning, match="every rank is on one host"):
        corrected, _, _ = train_quadratic(hvd, Compression.topk(0.05, momentum=0.5), 6)
    plain, _, _ = train_quadratic(hvd, Compression.none, 6, momentum=0.5)
    torch.testing.assert_close(corrected["w"], plain["w"], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(corrected["b"], plain["b"], rtol=1e-5, atol=1e-6)


def test_topk_momentum_on_one_rank(hvd):
    """A job of one rank reduces nothing, and top-k's momentum correction
    still applies the momentum (a process of its own, started without a
    launcher: size 1)."""
    import os
    import subprocess
    import sys
    if hvd.rank() != 0:
        return
    here = os.path.dirname(os.path.abspath(__file__))
    code = ("import cohort.torch as hvd, test_compression as t; hvd.init(); "
            "a, _, _ = t.train_quadratic(hvd, hvd.Compression.topk(0.05, momentum=0.5), 6); "
            "b, _, _ = t.train_quadratic(hvd, hvd.Compression.none, 6, momentum=0.5); "
            "print(hvd.size(), float((a['w'] - b['w']).abs().max()))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("COHORT_") or
           k == "COHORT_BUILD_DIR"}
    env["PYTHONPATH"] = os.pathsep.join([here, env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    size, gap = out.stdout.split()[-2:]
    assert size == "1" and float(gap) == 0.0, out.stdout


def test_powersgd_kernels_name_bad_arguments(hvd):
    """The binding's arguments are checked in C++ (a caller that is not
    powersgd.py): null addresses and zero sizes are named."""
    from cohort import CohortValueError, _cohort
    m, p, q_t = torch.ones(4, 3), torch.empty(4, 1), torch.ones(1, 3)
    with pytest.raises(CohortValueError, match="PowerSgdProject: the matrix m is null"):
        _cohort.powersgd_project(0, 0, 4, 3, 1, q_t.data_ptr(), p.data_ptr())
    with pytest.raises(CohortValueError, match=r"PowerSgdProjectBack: rows, cols and rank must "
                                                r"be at least 1, got 4 x 3 at rank 0"):
        _cohort.powersgd_project_back(m.data_ptr(), 4, 3, 0, p.data_ptr(), q_t.data_ptr())
    with pytest.raises(CohortValueError, match="PowerSgdApproximate: q_t is null"):
        _cohort.powersgd_approximate(m.data_ptr(), 0, 4, 3, 1, p.data_ptr(), 0)
    _cohort.powersgd_project(m.data_ptr(), 0, 4, 3, 1, q_t.data_ptr(), p.data_ptr())
    assert p.flatten().tolist() == [3.0] * 4


@pytest.mark.parametrize("ratio", [0.05, 0.3])
def test_topk_matches_the_reference(hvd, comm, ratio):
    from cohort.torch import Compression
    reducer = Compression.topk(ratio)
    ours = run_reducer(reducer, comm, 4, hvd.rank())
    assert_results_close(ours, reference_topk(hvd.size(), 4, ratio))


@pytest.mark.parametrize("momentum,warmup_steps", [(0.9, 0), (0.0, 3), (0.9, 3)])
def test_topk_momentum_correction_and_warmup_match_the_reference(hvd, comm, momentum,
                                                                 warmup_steps):
    """Deep Gradient Compression's options: the velocity sparsified and
    masked where sent, dense tensors carrying it too; the kept share falling
    from all to `ratio` over the warm-up (steps 0-2 keep 100%, 37%, 14%)."""
    from cohort.torch import Compression
    reducer = Compression.topk(0.05, momentum=momentum, warmup_steps=warmup_steps)
    ours = run_reducer(reducer, comm, 6, hvd.rank())
    assert_results_close(ours, reference_topk(hvd.size(), 6, 0.05, momentum=momentum,
                                              warmup_steps=warmup_steps))
    assert bool(reducer.velocity) == bool(momentum)
    assert reducer.iter == 6 and reducer.density() == 0.05


def accumulated_gaps(hvd, comm, reducer, checkpoints):
    """Relative distances, after each of `checkpoints` steps, between the sum
    of the reduced updates of a constant gradient (different on every rank)
    and as many times their mean."""
    gen = [torch.Generator().manual_seed(5 + r) for r in range(hvd.size())]
    grads = [torch.randn(24, 16, generator=g, dtype=torch.float64) for g in gen]
    mean = sum(grads) / hvd.size()
    total = torch.zeros_like(mean)
    gaps = []
    for step in range(1, max(checkpoints) + 1):
        g = grads[hvd.rank()].clone()
        reducer.reduce(["w"], [g], comm)
        total += g
        if step in checkpoints:
            gaps.append(((total - step * mean).norm() / (step * mean.norm())).item())
    return gaps


@pytest.mark.parametrize("make", ["topk", "powersgd"])
def test_error_feedback_makes_the_accumulated_update_converge(hvd, comm, make):
    """With error feedback the gap shrinks like 1/steps (what was not sent
    is sent later); without, it stays."""
    from cohort.torch import Compression

    def reducer(error_feedback):
        if make == "topk":
            return Compression.topk(0.05, error_feedback=error_feedback)
        return Compression.powersgd(rank=1, start_iter=0, error_feedback=error_feedback)
    early, late = accumulated_gaps(hvd, comm, reducer(True), (200, 800))
    assert late < 0.02 and late < 0.4 * early, (early, late)
    _, without = accumulated_gaps(hvd, comm, reducer(False), (200, 800))
    assert without > 0.2, without


def train_quadratic(hvd, compression, steps, state=None, momentum=0.0, groups=None):
    """SGD on 0.5 ||W - T_r||^2 + 0.5 ||b - t_r||^2 (targets differ per rank):
    the averaged problem's minimum is (mean T_r, mean t_r). Returns the model,
    the optimizer and W averaged over the second half of the steps."""
    gen = torch.Generator().manual_seed(11 + hvd.rank())
    target_w, target_b = torch.randn(32, 24, generator=gen), torch.randn(24, generator=gen)
    model = torch.nn.ParameterDict({"w": torch.nn.Parameter(torch.zeros(32, 24)),
                                    "b": torch.nn.Parameter(torch.zeros(24))})
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1,
                                                   momentum=momentum),
                                   named_parameters=model.named_parameters(),
                                   compression=compression, groups=groups)
    if state is not None:
        model.load_state_dict(state[0])
        opt.load_state_dict(state[1])
    average = torch.zeros(32, 24)
    for step in range(steps):
        opt.zero_grad()
        loss = (0.5 * ((model["w"] - target_w) ** 2).sum() +
                0.5 * ((model["b"] - target_b) ** 2).sum())
        loss.backward()
        opt.step()
        if step >= steps // 2:
            average += model["w"].detach() / (steps - steps // 2)
    return model, opt, average


def mean_targets(hvd):
    ws, bs = [], []
    for r in range(hvd.size()):
        gen = torch.Generator().manual_seed(11 + r)
        ws.append(torch.randn(32, 24, generator=gen))
        bs.append(torch.randn(24, generator=gen))
    return sum(ws) / len(ws), sum(bs) / len(bs)


@pytest.mark.parametrize("make", ["none", "topk", "powersgd"])
def test_quadratic_reaches_the_uncompressed_minimum(hvd, make):
    """PowerSGD (rank 2) converges to the minimum as uncompressed SGD does.
    Top-k with a constant step keeps oscillating around it (each rank
    releases its accumulated error in bursts) but its iterates average to
    it, while without error feedback they settle elsewhere."""
    from cohort.torch import Compression
    compression = {"none": Compression.none, "topk": Compression.topk(0.05, scope="rank"),
                   "powersgd": Compression.powersgd(rank=2, start_iter=2, scope="rank")}[make]
    model, _, average = train_quadratic(hvd, compression, 400)
    w, b = mean_targets(hvd)
    assert (average - w).norm() / w.norm() < 0.03
    if make != "topk":
        assert (model["w"] - w).norm() / w.norm() < 1e-3
        assert (model["b"] - b).norm() / b.norm() < 1e-3
    else:
        _, _, biased = train_quadratic(
            hvd, Compression.topk(0.05, error_feedback=False, scope="rank"), 400)
        assert (biased - w).norm() / w.norm() > 0.3


@pytest.mark.parametrize("make", ["topk", "topk_momentum", "powersgd"])
def test_state_dict_carries_the_compression_state(hvd, make):
    """Training 4 steps, saving, and 3 more gives the same model as loading
    the saved state into a fresh optimizer and training 3 steps."""
    from cohort.torch import Compression

    def compression():
        if make == "topk":
            return Compression.topk(0.05, scope="rank")
        if make == "topk_momentum":  # the velocities are state too
            return Compression.topk(0.05, scope="rank", momentum=0.5, warmup_steps=2)
        return Compression.powersgd(rank=1, start_iter=1, scope="rank")
    momentum = 0.0 if make == "topk_momentum" else 0.5  # the optimizer's
    model, opt, _ = train_quadratic(hvd, compression(), 4, momentum=momentum)
    saved = (copy.deepcopy(model.state_dict()), copy.deepcopy(opt.state_dict()))
    assert saved[1]["cohort_compression"]["kind"] == make.split("_")[0]
    assert saved[1]["cohort_compression"]["error"]  # per-parameter errors kept
    assert bool(saved[1]["cohort_compression"].get("velocity")) == (make == "topk_momentum")
    continued, _, _ = train_quadratic(hvd, compression(), 7, momentum=momentum)
    restored, _, _ = train_quadratic(hvd, compression(), 3, state=saved, momentum=momentum)
    torch.testing.assert_close(restored["w"], continued["w"], rtol=0, atol=0)
    fresh_state = (saved[0], {k: v for k, v in saved[1].items() if k != "cohort_compression"})
    without, _, _ = train_quadratic(hvd, compression(), 3, state=fresh_state, momentum=momentum)
    assert not torch.equal(without["w"], continued["w"])  # the state mattered


@pytest.mark.parametrize("make", ["topk", "powersgd"])
def test_one_host_averages_uncompressed(hvd, make):
    """Every rank on one host: scope "auto" says so and averages exactly,
    with no compression and no errors kept."""
    from cohort.torch import Compression
    compression = Compression.topk(0.05) if make == "topk" else Compression.powersgd(
        rank=1, start_iter=0)
    with pytest.warns(UserWarning, match="every rank is on one host, so gradients are averaged "
                                         "uncompressed over shared memory"):
        model, opt, _ = train_quadratic(hvd, compression, 3)
    assert opt._reducer_mode == "dense" and not compression.error
    reference, _, _ = train_quadratic(hvd, Compression.none, 3)
    torch.testing.assert_close(model["w"], reference["w"], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("make", ["topk", "powersgd"])
def test_overlap_is_bit_identical_to_reducing_at_synchronize(hvd, make):
    """Gradients in 2 groups, each started when backward produced it, give
    the parameters that reducing both at synchronize() gives, bit for bit."""
    from cohort.torch import Compression

    def run(overlap):
        compression = (Compression.topk(0.05, scope="rank", overlap=overlap) if make == "topk"
                       else Compression.powersgd(rank=1, start_iter=1, scope="rank",
                                                 overlap=overlap))
        model, opt, _ = train_quadratic(hvd, compression, 6, groups=2)
        return model
    overlapped, at_sync = run(True), run(False)
    assert torch.equal(overlapped["w"], at_sync["w"]) and torch.equal(overlapped["b"],
                                                                      at_sync["b"])


def test_a_process_set_compresses_per_rank(hvd):
    """On a process set other than the global one the reducer compresses on
    every member (scope "auto"); "host" is refused; a rank outside the set
    still saves its state."""
    from cohort.torch import Compression
    ps = hvd.add_process_set([0, 1])
    try:
        model = torch.nn.Linear(40, 30)
        with pytest.raises(ValueError, match="with scope='host' works on the global process "
                                             "set only"):
            hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                     named_parameters=model.named_parameters(),
                                     compression=Compression.topk(0.05, scope="host"),
                                     process_set=ps)
        opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                       named_parameters=model.named_parameters(),
                                       compression=Compression.topk(0.05), process_set=ps)
        model(torch.ones(2, 40)).sum().backward()
        opt.step()
        state = opt.state_dict()["cohort_compression"]
        if hvd.rank() < 2:
            assert opt._reducer_mode == "rank" and state["layout"]["scope"] == "rank"
            assert state["error"]
        else:
            assert state["layout"] is None and not state["error"]
    finally:
        hvd.remove_process_set(ps)


def test_bad_arguments_are_named(hvd):
    from cohort.torch import Compression
    with pytest.raises(ValueError, match=r"ratio must be in \(0, 1\], got 0"):
        Compression.topk(0)
    with pytest.raises(ValueError, match="rank must be at least 1, got 0"):
        Compression.powersgd(rank=0)
    with pytest.raises(ValueError, match=r"momentum must be in \[0, 1\), got 1"):
        Compression.topk(0.1, momentum=1)
    with pytest.raises(ValueError, match=r"momentum must be in \[0, 1\), got '0.9'"):
        Compression.topk(0.1, momentum="0.9")
    with pytest.raises(ValueError, match="warmup_steps must be an int >= 0, got -1"):
        Compression.topk(0.1, warmup_steps=-1)
    with pytest.raises(ValueError, match="warmup_steps must be an int >= 0, got True"):
        Compression.topk(0.1, warmup_steps=True)
    assert Compression.topk(0.1, warmup_steps=np.int64(3)).warmup_steps == 3
    model = torch.nn.Linear(4, 4)
    with pytest.raises(ValueError, match=r"momentum=0.9\) applies the momentum before "
                                         r"sparsifying .* param group 1 has momentum=0.5"):
        hvd.DistributedOptimizer(
            torch.optim.SGD([{"params": [model.weight], "momentum": 0.0},
                             {"params": [model.bias], "momentum": 0.5}], lr=0.1),
            compression=Compression.topk(0.1, momentum=0.9))
    with pytest.raises(ValueError, match=r"param group 0 has betas, an Adam-like"):
        hvd.DistributedOptimizer(torch.optim.Adam(model.parameters()),
                                 compression=Compression.topk(0.1, momentum=0.9))
    with pytest.raises(ValueError, match="averages gradients"):
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                 compression=Compression.topk(0.1), op=hvd.Sum)
