"""Starts `cohort server` on a free loopback port for a test, and talks to it
the way MLflow's REST client does (JSON bodies for POST, query strings for GET)."""
import json
import os
import select
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

BUILD = os.environ.get("COHORT_BUILD_DIR", os.path.join(os.path.dirname(__file__), "../../build"))
COHORT = os.path.join(BUILD, "cohort")


def read_to_end(sock):
    """Every byte `sock` receives until the peer closes."""
    chunks = []
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def raw_exchange(port, payload, timeout=10):
    """Every byte the server on `port` answers to `payload` (sent whole, then EOF)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        return read_to_end(s)


class TrackingServer:
    def __init__(self, tmp_path, extra_args=(), store=None, artifacts=True, env=None):
        self.store = store or f"sqlite:{tmp_path}/tracking.db"
        self.artifacts = str(tmp_path / "artifacts")
        args = [COHORT, "server", "--store", self.store, "--port", "0",
                *(["--artifacts", self.artifacts] if artifacts else []), *extra_args]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        line = self._first_line(deadline=time.monotonic() + 30)
        # "cohort server: listening on http://127.0.0.1:PORT (store ...)"
        self.port = int(line.split("http://127.0.0.1:")[1].split(" ")[0])
        self.url = f"http://127.0.0.1:{self.port}"

    def _first_line(self, deadline):
        buf = b""
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                raise RuntimeError("cohort server did not start: " +
                                   self.proc.stderr.read().decode(errors="replace"))
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if ready:
                buf += os.read(self.proc.stdout.fileno(), 4096)
        return buf.decode()

    def stop(self, sig=None):
        if self.proc.poll() is None:
            if sig is None:
                self.proc.terminate()
            else:
                self.proc.send_signal(sig)
            self.proc.wait(timeout=30)

    def request(self, method, path, body=None, query=None, raw=None, headers=None):
        """(status, parsed JSON or bytes) of one request."""
        url = self.url + path
        if query:
            url += "?" + urllib.parse.urlencode(query, doseq=True)
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
        # MLflow's client sends JSON with every POST (the server refuses other
        # types there: a cross-site form could send them).
        if (method == "POST" or (data is not None and raw is None)) and \
                not req.has_header("Content-type"):
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                status, payload, ctype = resp.status, resp.read(), resp.headers.get("Content-Type")
        except urllib.error.HTTPError as e:
            status, payload, ctype = e.code, e.read(), e.headers.get("Content-Type")
        if ctype and ctype.startswith("application/json"):
            return status, json.loads(payload)
        return status, payload

    def post(self, endpoint, body, prefix="/api/2.0/mlflow/"):
        return self.request("POST", prefix + endpoint, body=body)

    def get(self, endpoint, prefix="/api/2.0/mlflow/", **query):
        return self.request("GET", prefix + endpoint, query=query)
