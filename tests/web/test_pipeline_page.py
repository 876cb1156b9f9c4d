"""Browser test of the dashboard's pipeline pages (issue 30 item 5): a real
`cohort pipeline run` on a `cohort server --slots 2` queue, three steps over a
local dataset (sq, one datum of which always fails; total, reading sq's
output; train, a tracked run in the server's store), whose controller posts
its status document to the server; tests/web/pipeline_page_test.mjs then
checks the pages in headless chromium against that document.
PIPELINE_PAGE_SCREENSHOTS=DIR keeps the screenshots at 800 and 1400 px
(pipelines-W.png, pipeline-W.png, pipeline-commit-W.png)."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
from tracking_server_fixture import COHORT, TrackingServer  # noqa: E402
from web_fixture import needs_browser, require_dashboard  # noqa: E402

from cohort.data import Writer  # noqa: E402

STEP = os.path.join(HERE, "..", "pipeline", "step.py")


def run_pipeline(server, tmp_path):
    """Runs the three-step pipeline; returns `cohort pipeline status --json`."""
    w = Writer.create(str(tmp_path / "raw"), [("label", "label")])
    for v in range(6):
        w.append({"label": v})
    w.commit("raw")
    spec = tmp_path / "p.yaml"
    spec.write_text(json.dumps({"name": "images", "parallel": 2, "steps": [
        {"name": "sq", "inputs": [{"dataset": "raw", "glob": "sample"}], "retries": 0,
         "command": [sys.executable, STEP, "square"], "resources": {"batch": 2}, "output": "squared"},
        {"name": "total", "inputs": [{"step": "sq"}], "command": [sys.executable, STEP, "sum"],
         "output": "total"},
        {"name": "train", "inputs": [{"dataset": "raw"}], "command": [sys.executable, STEP, "track"]}]}))
    env = dict(os.environ, COHORT_SERVER=server.url, PIPELINE_FAIL_LABEL="4",
               PIPELINE_TRACK_URI=server.url)
    p = subprocess.run([COHORT, "pipeline", "run", str(spec)], capture_output=True, text=True,
                       timeout=90, env=env, cwd=tmp_path)
    assert p.returncode == 1 and p.stderr == "", p.stdout + p.stderr  # datum 4 failed
    p = subprocess.run([COHORT, "pipeline", "status", str(spec), "--json"], capture_output=True,
                       text=True, timeout=30, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@needs_browser
def test_pipeline_pages_in_chromium(tmp_path):
    require_dashboard()
    server = TrackingServer(tmp_path, ["--slots", "2", "--grace", "1"])
    try:
        status = run_pipeline(server, tmp_path)
        # What the controller posted last is what `status --json` shows now.
        code, posted = server.get("status", prefix="/api/cohort/pipelines/", name="images")
        assert code == 200 and posted["status"] == status
        assert [(s["name"], s["state"]) for s in status["steps"]] == [
            ("sq", "failed"), ("total", "done"), ("train", "done")]
        assert status["state"] == "failed"
        # The output commits' provenance records ride along for the commit view.
        assert sorted((r["step"], r["output_commit"]) for r in status["commits"]) == sorted(
            (s["name"], s["output_commit"]) for s in status["steps"] if s["output"])
        code, body = server.post("runs/search", {"experiment_ids": [
            server.get("experiments/get-by-name", experiment_name="pipeline")[1]["experiment"]["experiment_id"]]})
        [tracked] = [r["info"]["run_id"] for r in body["runs"]]
        expect = tmp_path / "expect.json"
        expect.write_text(json.dumps({"status": status, "tracked_step": "train", "tracked_run": tracked}))
        with open(tmp_path / "queue-token") as f:
            token = f.read().strip()
        shots = os.environ.get("PIPELINE_PAGE_SCREENSHOTS") or str(tmp_path)
        os.makedirs(shots, exist_ok=True)
        result = subprocess.run(["node", os.path.join(HERE, "pipeline_page_test.mjs")], capture_output=True,
                                text=True, timeout=120,
                                env=dict(os.environ, DASH_URL=server.url, DASH_EXPECT=str(expect),
                                         DASH_QUEUE_TOKEN=token, DASH_SCREENSHOTS=shots))
        print(result.stdout)
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stdout.count("ok ") == 11
    finally:
        server.stop()
