"""Browser tests of the dashboard: starts `cohort server` (temp SQLite store),
records runs through cohort.track over HTTP, keeps one run logging live, and
runs tests/web/dashboard_test.mjs (playwright-core + headless chromium)."""
import json
import math
import os
import random
import subprocess
import sys
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
from tracking_server_fixture import TrackingServer  # noqa: E402
from web_fixture import needs_browser, require_dashboard  # noqa: E402

import cohort.track  # noqa: E402

LRS = ["0.1", "0.01", "0.001"]


def sample_trace(path):
    """A small engine timeline in Chrome's JSON array format (as docs/engine.md describes)."""
    events = [{"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "rank 0"}},
              {"name": "thread_name", "ph": "M", "pid": 0, "tid": 1, "args": {"name": "background loop"}}]
    for cycle in range(20):
        t = cycle * 1000
        events += [{"name": "NEGOTIATE_ALLREDUCE", "ph": "X", "ts": t, "dur": 200, "pid": 0, "tid": 1},
                   {"name": "ALLREDUCE", "ph": "X", "ts": t + 250, "dur": 500, "pid": 0, "tid": 1},
                   {"name": "RING_REDUCESCATTER", "ph": "X", "ts": t + 260, "dur": 240, "pid": 0, "tid": 2}]
    with open(path, "w") as f:
        json.dump(events, f)


def write_png(path, width, height):
    """A real PNG (RGB, a gradient), written with zlib alone."""
    import struct
    import zlib
    rows = b"".join(b"\0" + bytes(v for x in range(width) for v in (x * 255 // width, y * 255 // height, 128))
                    for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


ARTIFACT_JSON = {"model": {"layers": [64, 32], "activation": "relu"}, "lr": 0.1}
ARTIFACT_TEXT = "epoch 1: loss 0.9\nepoch 2: loss 0.5 <b>not bold</b>\n"


def record_sweep(uri, tmp_path):
    """trial-0..11: lr cycles over LRS, batch over 32..128; trial-11 ends with the lowest loss."""
    ids = []
    for i in range(12):
        run = cohort.track.init(project="dash-test", name=f"trial-{i}", uri=uri,
                                config={"lr": LRS[i % 3], "batch": 32 * (1 + i % 4)},
                                tags={"purpose": "sweep"}, system_metrics_s=None)
        scale = 2.0 - i * 0.1
        for step in range(50):
            loss = scale * math.exp(-step / 20) + 0.05 * math.sin(step + i)
            # cohort's own figures beside the user's: the dashboard puts them last, folded away
            run.log({"loss": loss, "accuracy": 1 - loss / 3, "engine/step_time_s": 0.01 + step * 1e-4,
                     "system/cpu_percent": 50.0}, step=step)
        if i == 0:
            trace = tmp_path / "timeline.json"
            sample_trace(trace)
            run.log_artifact(trace, "timeline.json")
            (tmp_path / "notes.txt").write_text(ARTIFACT_TEXT)
            run.log_artifact(tmp_path / "notes.txt", "notes.txt")
            (tmp_path / "config.json").write_text(json.dumps(ARTIFACT_JSON))  # one line: the page indents it
            run.log_artifact(tmp_path / "config.json", "config.json")
            write_png(tmp_path / "plot.png", 120, 80)
            run.log_artifact(tmp_path / "plot.png", "plots/plot.png")
        ids.append(run.id)
        run.finish()
    return ids


def record_fake_sweep(server, trials=30):
    """A sweep as `cohort sweep --tracking` records one (its run, tagged trial
    runs, best_loss), written straight through the REST API: 30 finished ASHA
    trials whose loss depends mostly on lr (log-uniform 1e-4..1e-1), a little
    on dropout, and not at all on batch or optimizer. Returns (experiment id,
    sweep run id, [(params, final loss)], the project's last activity)."""
    status, e = server.post("experiments/create", {"name": "dash-sweep"})
    assert status == 200, e
    exp = e["experiment_id"]
    # From the project's creation on (into the next minutes): its last
    # activity is the sweep run's end, not the creation.
    t0 = server.get("experiments/get", experiment_id=exp)[1]["experiment"]["creation_time"]

    def run(name, start, tags, params, metrics, end):
        status, r = server.post("runs/create", {"experiment_id": exp, "run_name": name, "start_time": start,
                                                "tags": [{"key": k, "value": v} for k, v in tags.items()]})
        assert status == 200, r
        run_id = r["run"]["info"]["run_id"]
        status, r = server.post("runs/log-batch", {
            "run_id": run_id, "params": [{"key": k, "value": str(v)} for k, v in params.items()],
            "metrics": [{"key": k, "value": v, "timestamp": start + 1000 * step, "step": step} for k, step, v in metrics]})
        assert status == 200, r
        return run_id

    sweep = run("sweep-layout", t0, {"cohort.sweep.role": "sweep"},
                {"algorithm": "asha", "metric": "loss", "mode": "min", "seed": 7, "workers": 1, "trials": trials,
                 "concurrent": 2, "resource": "epoch", "min_resource": 1, "max_resource": 9, "reduction": 3}, [], None)
    server.post("runs/set-tag", {"run_id": sweep, "key": "cohort.sweep.id", "value": sweep})
    rng = random.Random(7)
    results, best = [], math.inf
    for i in range(trials):
        params = {"lr": 10 ** rng.uniform(-4, -1), "batch": rng.choice([32, 64, 128, 256]),
                  "dropout": rng.uniform(0, 0.5), "optimizer": rng.choice(["sgd", "adam"])}
        final = 0.5 * (math.log10(params["lr"]) + 2.5) ** 2 + 0.2 * params["dropout"] + rng.gauss(0, 0.01)
        start = t0 + 20_000 * (i + 1)
        curve = [("loss", step, final + 1.0 / step) for step in range(1, 10)]
        trial = run(f"sweep-layout trial {i}", start,
                    {"cohort.sweep.id": sweep, "cohort.sweep.role": "trial", "cohort.sweep.trial": str(i),
                     "cohort.sweep.state": "completed", "cohort.sweep.rungs": "1,3,9"}, params, curve, None)
        server.post("runs/update", {"run_id": trial, "status": "FINISHED", "end_time": start + 9_000})
        best = min(best, curve[-1][2])
        server.post("runs/log-metric", {"run_id": sweep, "key": "best_loss", "value": best,
                                        "timestamp": start + 9_000, "step": i + 1})
        results.append((params, curve[-1][2]))
    server.post("runs/update", {"run_id": sweep, "status": "FINISHED", "end_time": t0 + 20_000 * (trials + 1)})
    return exp, sweep, results, t0 + 20_000 * (trials + 1)


TICKER = "import time\nfor i in range(3000):\n    print(f'tick {i}', flush=True)\n    time.sleep(0.1)\n"


def submit_jobs(server, headers):
    """Three jobs in the queue (2 slots): one that succeeded, one running
    (2 slots, printing a line every 0.1 s), one pending behind it. Returns
    their ids and the queue's token."""
    def submit(user, body):
        status, r = server.request("POST", "/api/queue/jobs", body=body, headers=dict(headers, **{"X-Cohort-User": user}))
        assert status == 200, r
        return r["id"]

    def wait_state(job, states):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            status, j = server.request("GET", f"/api/queue/jobs/{job}", headers=headers)
            assert status == 200, j
            if j["state"] in states:
                return
            time.sleep(0.05)  # polling the job's state, with the deadline above
        raise AssertionError(f"job {job} not {states} in 30 s: {j}")

    done = submit("alice", {"command": ["/bin/sh", "-c", "echo hello from the queue"], "slots": 1,
                            "priority": "high", "project": "dash-test"})
    wait_state(done, {"succeeded"})
    running = submit("bob", {"command": ["/usr/bin/python3", "-c", TICKER], "slots": 2, "project": "dash-test"})
    wait_state(running, {"running"})
    pending = submit("alice", {"command": ["true"], "slots": 1, "priority": "low", "project": "dash-test"})
    wait_state(pending, {"pending"})
    return {"done": done, "running": running, "pending": pending}


BIG_POINTS = 200_000


def record_big_metric(server):
    """A run in project dash-big with one metric of BIG_POINTS steps (a saw
    tooth of period 997), logged 1,000 points a batch. Returns the run's id."""
    status, e = server.post("experiments/create", {"name": "dash-big"})
    assert status == 200, e
    status, r = server.post("runs/create", {"experiment_id": e["experiment_id"], "run_name": "big", "start_time": 1})
    assert status == 200, r
    run_id = r["run"]["info"]["run_id"]
    for first in range(0, BIG_POINTS, 1000):
        status, r = server.post("runs/log-batch", {"run_id": run_id, "metrics": [
            {"key": "big", "value": (i % 997) / 997, "timestamp": 1 + i, "step": i} for i in range(first, first + 1000)]})
        assert status == 200, r
    server.post("runs/update", {"run_id": run_id, "status": "FINISHED", "end_time": 2 + BIG_POINTS})
    return run_id


def optuna_importances(trials):
    """Optuna's get_param_importances (its default, fANOVA over a random
    forest; seeded) on the fake sweep's trials: the reference the sweep
    page's importances are checked against."""
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    d = optuna.distributions
    space = {"lr": d.FloatDistribution(1e-4, 1e-1, log=True), "batch": d.CategoricalDistribution([32, 64, 128, 256]),
             "dropout": d.FloatDistribution(0, 0.5), "optimizer": d.CategoricalDistribution(["sgd", "adam"])}
    study = optuna.create_study()
    for params, value in trials:
        study.add_trial(optuna.trial.create_trial(params=params, distributions=space, value=value))
    return dict(optuna.importance.get_param_importances(
        study, evaluator=optuna.importance.FanovaImportanceEvaluator(seed=0)))


class Dashboard:
    """The server both browser tests use (its job queue on, 2 slots), its
    runs and jobs, and a run that keeps logging."""

    def __init__(self, tmp_path):
        self.server = TrackingServer(tmp_path, ["--slots", "2", "--grace", "1"])
        self.stop = threading.Event()
        self.logger = None
        self.jobs = {}
        with open(tmp_path / "queue-token") as f:
            self.queue_token = f.read().strip()
        self.queue_headers = {"X-Cohort-Queue-Token": self.queue_token}
        self.jobs = submit_jobs(self.server, self.queue_headers)
        self.ids = record_sweep(self.server.url, tmp_path)
        self.sweep_experiment, self.sweep, self.sweep_trials, self.sweep_last = record_fake_sweep(self.server)
        self.big = record_big_metric(self.server)
        self.live = cohort.track.init(project="dash-test", name="live", uri=self.server.url,
                                      system_metrics_s=None, flush_interval_ms=100)
        self.live.log({"live_loss": 1.0}, step=0)
        self.live.flush()  # the table's columns include live_loss from the start

        def keep_logging():  # paced, not a wait: a point every 50 ms until the tests are done
            step = 1
            while not self.stop.wait(0.05):
                self.live.log({"live_loss": 1.0 / (step + 1)}, step=step)
                step += 1
        self.logger = threading.Thread(target=keep_logging)
        self.logger.start()

    def node(self, script, **env):
        """Runs tests/web/SCRIPT against the server; returns its stdout, asserting it passed."""
        env = dict(os.environ, DASH_URL=self.server.url, DASH_EXPERIMENT_ID=self.live.experiment_id,
                   DASH_RUN_COUNT="13", DASH_LIVE_RUN_ID=self.live.id,
                   DASH_COMPARE_RUN_IDS=",".join([self.ids[0], self.ids[5], self.ids[11]]),
                   DASH_SWEEP_EXPERIMENT_ID=self.sweep_experiment, DASH_SWEEP_ID=self.sweep,
                   DASH_ARTIFACT_JSON=json.dumps(ARTIFACT_JSON, indent=2), DASH_ARTIFACT_TEXT=ARTIFACT_TEXT,
                   DASH_SWEEP_LAST=str(self.sweep_last),
                   DASH_OPTUNA_IMPORTANCE=json.dumps(optuna_importances(self.sweep_trials)), DASH_QUEUE_TOKEN=self.queue_token, DASH_BIG_RUN_ID=self.big, DASH_BIG_POINTS=str(BIG_POINTS), DASH_JOBS=json.dumps(self.jobs), **env)
        result = subprocess.run(["node", os.path.join(HERE, script)], env=env,
                                capture_output=True, text=True, timeout=150)
        print(result.stdout)
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    def close(self):
        for name, user in (("running", "bob"), ("pending", "alice")):
            if name in self.jobs:
                self.server.request("POST", f"/api/queue/jobs/{self.jobs[name]}/cancel", body={},
                                    headers=dict(self.queue_headers, **{"X-Cohort-User": user}))
        self.stop.set()
        if self.logger:
            self.logger.join()
        self.live.finish()
        self.server.stop()


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory):
    require_dashboard()
    d = Dashboard(tmp_path_factory.mktemp("dashboard"))
    yield d
    d.close()


@needs_browser
def test_dashboard_in_chromium(dashboard):
    assert dashboard.node("dashboard_test.mjs").count("ok ") == 19


@needs_browser
def test_every_page_fits_at_800_and_1400_px(dashboard, tmp_path):
    """Every page at 800 and 1400 px: no horizontal overflow; full-page
    screenshots in DASH_SCREENSHOTS (default: the test's temp folder)."""
    shots = os.environ.get("DASH_SCREENSHOTS") or str(tmp_path)
    out = dashboard.node("layout_test.mjs", DASH_SCREENSHOTS=shots)
    assert out.count("ok ") == 2 * 8, out
