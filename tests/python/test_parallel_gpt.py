"""examples/gpt_parallel.py trained 20 steps in each layout gives the loss
curve of the unsharded model in one process (relative 1e-4, float32): pp=2
(GPipe), tp=2 (sequence parallel), pp=2 x tp=2 (1F1B), dp=2 x pp=2 (ZeRO-1),
dp=2 x tp=2 (ZeRO-2), interleaved with 2 virtual stages per rank
(recomputing activations); the merged sharded checkpoint equals the
unsharded model's state_dict; a run checkpointed at dp=2 x pp=2 resumes at
pp=2 alone (the data-parallel dimension restarted at another size) on the
same curve. Plain pytest (NP 0): each layout is its own `cohort run`."""
import json
import os
import re
import subprocess
import sys

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("COHORT_BUILD_DIR", os.path.join(ROOT, "build"))
EXAMPLE = os.path.join(ROOT, "examples", "gpt_parallel.py")
STEPS = 20
RTOL = 1e-4


def run(np_, *args, timeout=240):
    """(losses by step, result) of one run of the example."""
    env = dict(os.environ, COHORT_BUILD_DIR=BUILD, PYTHONPATH=os.path.join(ROOT, "python"))
    command = [sys.executable, EXAMPLE, *args]
    if np_:
        command = [os.path.join(BUILD, "cohort"), "run", "-np", str(np_), "--timeout", "60",
                   "--"] + command
    proc = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout
    losses = {int(s): float(x) for s, x in re.findall(r"step (\d+) loss (\S+)", proc.stdout)}
    results = re.findall(r"result: (.*)$", proc.stdout, re.M)
    assert len(results) == 1, proc.stdout
    return losses, json.loads(results[0])


@pytest.fixture(scope="module")
def reference():
    losses, result = run(0, "--steps", str(STEPS))
    assert sorted(losses) == list(range(STEPS)) and result["layout"] == "unsharded"
    assert losses[STEPS - 1] < losses[0] - 0.3  # it learns
    return losses


def same_curve(got, want, steps=range(STEPS)):
    assert sorted(got) == list(steps), got
    for step in steps:
        assert got[step] == pytest.approx(want[step], rel=RTOL), (step, got[step], want[step])


LAYOUTS = {
    "pp2-gpipe": (2, ["--pp", "2", "--schedule", "gpipe"]),
    "tp2-sequence-parallel": (2, ["--tp", "2", "--sequence-parallel"]),
    "dp2-pp2-zero1": (4, ["--dp", "2", "--pp", "2", "--zero", "1"]),
    "dp2-tp2-zero2": (4, ["--dp", "2", "--tp", "2", "--zero", "2"]),
    "pp2-interleaved-v2-recompute": (2, ["--pp", "2", "--schedule", "interleaved",
                                         "--virtual-stages", "2", "--recompute"]),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_layout_trains_on_the_unsharded_loss_curve(reference, layout, tmp_path):
    np_, args = LAYOUTS[layout]
    losses, result = run(np_, "--steps", str(STEPS), *args)
    same_curve(losses, reference)
    assert result["ranks"] == np_


def test_pp2_tp2_curve_and_merged_checkpoint_equal_the_unsharded_model(tmp_path):
    # SGD: Adam would turn the rounding noise of gradients that are zero in
    # exact arithmetic (attention's key bias) into steps of size lr.
    sgd = ["--steps", str(STEPS), "--optimizer", "sgd", "--lr", "0.05"]
    reference = run(0, *sgd, "--state-out", str(tmp_path / "state.pt"))[0], \
        torch.load(tmp_path / "state.pt")
    losses, result = run(4, *sgd, "--pp", "2", "--tp", "2",
                         "--checkpoint-dir", str(tmp_path / "ckpt"))
    same_curve(losses, reference[0])
    assert result["layout"] == "dp1-pp2-tp2"
    merged = tmp_path / "merged.pt"
    out = subprocess.run([sys.executable, "-m", "cohort.torch.parallel.merge",
                          str(tmp_path / "ckpt"), "--output", str(merged)],
                         env=dict(os.environ, COHORT_BUILD_DIR=BUILD,
                                  PYTHONPATH=os.path.join(ROOT, "python")),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    state, want = torch.load(merged), reference[1]
    assert sorted(state) == sorted(want)
    for name in want:  # relative to the tensor's size (elements near 0 differ more)
        error = (state[name] - want[name]).norm() / want[name].norm()
        assert error <= RTOL, (name, float(error))


def test_data_parallel_dimension_restarts_at_another_size(reference, tmp_path):
    ckpt = str(tmp_path / "ckpt")
    half = STEPS // 2
    first, _ = run(4, "--steps", str(half), "--dp", "2", "--pp", "2", "--zero", "1",
                   "--checkpoint-dir", ckpt)
    same_curve(first, reference, range(half))
    second, result = run(2, "--steps", str(STEPS - half), "--pp", "2", "--checkpoint-dir", ckpt)
    assert result["layout"] == "dp1-pp2-tp1"
    same_curve(second, reference, range(half, STEPS))
