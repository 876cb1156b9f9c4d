"""cohort.warm: a script forked from a warm process behaves like `python3
SCRIPT` (argv, environment, working directory, stdio, exit status, signals,
death with its client), imports the preload list once, and runs as the
ranks of a `cohort run` job."""
import os
import signal
import subprocess
import sys
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("COHORT_BUILD_DIR", os.path.join(HERE, "..", "..", "build"))
COHORT = os.path.join(BUILD, "cohort")
DEADLINE_S = 60


def prepare(tmp_path, script):
    """The script, and an environment whose PYTHONPATH holds tmp_path (so each
    test has a warm server of its own) with a preload module that notes each
    import of it in tmp_path/imports."""
    (tmp_path / "heavy.py").write_text(
        "import os\nwith open(%r, 'a') as f:\n    f.write('%%d\\n' %% os.getpid())\n"
        % str(tmp_path / "imports"))
    (tmp_path / "script.py").write_text(textwrap.dedent(script))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tmp_path), os.path.join(HERE, "..", "..", "python")]))
    return env


def warm(*args):
    return [sys.executable, "-m", "cohort.warm", "--preload", "heavy", "--idle", "3", "--",
            *args]


def test_a_warm_script_behaves_like_python_script(tmp_path):
    env = prepare(tmp_path, """
        import os, sys
        print("argv", sys.argv, "cwd", os.getcwd(), "X", os.environ.get("X"), "stdin",
              sys.stdin.readline().strip(), "heavy", "heavy" in sys.modules)
        print("to stderr", file=sys.stderr)
        sys.exit(int(sys.argv[1]))
    """)
    for code in (3, 0):
        out = subprocess.run(warm("script.py", str(code)), input="line\n", capture_output=True,
                             text=True, env=dict(env, X=str(code)), cwd=tmp_path,
                             timeout=DEADLINE_S)
        assert out.returncode == code, out.stderr
        assert out.stdout == "argv ['script.py', '%d'] cwd %s X %d stdin line heavy True\n" % (
            code, tmp_path, code)
        assert out.stderr == "to stderr\n"
    # The preload list was imported once, by the warm server, not by each script.
    assert len((tmp_path / "imports").read_text().split()) == 1


def test_an_uncaught_exception_prints_its_traceback_and_exits_1(tmp_path):
    env = prepare(tmp_path, "raise ValueError('bad input')\n")
    out = subprocess.run(warm("script.py"), capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=DEADLINE_S)
    assert out.returncode == 1
    assert out.stderr.startswith("Traceback") and out.stderr.endswith(
        "ValueError: bad input\n"), out.stderr


def wait_line(proc):
    line = proc.stdout.readline()
    assert line, "the script ended before it was ready"
    return line.split()


def test_signals_reach_the_script_and_a_killed_client_takes_it_along(tmp_path):
    env = prepare(tmp_path, """
        import os, signal, sys, time
        def term(sig, frame):
            print("got SIGTERM", flush=True)
            sys.exit(0)
        signal.signal(signal.SIGTERM, term)
        print("ready", os.getpid(), flush=True)
        while True:
            time.sleep(0.05)
    """)
    client = subprocess.Popen(warm("script.py"), stdout=subprocess.PIPE, text=True, env=env,
                              cwd=tmp_path)
    assert wait_line(client)[0] == "ready"
    client.send_signal(signal.SIGTERM)
    assert client.stdout.readline() == "got SIGTERM\n"
    assert client.wait(timeout=DEADLINE_S) == 0

    client = subprocess.Popen(warm("script.py"), stdout=subprocess.PIPE, text=True, env=env,
                              cwd=tmp_path)
    pid = int(wait_line(client)[1])
    client.kill()
    client.wait(timeout=DEADLINE_S)
    deadline = time.monotonic() + DEADLINE_S
    while os.path.exists("/proc/%d" % pid) and \
            open("/proc/%d/stat" % pid).read().split(")")[-1].split()[0] != "Z":
        assert time.monotonic() < deadline, "the script outlived its killed client"
        time.sleep(0.05)

    # A script killed by a signal: its client ends by the same signal.
    (tmp_path / "script.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    out = subprocess.run(warm("script.py"), env=env, cwd=tmp_path, timeout=DEADLINE_S)
    assert out.returncode == -signal.SIGKILL


def test_ranks_of_a_cohort_run_job_start_warm(tmp_path):
    env = prepare(tmp_path, """
        import numpy as np
        import cohort
        cohort.init()
        total = cohort.allreduce(np.array([cohort.rank() + 1.0]), op=cohort.Sum)
        print("rank", cohort.rank(), "of", cohort.size(), "sum", float(total[0]))
        cohort.shutdown()
    """)
    for _ in range(2):
        out = subprocess.run([COHORT, "run", "-np", "2", "--timeout", "30", "--",
                              *warm("script.py")], capture_output=True, text=True, env=env,
                             cwd=tmp_path, timeout=DEADLINE_S)
        assert out.returncode == 0, out.stderr
        assert sorted(out.stdout.splitlines()) == ["[0] rank 0 of 2 sum 3.0",
                                                   "[1] rank 1 of 2 sum 3.0"]
    assert len((tmp_path / "imports").read_text().split()) == 1
