"""The settings table as Python and `cohort config` see it, and
tools/check_settings.py, the check that no code reads a COHORT_* variable
outside the table (docs/configuration.md)."""
import os
import shutil
import subprocess
import sys

import pytest

from cohort import _cohort, settings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "tools", "check_settings.py")
CLI = os.path.join(os.environ["COHORT_BUILD_DIR"], "cohort")


def check(root):
    out = subprocess.run([sys.executable, CHECK, root], capture_output=True, text=True,
                         timeout=60)
    return out.returncode, out.stdout.splitlines()


def test_the_tree_reads_no_variable_outside_the_table():
    status, lines = check(ROOT)
    assert status == 0, "\n".join(lines)


def test_python_reads_the_cpp_table_and_the_fallback_is_the_same():
    table = _cohort.settings_table()
    rows = [(r["variable"], r["default"], r["scope"]) for r in table]
    assert rows == list(settings.FALLBACK_ROWS)
    assert settings.rows() == settings.FALLBACK_ROWS
    row = next(r for r in table if r["variable"] == "COHORT_TCP_STREAMS")
    assert (row["flag"], row["default"], row["scope"]) == ("--tcp-streams", "1", "runtime")
    assert settings.SWEEP_TRIAL == "COHORT_SWEEP_TRIAL"
    assert settings.RANK == "COHORT_RANK"


def test_python_refuses_a_variable_the_table_lacks(monkeypatch):
    monkeypatch.setenv("COHORT_NOT_A_SETTING", "1")
    with pytest.raises(KeyError, match="COHORT_NOT_A_SETTING is not in the settings table"):
        settings.text("COHORT_NOT_A_SETTING")
    monkeypatch.setenv("COHORT_CHUNK_BYTES", "")
    assert settings.text("COHORT_CHUNK_BYTES") == ""
    assert settings.value("COHORT_CHUNK_BYTES") == "256K"
    monkeypatch.delenv("COHORT_CHUNK_BYTES")
    assert not settings.is_set("COHORT_CHUNK_BYTES")
    assert settings.text("COHORT_CHUNK_BYTES", "x") == "x"


@pytest.fixture
def tree(tmp_path):
    """A copy of the table's files and python/cohort/settings.py, and an
    empty src/ and python/cohort to put a reader in."""
    for rel in ("src/common/settings.h", "src/common/settings.cc", "python/cohort/settings.py"):
        os.makedirs(tmp_path / os.path.dirname(rel), exist_ok=True)
        shutil.copy(os.path.join(ROOT, rel), tmp_path / rel)
    return tmp_path


def test_the_check_finds_a_cpp_reader_outside_the_table(tree):
    (tree / "src" / "reader.cc").write_text(
        '// A reader.\n#include <cstdlib>\n'
        'const char* a = std::getenv("COHORT_NEW_KNOB");\n'
        'const char* b = std::getenv("HOME");\n'
        'const char* c = std::getenv(name);\n'
        'const char* d = "COHORT_SWEEP_TRIAL";\n'
        'const char* e = "COHORT_TIMEOUT";  // a row: fine\n')
    status, lines = check(str(tree))
    assert status == 1
    assert lines[:-1] == [
        "src/reader.cc:3: COHORT_NEW_KNOB is not in the settings table (src/common/settings.cc)",
        'src/reader.cc:6: "COHORT_SWEEP_TRIAL" is written out: use setting::k* (common/settings.h)',
        'src/reader.cc:3: getenv("COHORT_NEW_KNOB") outside the settings table: read it with '
        "ReadSetting (common/settings.h) or through an EnvLookup",
        "src/reader.cc:5: getenv(name) outside the settings table: read it with ReadSetting "
        "(common/settings.h) or through an EnvLookup",
    ]


