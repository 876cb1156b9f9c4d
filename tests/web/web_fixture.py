"""What the browser tests of the dashboard share: the marker that skips them
without node, Debian's chromium or playwright-core (tools/setup.sh), and the
check that the dashboard was built into the build dir `cohort server` serves."""
import os
import shutil
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
from tracking_server_fixture import BUILD  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
PLAYWRIGHT = os.path.join(ROOT, "build-tools", "web", "node_modules", "playwright-core")

needs_browser = pytest.mark.skipif(
    not (shutil.which("node") and os.path.exists("/usr/bin/chromium") and os.path.isdir(PLAYWRIGHT)),
    reason="needs node, /usr/bin/chromium and playwright-core (tools/setup.sh)")


def require_dashboard():
    assert os.path.exists(os.path.join(BUILD, "web", "index.html")), "the dashboard is not built"
