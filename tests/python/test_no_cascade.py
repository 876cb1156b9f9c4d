"""No cascade: tests/horovod/cascade_suite.py, a Horovod-shaped suite whose
tests 02, 06 and 08 go wrong on purpose on some ranks (04 diverges but
passes), runs as one `cohort run` job; exactly those three fail and every
other test passes on every rank, in every one of several runs, at 2 and 3
ranks. COHORT_DEADLOCK_TIME is short so the tests that block (02, 06) end
fast."""
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUITE = os.path.join(REPO, "tests", "horovod", "cascade_suite.py")
FAILING = {"test_02_fails_on_the_last_rank", "test_06_blocks_on_a_name_only_it_submitted",
           "test_08_raises_before_a_barrier_on_rank_0"}


def cohort_binary():
    build = os.environ.get("COHORT_BUILD_DIR", os.path.join(REPO, "build"))
    return os.path.join(build, "cohort")


def outcomes(xml_path):
    """test name -> "passed" or "failed" (failure or error, teardown too)."""
    out = {}
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        bad = any(child.tag in ("failure", "error") for child in case)
        name = case.get("name")
        out[name] = "failed" if bad or out.get(name) == "failed" else "passed"
    return out


def run_suite(tmp_path, np, attempt):
    stage = tmp_path / ("np%d.%d" % (np, attempt))
    stage.mkdir()
    shutil.copy(SUITE, stage / "cascade_suite.py")
    env = dict(os.environ, COHORT_DEADLOCK_TIME="1",
               PYTHONPATH=os.path.join(REPO, "python"))
    cmd = [cohort_binary(), "run", "-np", str(np), "--timeout", "60", "--", "bash", "-c",
           "exec %s -m pytest -q -p no:cacheprovider --junitxml=rank$COHORT_RANK.xml "
           "cascade_suite.py" % sys.executable]
    done = subprocess.run(cmd, cwd=stage, env=env, capture_output=True, text=True, timeout=240)
    got = {}
    for r in range(np):
        path = stage / ("rank%d.xml" % r)
        assert path.exists(), "rank %d wrote no results:\n%s%s" % (r, done.stdout, done.stderr)
        got[r] = outcomes(path)
    return got, done


@pytest.mark.parametrize("np,runs", [(2, 3), (3, 1)])
def test_only_the_failing_tests_fail_on_every_run(tmp_path, np, runs):
    for attempt in range(runs):
        got, done = run_suite(tmp_path, np, attempt)
        for r in range(np):
            assert len(got[r]) == 10, (r, got[r], done.stdout)
            failed = {name for name, kind in got[r].items() if kind == "failed"}
            # Every rank sees each of them fail (in the test or its tearDown).
            assert failed == FAILING, "run %d, rank %d: %s\n%s" % (attempt, r, got[r],
                                                                  done.stdout)
        assert done.returncode != 0  # pytest reported the failures
