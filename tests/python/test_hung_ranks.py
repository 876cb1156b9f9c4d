"""A rank that hangs (SIGSTOP) or submits different names is named in the
error every other rank gets at COHORT_TIMEOUT, with its host and pid; the
error names the tensor. Runs as plain pytest: each case starts its own
`cohort run` with a short timeout and a deadline."""
import os
import signal
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


LOOP = """
    import sys, torch, cohort.torch as hvd
    hvd.init()
    for i in range(100000):
        if sys.argv[1] == "raise" and hvd.rank() == 1 and i == 20:
            raise ValueError("bad batch 20")
        try:
            hvd.allreduce(torch.ones(1000), name="x")
        except RuntimeError as e:
            print("ERROR", e, flush=True)
            raise
        if i == 20:
            print("running", flush=True)
"""


def start_loop(tmp_path, case):
    script = tmp_path / "loop.py"
    script.write_text(textwrap.dedent(LOOP))
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"), COHORT_BUILD_DIR=BUILD)
    return subprocess.Popen([CLI, "run", "-np", "2", "--timeout", "60", "--", sys.executable,
                             str(script), case], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def test_ctrl_c_stops_python_workers_promptly(tmp_path):
    job = start_loop(tmp_path, "loop")
    try:
        seen = 0
        for line in job.stdout:  # both ranks are inside the loop
            seen += line.rstrip().endswith("] running")
            if seen == 2:
                break
        job.send_signal(signal.SIGINT)
        rest = job.communicate(timeout=60)[0]
    finally:
        job.kill()
    assert job.returncode == 130, rest
    for rank in (0, 1):
        assert re.search(r"^\[%d\] .*KeyboardInterrupt" % rank, rest, re.M), rest
    # Both workers left by themselves; none had to be killed.
    assert "SIGKILL" not in rest, rest


def test_uncaught_exception_on_one_rank_fails_the_others_with_its_reason(tmp_path):
    job = start_loop(tmp_path, "raise")
    out = job.communicate(timeout=90)[0]
    errors = errors_by_rank(subprocess.CompletedProcess([], 0, out, ""))
    assert re.search(r"rank 1 \(host [^,]+, pid \d+\) aborted: uncaught ValueError: bad batch 20",
                     errors.get("0", "")), out
    assert "rank 1" in out.splitlines()[-1], out  # cohort run blames rank 1
