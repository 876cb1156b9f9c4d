"""The examples at small size: the digits classifier reaches 95% test
accuracy on 2 workers and matches one worker on the same global batch; the
synthetic benchmark runs and reports. Runs outside any job (plain pytest);
each example is started with `cohort run`."""
import json
import os
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("COHORT_BUILD_DIR", os.path.join(ROOT, "build"))


def run_example(np, script, *args, timeout=150):
    # The digits example records itself: into a store of this test's own,
    # never the tester's ~/.cohort/tracking.db.
    store = os.path.join(tempfile.mkdtemp(prefix="cohort-examples-"), "tracking.db")
    env = dict(os.environ, COHORT_BUILD_DIR=BUILD, COHORT_TRACKING_URI="sqlite:" + store,
               PYTHONPATH=os.path.join(ROOT, "python"))
    proc = subprocess.run(
        [os.path.join(BUILD, "cohort"), "run", "-np", str(np), "--timeout", "60", "--",
         sys.executable, os.path.join(ROOT, "examples", script), *args],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout
    results = [line.split("result: ", 1)[1] for line in proc.stdout.splitlines()
               if "result: " in line]
    assert len(results) == 1, proc.stdout
    return json.loads(results[0])


@pytest.fixture(scope="module")
def digits_one_worker():
    return run_example(1, "pytorch_digits.py")


def test_digits_on_two_workers_matches_one_worker(digits_one_worker):
    two = run_example(2, "pytorch_digits.py")
    assert two["workers"] == 2 and digits_one_worker["workers"] == 1
    assert two["test_accuracy"] >= 0.95
    assert digits_one_worker["test_accuracy"] >= 0.95
    # Same global batch, same trajectory up to float rounding: at most 2 of
    # the 360 test images may be classified differently.
    assert abs(two["test_accuracy"] - digits_one_worker["test_accuracy"]) <= 2 / 360


@pytest.mark.parametrize("flags", [[], ["--use-adasum"]], ids=["average", "adasum"])
def test_synthetic_benchmark_reports_images_per_second(flags):
    result = run_example(2, "pytorch_synthetic_benchmark.py", "--model", "resnet18",
                         "--image-size", "32", "--batch-size", "4", "--num-warmup-batches", "1",
                         "--num-batches-per-iter", "2", "--num-iters", "2", *flags)
    assert result["workers"] == 2 and result["model"] == "resnet18"
    assert result["img_sec_per_worker"] > 0
    # Both are rounded to 2 decimals: they may differ by 0.01 at small rates.
    assert result["img_sec_total"] == pytest.approx(2 * result["img_sec_per_worker"], rel=1e-3,
                                                    abs=0.011)