def test_the_check_finds_a_python_reader_outside_the_table(tree):
    (tree / "python" / "cohort" / "reader.py").write_text(
        "import os\n"
        'a = os.environ.get("COHORT_TIMEOUT")\n'
        'b = os.environ.get("HOME")\n'
        'c = "COHORT_RANK" in os.environ\n'
        'os.environ["COHORT_RANK"] = "0"\n'
        'd = os.getenv(name)\n'
        'e = "COHORT_NEW_KNOB"\n')
    status, lines = check(str(tree))
    assert status == 1
    assert sorted(lines[:-1]) == sorted([
        "python/cohort/reader.py:7: COHORT_NEW_KNOB is not in the settings table "
        "(src/common/settings.cc)",
        "python/cohort/reader.py:2: os.environ.get reads the environment outside the settings "
        "table: use cohort.settings",
        "python/cohort/reader.py:4: ... in os.environ reads the environment outside the settings "
        "table: use cohort.settings",
        "python/cohort/reader.py:6: os.getenv reads the environment outside the settings table: "
        "use cohort.settings",
    ])


def test_the_check_finds_a_fallback_row_that_differs(tree):
    path = tree / "python" / "cohort" / "settings.py"
    path.write_text(path.read_text().replace('("COHORT_TIMEOUT", "300", "runtime")',
                                             '("COHORT_TIMEOUT", "30", "runtime")'))
    status, lines = check(str(tree))
    assert status == 1
    assert lines[:-1] == [
        "python/cohort/settings.py: FALLBACK_ROWS has COHORT_TIMEOUT as ('30', 'runtime'), "
        "the table as ('300', 'runtime')"]


def config(*args, env=None):
    full = {k: v for k, v in os.environ.items()
            if not k.startswith("COHORT_") or k == "COHORT_BUILD_DIR"}
    full.update(env or {})
    return subprocess.run([CLI, "config", *args], capture_output=True, text=True, env=full,
                          timeout=60)


def rows_of(out):
    return {line.split()[0]: line.split(None, 3)[1:] for line in out.splitlines()[1:]}


def test_config_prints_each_value_and_where_it_came_from():
    out = config("--tcp-streams", "4", env={"COHORT_CHUNK_BYTES": "1M", "COHORT_SECRET": "s3cret"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0].split() == ["VARIABLE", "SCOPE", "SOURCE", "VALUE"]
    rows = rows_of(out.stdout)
    assert rows["COHORT_TCP_STREAMS"] == ["runtime", "flag", "4"]
    assert rows["COHORT_CHUNK_BYTES"] == ["runtime", "environment", "1M"]
    assert rows["COHORT_TIMEOUT"] == ["runtime", "default", "300"]
    assert rows["COHORT_RANK"] == ["launcher", "default", "(unset)"]
    assert rows["COHORT_SECRET"] == ["launcher", "environment", "(set, not shown)"]
    assert "s3cret" not in out.stdout
    assert len(rows) == len(_cohort.settings_table())


def test_config_names_a_value_it_does_not_accept():
    out = config("--scope", "runtime", env={"COHORT_TCP_STREAMS": "99"})
    assert out.returncode == 1
    assert rows_of(out.stdout)["COHORT_TCP_STREAMS"] == [
        "runtime", "environment",
        "99  <- not accepted: COHORT_TCP_STREAMS must be between 1 and 16, not 99"]
    assert {row[0] for row in rows_of(out.stdout).values()} == {"runtime"}


def test_config_usage_errors():
    out = config("--scope", "gpu")
    assert out.returncode == 2
    assert out.stderr.splitlines()[0] == (
        "cohort config: --scope 'gpu' is not runtime, launcher, loader, tracking, queue, "
        "sweep or testing")
    out = config("--no-such-flag", "1")
    assert out.returncode == 2
    assert out.stderr.splitlines()[0] == "cohort config: unknown option '--no-such-flag'"


# One server address (docs/configuration.md): COHORT_SERVER, with
# COHORT_TRACKING_URI and MLFLOW_TRACKING_URI as its aliases. Nothing
# listens on ports 1 and 2 of the loopback address.
def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("COHORT_", "MLFLOW_")) or k == "COHORT_BUILD_DIR"}
    env.update(extra)
    return env


