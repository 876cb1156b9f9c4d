#!/usr/bin/env python3
"""Takes the dashboard screenshots in docs/img (dashboard-*.png): a fresh
`cohort server`, the browser test's sweep of 12 runs (one with an engine
timeline), a run still RUNNING with system metrics, then
bench/web/screenshots.mjs in headless chromium. Usage:
  COHORT_BUILD_DIR=build PYTHONPATH=python /usr/bin/python3 bench/web/screenshots.py [OUT_DIR]
"""
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "web"))
sys.path.insert(0, str(ROOT / "tests" / "server"))
from test_dashboard import record_sweep  # noqa: E402
from tracking_server_fixture import TrackingServer  # noqa: E402

import cohort.track  # noqa: E402


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "docs" / "img")
    with tempfile.TemporaryDirectory() as tmp:
        server = TrackingServer(Path(tmp))
        try:
            ids = record_sweep(server.url, Path(tmp))
            live = cohort.track.init(project="dash-test", name="training-now", uri=server.url,
                                     config={"lr": "0.01", "batch": 64}, system_metrics_s=0.5)
            for step in range(300):  # ~3 s: a few system samples
                live.log({"loss": 2 * math.exp(-step / 80) + 0.03 * math.sin(step / 3)}, step=step)
                time.sleep(0.01)
            live.flush()
            subprocess.run(["node", str(ROOT / "bench" / "web" / "screenshots.mjs"), server.url,
                            live.experiment_id, ids[0], live.id, ",".join(ids[::2]), str(out)],
                           check=True, timeout=300)
            live.finish()
        finally:
            server.stop()
    shrink(out)


def shrink(out):
    """256-colour palettes: a third of the size, no visible change for flat UI
    (Pillow, python3-pil, comes with python3-torchvision)."""
    from PIL import Image
    for png in sorted(out.glob("dashboard-*.png")):
        Image.open(png).convert("RGB").quantize(256).save(png, optimize=True)


if __name__ == "__main__":
    main()
