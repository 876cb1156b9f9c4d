"""cohort.checkpoint: tensors and objects round-trip, keep-last and best,
the COHORT_CHECKPOINT_DIR functions, bad input, a saver killed with SIGKILL
mid-save leaving the previous checkpoint loadable, and the digits example
stopped with SIGTERM and resumed to the same result as an unbroken run."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

import cohort.checkpoint as ckpt

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("COHORT_BUILD_DIR", os.path.join(ROOT, "build"))
ENV = dict(os.environ, COHORT_BUILD_DIR=BUILD, PYTHONPATH=os.path.join(ROOT, "python"))


def test_tensors_and_objects_round_trip(tmp_path):
    store = ckpt.Checkpointer(tmp_path / "c")
    assert store.load() == (None, None)
    state = {"w": torch.arange(6, dtype=torch.float32).reshape(2, 3), "epoch": 3, "name": "x"}
    store.save(state, 7, metric=0.25)
    loaded, step = ckpt.Checkpointer(tmp_path / "c").load()
    assert step == 7
    assert torch.equal(loaded["w"], state["w"]) and loaded["epoch"] == 3 and loaded["name"] == "x"
    [info] = store.list()
    assert info["step"] == 7 and info["metric"] == 0.25 and len(info["sha256"]) == 64
    assert store.load(step=8) == (None, None)


def test_a_build_without_the_store_still_imports_cohort_torch(tmp_path):
    # The minimal build (GPU machines) has no cohort._checkpoint: importing
    # cohort.torch must work, and only a Checkpointer says what is missing.
    code = ("import sys; sys.modules['cohort._checkpoint'] = None\n"
            "import cohort.torch, cohort.checkpoint as c\n"
            "try:\n    c.Checkpointer(sys.argv[1])\n"
            "except ImportError as e:\n    print('refused:', e)\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "c")], env=ENV,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "refused: cohort.checkpoint needs the extension module cohort._checkpoint, which " \
        "this build does not have (a -DCOHORT_MINIMAL=ON build" in out.stdout
    assert not (tmp_path / "c").exists()


def test_keep_last_and_best(tmp_path):
    store = ckpt.Checkpointer(tmp_path / "c", keep_last=2)
    for step, loss in enumerate([0.9, 0.2, 0.5, 0.6, 0.7]):
        store.save({"step": step}, step, metric=loss)
    assert [c["step"] for c in store.list()] == [1, 3, 4]
    assert store.best()["step"] == 1
    assert store.load(step=1)[0] == {"step": 1}


def test_module_functions_use_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("COHORT_CHECKPOINT_DIR", raising=False)
    with pytest.raises(RuntimeError, match="need COHORT_CHECKPOINT_DIR"):
        ckpt.save({}, 1)
    monkeypatch.setenv("COHORT_CHECKPOINT_DIR", str(tmp_path / "env"))
    ckpt.save({"a": 1}, 5)
    assert ckpt.load() == ({"a": 1}, 5)
    monkeypatch.setenv("COHORT_CHECKPOINT_KEEP", "two")
    with pytest.raises(ValueError, match="COHORT_CHECKPOINT_KEEP 'two' is not an integer"):
        ckpt.load()


def test_bad_input(tmp_path):
    store = ckpt.Checkpointer(tmp_path / "c")
    with pytest.raises(TypeError, match="step must be an int, not str"):
        store.save({}, "3")
    with pytest.raises(ValueError, match="checkpoint step must be >= 0, not -1"):
        store.save({}, -1)
    with pytest.raises(ValueError, match="keep_last must be at least 1, not 0"):
        ckpt.Checkpointer(tmp_path / "d", keep_last=0)


def test_corrupt_checkpoints_are_skipped_with_a_warning(tmp_path):
    store = ckpt.Checkpointer(tmp_path / "c", keep_last=2)
    for step in (1, 2, 3):
        store.save({"step": step}, step)
    old = tmp_path / "c" / "step-000000000002" / "MANIFEST"
    old.write_text("garbage\n")
    report = ("checkpoint step 2 is unusable and was skipped: %s: not a cohort checkpoint "
              "manifest (first line 'garbage'); it is left in place (delete %s once inspected)"
              % (old, old.parent))
    with pytest.warns(ckpt.CheckpointWarning) as caught:
        assert store.load() == ({"step": 3}, 3)
        store.save({"step": 4}, 4)
    assert [str(w.message) for w in caught] == [report] * 3  # load, save, the save's listing
    with pytest.warns(ckpt.CheckpointWarning):
        assert [c["step"] for c in store.list()] == [3, 4]
    assert old.exists()
    # The newest is corrupt: the newest valid one loads, and the warning says so.
    newest = tmp_path / "c" / "step-000000000004" / "MANIFEST"
    newest.write_text("cohort-checkpoint 1\nstep 4\n")
    with pytest.warns(ckpt.CheckpointWarning) as caught:
        assert store.load() == ({"step": 3}, 3)
    assert str(caught[-1].message) == (
        "checkpoint step 4 is unusable and was skipped: %s: missing 'state'; it is left in "
        "place (delete %s once inspected); loaded step 3, the newest valid checkpoint"
        % (newest, newest.parent))


SAVER = """
import sys
import cohort.checkpoint as ckpt
store = ckpt.Checkpointer(sys.argv[1])
store.save({"step": 1}, 1)
print("saved 1", flush=True)
step = 2
while True:
    store.save({"step": step, "blob": bytes(32 << 20)}, step)
    step += 1
