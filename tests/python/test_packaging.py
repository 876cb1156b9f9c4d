"""The package installs like one: `pip install` of the source tree into a
virtual environment (reusing this build through COHORT_BUILD_DIR) gives an
importable `cohort` that carries its extension modules, libcohort.so and the
`cohort` launcher, and runs a 2-rank job from outside the checkout without
PYTHONPATH or COHORT_BUILD_DIR. Runs as plain pytest, with deadlines."""
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("COHORT_BUILD_DIR", os.path.join(REPO, "build"))


def test_pip_install_into_a_venv_runs_a_job(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True, timeout=120)
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-build-isolation",
                          "--no-deps", "--no-index", REPO],
                         env=dict(os.environ, COHORT_BUILD_DIR=BUILD), capture_output=True,
                         text=True, timeout=300)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    # A user's environment: no source checkout on the path, no build directory.
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "COHORT_BUILD_DIR") and not k.startswith("COHORT_")}
    python = str(venv / "bin" / "python")
    where = subprocess.run([python, "-c", "import cohort; print(cohort.__file__)"], env=env,
                           cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert where.returncode == 0, where.stderr
    assert where.stdout.strip().startswith(str(venv)), where.stdout
    job = subprocess.run([str(venv / "bin" / "cohort"), "run", "-np", "2", "--timeout", "30", "--",
                          python, "-c", "import cohort, numpy as np; cohort.init(); "
                          "print('sum', cohort.allreduce(np.ones(2), op=cohort.Sum).tolist())"],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=90)
    assert job.returncode == 0, job.stdout + job.stderr
    assert job.stdout.count("sum [2.0, 2.0]") == 2, job.stdout