def test_config_shows_where_the_server_address_came_from():
    env = clean_env(COHORT_TRACKING_URI="http://127.0.0.1:1/")
    out = subprocess.run([CLI, "config", "--scope", "queue"], capture_output=True, text=True,
                         env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert rows_of(out.stdout)["COHORT_SERVER"] == [
        "queue", "alias", "http://127.0.0.1:1  <- from COHORT_TRACKING_URI"]
    env = clean_env(COHORT_SERVER="http://127.0.0.1:2")
    out = subprocess.run([CLI, "config", "--scope", "tracking"], capture_output=True, text=True,
                         env=env, timeout=60)
    assert rows_of(out.stdout)["COHORT_TRACKING_URI"] == [
        "tracking", "default", "(unset)  <- runs go to http://127.0.0.1:2 (COHORT_SERVER)"]
    env = clean_env(COHORT_SERVER="http://127.0.0.1:2", MLFLOW_TRACKING_URI="http://127.0.0.1:1")
    out = subprocess.run([CLI, "config", "--scope", "queue"], capture_output=True, text=True,
                         env=env, timeout=60)
    assert rows_of(out.stdout)["COHORT_SERVER"] == [
        "queue", "environment",
        "http://127.0.0.1:2  <- warning: COHORT_SERVER=http://127.0.0.1:2 and "
        "MLFLOW_TRACKING_URI=http://127.0.0.1:1 name different servers: runs are tracked at "
        "http://127.0.0.1:1 (MLFLOW_TRACKING_URI); the queue, agents, pipelines and sweeps use "
        "http://127.0.0.1:2 (COHORT_SERVER). Unset one of them."]


def test_the_queue_takes_the_tracking_alias_and_clients_warn_when_they_disagree():
    out = subprocess.run([CLI, "queue"], capture_output=True, text=True, timeout=60,
                         env=clean_env(COHORT_TRACKING_URI="http://127.0.0.1:1"))
    assert out.returncode == 1
    assert out.stderr.startswith(
        "cohort queue: cannot reach the queue at http://127.0.0.1:1 (COHORT_TRACKING_URI): "), \
        out.stderr
    out = subprocess.run([CLI, "queue"], capture_output=True, text=True, timeout=60,
                         env=clean_env(COHORT_SERVER="http://127.0.0.1:1",
                                       COHORT_TRACKING_URI="http://127.0.0.1:2"))
    assert out.returncode == 1
    lines = out.stderr.splitlines()
    assert lines[0] == (
        "[cohort WARNING] COHORT_SERVER=http://127.0.0.1:1 and COHORT_TRACKING_URI="
        "http://127.0.0.1:2 name different servers: runs are tracked at http://127.0.0.1:2 "
        "(COHORT_TRACKING_URI); the queue, agents, pipelines and sweeps use http://127.0.0.1:1 "
        "(COHORT_SERVER). Unset one of them.")
    assert lines[1].startswith(
        "cohort queue: cannot reach the queue at http://127.0.0.1:1 (COHORT_SERVER): "), lines


def test_runs_are_read_from_cohort_server_when_no_tracking_variable_is_set():
    # The tracking client (here `cohort rerun`'s) reaches for COHORT_SERVER's server.
    out = subprocess.run([CLI, "rerun", "r1"], capture_output=True, text=True, timeout=60,
                         env=clean_env(COHORT_SERVER="http://127.0.0.1:1"))
    assert out.returncode == 1
    assert out.stderr.startswith(
        "cohort rerun: GET http://127.0.0.1:1/api/2.0/mlflow/runs/get?run_id=r1: "), out.stderr
    out = subprocess.run([CLI, "rerun", "r1"], capture_output=True, text=True, timeout=60,
                         env=clean_env(COHORT_SERVER="sqlite:/nowhere.db"))
    assert out.returncode == 1
    assert out.stderr == (
        "cohort rerun: COHORT_SERVER='sqlite:/nowhere.db' is not a server's address "
        "(http(s)://HOST:PORT); a tracking store of its own is COHORT_TRACKING_URI=sqlite:PATH\n")