"""


def test_killed_mid_save_leaves_a_loadable_checkpoint(tmp_path):
    location = str(tmp_path / "c")
    for delay in (0.0, 0.05, 0.2):
        saver = subprocess.Popen([sys.executable, "-c", SAVER, location], env=ENV,
                                 stdout=subprocess.PIPE, text=True)
        assert saver.stdout.readline() == "saved 1\n"
        # Kill it at some point of a following save of 32 MiB.
        deadline = time.monotonic() + delay
        while time.monotonic() < deadline:
            pass
        saver.send_signal(signal.SIGKILL)
        assert saver.wait(timeout=60) == -signal.SIGKILL
        state, step = ckpt.Checkpointer(location).load()
        assert state["step"] == step >= 1
    # The next save collects what the killed ones left, temporary files too.
    ckpt.Checkpointer(location).save({"step": 100}, 100)
    left = [os.path.join(d, f) for d, _, files in os.walk(location) for f in files]
    assert not [f for f in left if ".tmp." in f], left


def run_digits(checkpoint_dir, epochs, stop_after=None):
    """The digits example on two workers under `cohort run` (which forwards
    SIGTERM to them); with stop_after, SIGTERM once that epoch is printed."""
    proc = subprocess.Popen(
        [os.path.join(BUILD, "cohort"), "run", "-np", "2", "--timeout", "60", "--",
         sys.executable, os.path.join(ROOT, "examples", "pytorch_digits.py"), "--epochs",
         str(epochs), "--checkpoint-dir", checkpoint_dir, "--min-accuracy", "0"],
        env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if stop_after is not None and line.startswith("[0] epoch %2d " % stop_after):
            proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=120)
    return code, "".join(lines)


def test_digits_stops_on_sigterm_and_resumes(tmp_path):
    code, full = run_digits(str(tmp_path / "full"), 4)
    assert code == 0, full
    code, first = run_digits(str(tmp_path / "resumed"), 4, stop_after=1)
    assert code == 128 + signal.SIGTERM, first
    stopped = [l for l in first.splitlines()
               if l.startswith("[0] stopped by SIGTERM after epoch")]
    assert len(stopped) == 1, first
    epoch = int(stopped[0].rsplit(" ", 1)[1])
    assert 1 <= epoch < 4, first
    code, second = run_digits(str(tmp_path / "resumed"), 4)
    assert code == 0, second
    assert "resumed from the checkpoint of epoch %d" % epoch in second
    assert "[0] epoch  1 " not in second
    result = lambda out: json.loads(out.split("result: ", 1)[1].splitlines()[0])
    # The same trajectory: the checkpoint kept the model and the optimizer's momentum.
    assert result(second)["test_accuracy"] == result(full)["test_accuracy"]


def test_saves_are_recorded_on_the_tracking_run(tmp_path):
    import cohort.track
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../server"))
    from tracking_server_fixture import TrackingServer
    db = f"sqlite:{tmp_path}/t.db"
    run = cohort.track.init(project="ckpt", uri=db, spool_dir=str(tmp_path / "spool"),
                            all_ranks=True, system_metrics_s=None)
    store = ckpt.Checkpointer(tmp_path / "ckpt", keep_last=2)
    for step in (1, 2):
        store.save({"w": torch.full((2,), float(step))}, step)
    run.finish()
    server = TrackingServer(tmp_path, ["--store", db, "--slots", "0"])
    try:
        got = server.get("runs/get", run_id=run.id)[1]["run"]["data"]["tags"]
        tags = {t["key"]: t["value"] for t in got if t["key"].startswith("cohort.checkpoint")}
        newest = store.list()[-1]
        assert tags == {"cohort.checkpoint.location": str(tmp_path / "ckpt"),
                        "cohort.checkpoint.step": "2",
                        "cohort.checkpoint.sha256": newest["sha256"]}
    finally:
        server.stop()
