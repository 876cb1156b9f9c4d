"""A rank that hangs (SIGSTOP) or submits different names is named in the
error every other rank gets at COHORT_TIMEOUT, with its host and pid; the
error names the tensor. Runs as plain pytest: each case starts its own
`cohort run` with a short timeout and a deadline."""
import os
import re
import subprocess
import sys
import textwrap

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("COHORT_BUILD_DIR", os.path.join(REPO, "build"))
CLI = os.path.join(BUILD, "cohort")

SCRIPT = """
    import os, signal, sys, time
    import torch, cohort.torch as hvd
    hvd.init()
    hvd.allreduce(torch.ones(2), name="warm")
    if sys.argv[1] == "stop" and hvd.rank() == 1:
        os.kill(os.getpid(), signal.SIGSTOP)
    name = "t.%d" % hvd.rank() if sys.argv[1] == "names" else "t"
    try:
        hvd.allreduce(torch.ones(2), name=name)
    except RuntimeError as e:
        print("ERROR", e, flush=True)
        # Leave only once every running rank has printed (a rank that exits
        # makes `cohort run` stop the others), with a deadline.
        open(os.path.join(sys.argv[2], str(hvd.rank())), "w").close()
        deadline = time.time() + 30
        while len(os.listdir(sys.argv[2])) < int(sys.argv[3]) and time.time() < deadline:
            time.sleep(0.05)
        os._exit(1)
"""


def run_job(tmp_path, case, np_=2):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(SCRIPT))
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"), COHORT_BUILD_DIR=BUILD)
    done = tmp_path / "done"
    done.mkdir()
    reporting = np_ - 1 if case == "stop" else np_
    return subprocess.run([CLI, "run", "-np", str(np_), "--timeout", "3", "--", sys.executable,
                           str(script), case, str(done), str(reporting)], env=env,
                          capture_output=True, text=True, timeout=90)


def errors_by_rank(out):
    return dict(re.findall(r"^\[(\d+)\] ERROR (.*)$", out.stdout, re.M))


def test_mismatched_names_name_the_other_ranks_and_their_names(tmp_path):
    out = run_job(tmp_path, "names", np_=3)
    errors = errors_by_rank(out)
    assert sorted(errors) == ["0", "1", "2"], out.stdout + out.stderr
    for rank, message in errors.items():
        assert "allreduce 't.%s' did not complete within 3 s (COHORT_TIMEOUT)" % rank in message
        others = [r for r in "012" if r != rank]
        for other in others:
            assert re.search(r"rank %s \(host [^,]+, pid \d+\)" % other, message), message
            assert "'t.%s'" % other in message, message


def test_stopped_rank_is_named_by_the_others(tmp_path):
    out = run_job(tmp_path, "stop")
    errors = errors_by_rank(out)
    assert "0" in errors, out.stdout + out.stderr
    assert re.search(r"rank 1 \(host [^,]+, pid \d+\)", errors["0"]), errors["0"]
