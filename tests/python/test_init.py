"""cohort.init() from Python as a newcomer meets it: without a launcher the
script is one process (rank 0 of 1); every failed init raises CohortError or
CohortValueError with the runtime's message (never a crash); init after
shutdown works any number of times, also with several ranks. Runs as plain
pytest: each case starts its own interpreter (or `cohort run`) with a
deadline."""
import os
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("COHORT_BUILD_DIR", os.path.join(REPO, "build"))
CLI = os.path.join(BUILD, "cohort")
LAUNCHER_VARS = ("COHORT_", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_",
                 "OMPI_", "SLURM_", "TORCHELASTIC_", "PMI_")


def clean_env(**extra):
    """This environment without any launcher's variables, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(LAUNCHER_VARS)}
    env["PYTHONPATH"] = os.path.join(REPO, "python")
    env["COHORT_BUILD_DIR"] = BUILD
    env.update(extra)
    return env


def run_python(code, env, timeout=60):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=timeout)


INIT_AND_REPORT = """
    import cohort
    try:
        cohort.init()
    except cohort.CohortError as e:
        print("RAISED", type(e).__name__, isinstance(e, ValueError), e)
        raise SystemExit(3)
    print("OK", cohort.rank(), cohort.size())
"""


def test_no_launcher_is_rank_0_of_1():
    out = run_python("""
        import numpy as np, cohort
        cohort.init()
        print(cohort.rank(), cohort.size(), cohort.local_rank(), cohort.local_size(),
              cohort.allreduce(np.arange(3.0), op=cohort.Sum).tolist())
        cohort.shutdown()
    """, clean_env())
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0] == "0 1 0 1 [0.0, 1.0, 2.0]"
    assert "COHORT_SECRET" not in out.stderr  # no warning: the private store needs none


def test_torchrun_style_single_process_needs_no_master_addr():
    out = run_python(INIT_AND_REPORT, clean_env(RANK="0", WORLD_SIZE="1"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip() == "OK 0 1"


@pytest.mark.parametrize("extra,message,value_error", [
    ({"RANK": "0"}, "RANK is set but WORLD_SIZE is not", True),
    ({"RANK": "0", "WORLD_SIZE": "2"}, "MASTER_ADDR is not set", True),
    ({"COHORT_TCP_STREAMS": "99"}, "COHORT_TCP_STREAMS must be between 1 and 16, not 99", True),
    ({"COHORT_SHM_SLOT_BYTES": "0"}, "COHORT_SHM_SLOT_BYTES must be positive", True),
    ({"COHORT_CHUNK_BYTES": "0"}, "COHORT_CHUNK_BYTES must be positive", True),
    ({"COHORT_FUSION_THRESHOLD": "-1"}, "COHORT_FUSION_THRESHOLD", True),
    ({"COHORT_TIMEOUT": "abc"}, "COHORT_TIMEOUT", True),
])
def test_bad_environment_raises_with_the_runtime_message(extra, message, value_error):
    out = run_python(INIT_AND_REPORT, clean_env(**extra))
    assert out.returncode == 3, "exit %d: %s%s" % (out.returncode, out.stdout, out.stderr)
    assert message in out.stdout
    assert ("True" in out.stdout.split()[2]) == value_error


def test_peer_that_never_joins_times_out_with_a_message():
    # Rank 0 of 2 under torchrun's variables hosts the store; rank 1 never comes.
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = run_python(INIT_AND_REPORT, clean_env(RANK="0", WORLD_SIZE="2", LOCAL_RANK="0",
                                                LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                                                MASTER_PORT=str(port), COHORT_TIMEOUT="2"))
    assert out.returncode == 3, "exit %d: %s%s" % (out.returncode, out.stdout, out.stderr)
    assert "RAISED CohortError False" in out.stdout
    assert "rank 1" in out.stdout


def test_operation_before_init_and_after_shutdown_raises():
    out = run_python("""
        import numpy as np, cohort
        for when in ("before init", "after shutdown"):
            try:
                cohort.allreduce(np.ones(2))
            except (cohort.CohortError, ValueError) as e:
                print(when, "RAISED", e)
            if when == "before init":
                cohort.init()
                cohort.shutdown()
    """, clean_env())
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().split("\n")
    assert len(lines) == 2 and all("RAISED" in line for line in lines), out.stdout


REINIT = """
    import numpy as np, cohort
    for i in range(3):
        cohort.init()
        got = cohort.allreduce(np.ones(4) * (cohort.rank() + 1), op=cohort.Sum)
        assert got.tolist() == [float(sum(range(1, cohort.size() + 1)))] * 4, got
        cohort.shutdown()
    import torch, cohort.torch as hvd
    for i in range(2):
        hvd.init()
        assert hvd.allreduce(torch.ones(2), op=hvd.Sum).tolist() == [hvd.size()] * 2
        hvd.shutdown()
    print("REINIT OK", flush=True)
"""


@pytest.mark.parametrize("np_", [1, 2])
def test_init_after_shutdown_any_number_of_times(tmp_path, np_):
    script = tmp_path / "reinit.py"
    script.write_text(textwrap.dedent(REINIT))
    if np_ == 1:
        out = subprocess.run([sys.executable, str(script)], env=clean_env(), capture_output=True,
                             text=True, timeout=60)
    else:
        out = subprocess.run([CLI, "run", "-np", str(np_), "--timeout", "30", "--",
                              sys.executable, str(script)], env=clean_env(),
                             capture_output=True, text=True, timeout=90)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("REINIT OK") == np_
