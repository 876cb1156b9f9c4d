"""Cross-site requests and DNS rebinding against a live `cohort server`, in
headless chromium (issue 25 item 1: a page on another localhost port ran
`sh -c ...` through POST /api/queue/jobs with a no-cors text/plain fetch).
An attacker page on a second loopback port fires every request a web page
can send without the server's consent; afterwards the store holds none of
what it asked for and no job ran. tests/web/csrf_test.mjs drives the browser."""
import http.server
import os
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
from tracking_server_fixture import TrackingServer  # noqa: E402
from web_fixture import needs_browser  # noqa: E402

ATTACK = """<html><body>
<iframe name="sink" style="display:none"></iframe>
<form id="form" target="sink" method="POST" enctype="text/plain" action="%(api)s/experiments/create">
<input name='{"name": "csrf-form", "x": "' value='"}'></form>
<script>
window.outcome = {};
(async () => {
  const body = (o) => JSON.stringify(o);
  // What any page can send: no-cors POSTs with text/plain (no preflight).
  await fetch("%(api)s/experiments/create", {mode: "no-cors", method: "POST",
    headers: {"Content-Type": "text/plain"}, body: body({name: "csrf-no-cors"})});
  await fetch("%(server)s/api/queue/jobs", {mode: "no-cors", method: "POST",
    headers: {"Content-Type": "text/plain"},
    body: body({command: ["touch", "%(marker)s"], pool: "default"})});
  await fetch("%(server)s/api/queue/jobs", {mode: "no-cors", method: "POST",
    body: new URLSearchParams({command: "touch %(marker)s"})});
  // A CORS request (JSON): the browser asks first, the server refuses.
  try {
    await fetch("%(api)s/experiments/create", {method: "POST",
      headers: {"Content-Type": "application/json"}, body: body({name: "csrf-cors"})});
    window.outcome.cors = "sent";
  } catch (e) { window.outcome.cors = "blocked"; }
  try {
    await fetch("%(server)s/api/2.0/mlflow-artifacts/artifacts/0/x/artifacts/csrf.txt",
                {mode: "no-cors", method: "PUT", body: "x"});
    window.outcome.put = "sent";
  } catch (e) { window.outcome.put = "blocked"; }
  document.getElementById("form").submit();
  await new Promise((done) => document.querySelector("iframe").onload = done);
  window.attackDone = true;
})();
</script></body></html>"""


def serve_attacker(page):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(page.encode())

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


@needs_browser
def test_cross_site_pages_cannot_change_or_read_anything(tmp_path):
    server = TrackingServer(tmp_path, ["--slots", "1"])
    marker = tmp_path / "pwned"
    attacker = serve_attacker(ATTACK % {"api": server.url + "/api/2.0/mlflow", "server": server.url,
                                        "marker": marker})
    try:
        env = dict(os.environ, CSRF_SERVER=server.url,
                   CSRF_ATTACKER=f"http://127.0.0.1:{attacker.server_port}/attack.html")
        result = subprocess.run(["node", os.path.join(HERE, "csrf_test.mjs")], env=env,
                                capture_output=True, text=True, timeout=120)
        print(result.stdout)
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stdout.count("ok ") == 3
        status, body = server.get("experiments/search", max_results=1000)
        names = {e["name"] for e in body["experiments"]}
        assert names == {"Default", "same-origin"}, names
        status, body = server.request("GET", "/api/queue/jobs")
        assert status != 200 or body["jobs"] == [], body
        assert not marker.exists()
        status, _ = server.request("GET", "/api/2.0/mlflow-artifacts/artifacts/0/x/artifacts/csrf.txt")
        assert status == 404
    finally:
        attacker.shutdown()
        server.stop()
