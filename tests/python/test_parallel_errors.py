"""A pipeline stage that raises, or whose rank is killed mid-schedule, is
named in the error every rank of the pipeline gets, within seconds (not at
COHORT_TIMEOUT, 60 s here). Plain pytest: each case is a 3-stage `cohort
run` whose ranks report their error and how long after the failure it came."""
import os
import re
import subprocess
import sys
import textwrap

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("COHORT_BUILD_DIR", os.path.join(REPO, "build"))
CLI = os.path.join(BUILD, "cohort")
# Far below COHORT_TIMEOUT: only a failure passed on at once arrives in time.
PROMPT_SECONDS = 15

SCRIPT = """
    import os, signal, sys, time
    import torch, torch.nn.functional as F
    from torch import nn
    import cohort.torch as hvd
    from cohort.torch import parallel

    # `cohort run` stops the others when a rank dies: they stay to report.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    case, done, reporting = sys.argv[1], sys.argv[2], int(sys.argv[3])
    hvd.init()
    rank = hvd.rank()  # the runtime is gone after the failure
    torch.set_num_threads(1)
    failing_stage = {"raise": 1, "kill": 2, "shape": 0}[case]

    class Trap(nn.Module):
        # Fails its stage in the forward of micro-batch 2 (the third call).
        def __init__(self, armed):
            super().__init__()
            self.armed, self.calls = armed, 0

        def forward(self, x):
            self.calls += 1
            if self.armed and self.calls == 3:
                with open(os.path.join(done, "failed-at"), "w") as f:
                    f.write(repr(time.time()))
                if case == "raise":
                    raise ValueError("boom")
                if case == "kill":
                    os.kill(os.getpid(), signal.SIGKILL)
                return x[:, :3]
            return x

    stages = [lambda s=s: nn.Sequential(nn.Linear(4, 4), Trap(s == failing_stage))
              for s in range(3)]
    pipe = parallel.Pipeline.from_stages(stages, parallel.Mesh(pp=3), F.mse_loss,
                                         micro_batches=4)
    try:
        pipe.train_step(torch.randn(8, 4), torch.randn(8, 4))
        print("NO ERROR", flush=True)
    except Exception as e:
        with open(os.path.join(done, "failed-at")) as f:
            late = time.time() - float(f.read())
        print("ERROR after %.1f s: %s" % (late, e), flush=True)
    open(os.path.join(done, str(rank)), "w").close()
    deadline = time.time() + 30
    while len(os.listdir(done)) < reporting + 1 and time.time() < deadline:
        time.sleep(0.05)
    os._exit(1)
"""


def errors_of(tmp_path, case, reporting):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(SCRIPT))
    done = tmp_path / "done"
    done.mkdir()
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"), COHORT_BUILD_DIR=BUILD)
    out = subprocess.run([CLI, "run", "-np", "3", "--timeout", "60", "--", sys.executable,
                          str(script), case, str(done), str(reporting)], env=env,
                         capture_output=True, text=True, timeout=150)
    found = re.findall(r"^\[(\d+)\] ERROR after ([\d.]+) s: (.*)$", out.stdout, re.M)
    return {int(rank): (float(late), message) for rank, late, message in found}, out


def test_a_stage_that_raises_is_named_on_every_rank_at_once(tmp_path):
    errors, out = errors_of(tmp_path, "raise", 3)
    assert sorted(errors) == [0, 1, 2], out.stdout + out.stderr
    for rank, (late, message) in errors.items():
        assert "pipeline stage 1 (rank 1) of 3 stages failed in forward of micro-batch 2: " \
               "ValueError: boom" in message, (rank, message)
        assert late < PROMPT_SECONDS, (rank, late, message)


def test_a_killed_rank_is_named_by_every_other_rank_at_once(tmp_path):
    errors, out = errors_of(tmp_path, "kill", 2)
    assert sorted(errors) == [0, 1], out.stdout + out.stderr
    for rank, (late, message) in errors.items():
        assert re.search(r"rank 2 \(host [^,]+, pid \d+\)", message), (rank, message)
        assert "exited" in message, (rank, message)
        assert late < PROMPT_SECONDS, (rank, late, message)
    # The rank next to it waited for its gradient; the first stage learns it from the middle one.
    assert "waiting for micro-batch" in errors[1][1] and "from stage 2 (rank 2)" in errors[1][1]
    assert "pipeline stage 1 (rank 1) of 3 stages failed" in errors[0][1]


def test_a_micro_batch_of_another_shape_is_refused_on_every_rank(tmp_path):
    errors, out = errors_of(tmp_path, "shape", 3)
    assert sorted(errors) == [0, 1, 2], out.stdout + out.stderr
    for rank, (late, message) in errors.items():
        assert "pipeline stage 0 (rank 0) of 3 stages failed in forward of micro-batch 2: " \
               "ValueError: micro-batch 2's output is [2, 3] torch.float32 but micro-batch 0's was [2, 4] " \
               "torch.float32" in message, (rank, message)
