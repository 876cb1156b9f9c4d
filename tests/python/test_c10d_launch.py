"""The "cohort" torch.distributed backend under each way of starting a job:
torchrun (env://), tcp:// and file:// init (`cohort run` with env:// is
how test_c10d.py runs); and a peer that
dies mid-job (a RuntimeError naming it on every other rank, never a hang).
Runs outside any job; each test starts its own (tests/python/c10d_job.py)."""
import os
import re
import socket
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "c10d_job.py")
BUILD = os.environ.get("COHORT_BUILD_DIR", os.path.join(HERE, "..", "..", "build"))
COHORT = os.path.join(BUILD, "cohort")
LIMIT = 90  # seconds a job may take before the test fails


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("COHORT_", "MASTER_", "TORCHELASTIC")) and
           k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")}
    env["COHORT_BUILD_DIR"] = BUILD
    return env


def expected_lines(size):
    return ["rank %d of %d: sum %d group %d" % (r, size, size * (size + 1) // 2,
                                                  size + 1 if r in (0, size - 1) else r + 1)
            for r in range(size)]


def lines_of(output):
    """Result lines, without a launcher's rank prefix ("[0] ", "[default0]:").
    Split at the prefixes too: torchrun's --tee can put two workers' lines on
    one line of its output when they finish at the same moment."""
    found = []
    for line in re.split(r"\n|\[(?:default)?\d+\]:? ?", output):
        i = line.find("rank ")
        if i >= 0 and (" of " in line or "caught" in line or "no error" in line):
            found.append(line[i:])
    return sorted(found)


def test_torchrun_env_init_and_elastic_restart():
    """Attempt 0 loses rank 1 after the first all_reduce; torchrun restarts
    both workers, which form a new job on a new cohort store."""
    port = free_port()
    # Debian's torchrun on Python 3.11 needs --redirects/--tee (Std.from_str).
    out = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "2",
         "--max_restarts", "1", "--monitor_interval", "0.5", "--master_addr", "127.0.0.1",
         "--master_port", str(port),
         "--redirects", "1", "--tee", "1", JOB, "env-fail-first"],
        env=clean_env(), capture_output=True, text=True, timeout=LIMIT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert lines_of(out.stdout) == expected_lines(2), out.stdout


@pytest.mark.parametrize("method", ["tcp", "file"])
def test_tcp_and_file_init(method, tmp_path):
    size = 2
    init = ("tcp://127.0.0.1:%d" % free_port() if method == "tcp" else
            "file://" + str(tmp_path / "rendezvous"))
    procs = [subprocess.Popen([sys.executable, JOB, init, str(r), str(size)], env=clean_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in range(size)]
    outputs = []
    try:
        for p in procs:
            outputs.append(p.communicate(timeout=LIMIT)[0])
    finally:
        for p in procs:
            p.kill()
    assert all(p.returncode == 0 for p in procs), "\n".join(outputs)
    assert lines_of("\n".join(outputs)) == expected_lines(size), outputs


def test_cohort_run_env_init_assumes_no_port():
    """Under `cohort run`, env:// without MASTER_ADDR/MASTER_PORT: rank 0
    serves torch's store at its own address on a port the kernel picks, so
    a taken port (here the one after cohort's store's) changes nothing."""
    out = subprocess.run([COHORT, "run", "-np", "2", "--timeout", "60", "--", sys.executable, JOB,
                          "env-port-taken"], env=clean_env(), capture_output=True, text=True,
                         timeout=LIMIT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert lines_of(out.stdout) == expected_lines(2), out.stdout


def test_peer_death_is_an_error_naming_it_on_every_rank():
    env = clean_env()
    env["COHORT_TIMEOUT"] = "20"
    out = subprocess.run([COHORT, "run", "-np", "3", "--timeout", "60", "--", sys.executable,
                          JOB, "peer-death"], env=env, capture_output=True, text=True,
                         timeout=LIMIT)
    found = lines_of(out.stdout)
    assert [line[:15] for line in found] == ["rank 0 caught: ", "rank 2 caught: "], out.stdout
    for line in found:
        assert "rank 1" in line, line


@pytest.mark.parametrize("transport", ["shm", "tcp"])
def test_peer_death_during_recv_is_an_error_naming_it(transport):
    env = clean_env()
    env["COHORT_TIMEOUT"] = "20"
    out = subprocess.run([COHORT, "run", "-np", "2", "--timeout", "60", "--transport", transport,
                          "--", sys.executable, JOB, "p2p-peer-death"], env=env,
                         capture_output=True, text=True, timeout=LIMIT)
    found = lines_of(out.stdout)
    assert len(found) == 1 and found[0].startswith("rank 0 caught: cohort recv: point-to-point: "
                                                   "lost rank 1 "), out.stdout + out.stderr
