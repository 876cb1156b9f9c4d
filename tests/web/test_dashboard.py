"""Browser tests of the dashboard: starts `cohort server` (temp SQLite store),
records runs through cohort.track over HTTP, keeps one run logging live, and
runs tests/web/dashboard_test.mjs (playwright-core + headless chromium)."""
import json
import math
import os
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
from tracking_server_fixture import TrackingServer  # noqa: E402
from web_fixture import needs_browser, require_dashboard  # noqa: E402

import cohort.track  # noqa: E402

LRS = ["0.1", "0.01", "0.001"]


def sample_trace(path):
    """A small engine timeline in Chrome's JSON array format (as docs/engine.md describes)."""
    events = []
    for cycle in range(20):
        t = cycle * 1000
        events += [{"name": "NEGOTIATE_ALLREDUCE", "ph": "X", "ts": t, "dur": 200, "pid": 0, "tid": 1},
                   {"name": "ALLREDUCE", "ph": "X", "ts": t + 250, "dur": 500, "pid": 0, "tid": 1},
                   {"name": "RING_REDUCESCATTER", "ph": "X", "ts": t + 260, "dur": 240, "pid": 0, "tid": 2}]
    with open(path, "w") as f:
        json.dump(events, f)


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
        ids.append(run.id)
        run.finish()
    return ids


@needs_browser
def test_dashboard_in_chromium(tmp_path):
    require_dashboard()
    server = TrackingServer(tmp_path)
    stop = threading.Event()
    try:
        ids = record_sweep(server.url, tmp_path)
        live = cohort.track.init(project="dash-test", name="live", uri=server.url,
                                 system_metrics_s=None, flush_interval_ms=100)
        live.log({"live_loss": 1.0}, step=0)
        live.flush()  # the table's columns include live_loss from the start

        def keep_logging():  # paced, not a wait: a point every 50 ms until the browser is done
            step = 1
            while not stop.wait(0.05):
                live.log({"live_loss": 1.0 / (step + 1)}, step=step)
                step += 1
        logger = threading.Thread(target=keep_logging)
        logger.start()
        env = dict(os.environ, DASH_URL=server.url, DASH_EXPERIMENT_ID=live.experiment_id,
                   DASH_RUN_COUNT="13", DASH_LIVE_RUN_ID=live.id,
                   DASH_COMPARE_RUN_IDS=",".join([ids[0], ids[5], ids[11]]))
        result = subprocess.run(["node", os.path.join(HERE, "dashboard_test.mjs")], env=env,
                                capture_output=True, text=True, timeout=120)
        print(result.stdout)
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stdout.count("ok ") == 11
        stop.set()
        logger.join()
        live.finish()
    finally:
        stop.set()
        server.stop()
