"""Fuzzes a live `cohort server` with random and mutated requests on every
route (issue 25 item 5): methods, paths from the route tables (MLflow's read
from src/track/mlflow_service.cc, the artifact proxy, sweep journals, the queue,
static files), query strings with huge, negative and non-numeric numbers,
JSON bodies with mutated types, values and depth, broken UTF-8, headers,
chunked and truncated bodies, and raw protocol junk.

A finding is: the process exits, an answer of 500 or 503 (or any 5xx other
than 501 and 505, HTTP's words for an unsupported feature or version), no
answer to a complete request, or /health failing. Every request derives
from (seed, index), so a finding is reproduced by its seed.

    python3 tests/server/fuzz_server.py --requests 1000000 --seed 7
    python3 tests/server/fuzz_server.py --seconds 20          # a random seed, printed
    python3 tests/server/fuzz_server.py --without-agents ...  # no queue agent endpoints

COHORT_BUILD_DIR names the build (default build/). test_fuzz.py runs a short
fixed-seed and a short random-seed round in CI."""
import argparse
import json
import os
import random
import re
import select
import socket
import subprocess
import sys
import tempfile
import time

from tracking_server_fixture import raw_exchange

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("COHORT_BUILD_DIR", os.path.join(ROOT, "build"))
COHORT = os.path.join(BUILD, "cohort")

MLFLOW_PREFIXES = ["/api/2.0/mlflow/", "/ajax-api/2.0/mlflow/"]
ARTIFACTS = ["/api/2.0/mlflow-artifacts/artifacts", "/ajax-api/2.0/mlflow-artifacts/artifacts"]
JOURNAL = "/api/cohort/sweeps/journal/"
QUEUE = "/api/queue/"
METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]


def mlflow_routes():
    """{endpoint: [methods]} from the service's table of endpoints, which the server routes."""
    text = open(os.path.join(ROOT, "src", "track", "mlflow_service.cc")).read()
    routes = {}
    for name, methods in re.findall(r'\{"([a-z-]+/[a-z/-]+)",\s*\{([^}]*)\}', text):
        routes[name] = re.findall(r'"([A-Z]+)"', methods)
    assert len(routes) >= 20, f"found only {len(routes)} MLflow routes in mlflow_service.cc"
    return routes


class Server:
    """`cohort server` on a free loopback port with a temp store, artifacts and web dir."""

    def __init__(self, tmp):
        web = os.path.join(tmp, "web")
        os.makedirs(web, exist_ok=True)
        with open(os.path.join(web, "index.html"), "w") as f:
            f.write("<html>fuzz</html>")
        self.proc = subprocess.Popen(
            [COHORT, "server", "--store", f"sqlite:{tmp}/tracking.db", "--port", "0",
             "--artifacts", os.path.join(tmp, "artifacts"), "--web-dir", web, "--slots", "0"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = b""
        deadline = time.monotonic() + 30
        while b"\n" not in line:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("cohort server did not start: " +
                                   self.proc.stderr.read().decode(errors="replace"))
            ready, _, _ = select.select([self.proc.stdout], [], [], 1)
            if ready:
                line += os.read(self.proc.stdout.fileno(), 4096)
        self.port = int(re.search(rb"http://127\.0\.0\.1:(\d+)", line).group(1))

    def stderr_tail(self):
        if self.proc.poll() is None:
            return ""
        return self.proc.stderr.read().decode(errors="replace")[-4000:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


class Connection:
    """One kept-alive connection; reconnects after the server closes it."""

    def __init__(self, port):
        self.port = port
        self.sock = None
        self.buf = b""

    def _connect(self):
        self.close()
        self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        self.buf = b""

    def close(self):
        if self.sock is not None:
            self.sock.close()
        self.sock = None

    def exchange(self, payload, head_request, complete):
        """The status of the answer to `payload` (None when the server closed
        without one); `complete` False: the payload ends early on purpose."""
        try:
            if self.sock is None:
                self._connect()
            self.sock.sendall(payload)
            if not complete:
                self.sock.shutdown(socket.SHUT_WR)
            status = self._read_response(head_request)
            while status == 100:
                status = self._read_response(head_request)
        except (ConnectionError, socket.timeout, OSError):
            status = None
            self.close()
        if not complete:
            self.close()
        return status

    def _fill(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionResetError("closed")
        self.buf += chunk

    def _read_response(self, head_request):
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split(b" ")[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip()
        if status == 100:
            return status
        length = 0 if head_request else int(headers.get(b"content-length", b"0"))
        while len(self.buf) < length:
            self._fill()
        self.buf = self.buf[length:]
        if headers.get(b"connection", b"").lower() == b"close":
            self.close()
        return status


class Fuzzer:
    def __init__(self, seed, port, experiment_id, run_id, agents=True):
        self.seed = seed
        self.agents = agents
        self.port = port
        self.routes = mlflow_routes()
        self.experiment_id = experiment_id
        self.run_id = run_id
        self.host = f"127.0.0.1:{port}"

    # --- values -----------------------------------------------------------
    def number_text(self, r):
        return r.choice(["9999999999999999999", "-9999999999999999999", "18446744073709551616",
                         "9223372036854775808", "-9223372036854775809", "1e400", "-1e400",
                         "1e-400", "0", "-1", "1.5", "NaN", "Infinity", "-0", "0x10", "1e18",
                         str(r.randint(-10 ** 30, 10 ** 30)), "", " 1", "1 ", "+1", "١٢"])

    def json_value(self, r, depth=0):
        kind = r.randrange(12)
        if kind == 0:
            return None
        if kind == 1:
            return r.choice([True, False])
        if kind == 2:
            return r.randint(-2 ** 70, 2 ** 70)
        if kind == 3:
            return r.choice([1e308, -1e308, 5e-324, 0.5, 1e19, -9.3e18])
        if kind == 4:
            return self.number_text(r)
        if kind == 5:
            return "".join(r.choice("ab\u00e9\u20ac\U0001f600\"\\/\n\t\0") for _ in range(r.randrange(20)))
        if kind == 6:
            return "x" * r.choice([0, 1, 250, 251, 5000, 70000])
        if kind == 7 and depth < 4:
            return [self.json_value(r, depth + 1) for _ in range(r.randrange(4))]
        if kind == 8 and depth < 4:
            return {r.choice(["key", "value", "timestamp", "step", "name", "x"]):
                    self.json_value(r, depth + 1) for _ in range(r.randrange(4))}
        if kind == 9:
            return self.run_id
        if kind == 10:
            return self.experiment_id
        return r.choice(["ACTIVE_ONLY", "ALL", "FINISHED", "RUNNING", "3", "metrics.m > 1",
                         "params.p = 'x' AND tags.t LIKE '%'", "attributes.start_time DESC"])

    def seed_body(self, r, endpoint):
        e, run = self.experiment_id, self.run_id
        metric = {"key": "m", "value": 1.5, "timestamp": 1, "step": r.randrange(5)}
        bodies = {
            "experiments/create": {"name": f"fuzz-{r.randrange(10 ** 9)}", "tags": [{"key": "k", "value": "v"}]},
            "experiments/update": {"experiment_id": e, "new_name": f"fuzz-{r.randrange(10 ** 9)}"},
            "experiments/delete": {"experiment_id": str(r.randrange(10 ** 6) + 1000)},
            "experiments/restore": {"experiment_id": e},
            "experiments/set-experiment-tag": {"experiment_id": e, "key": "k", "value": "v"},
            "experiments/search": {"max_results": 5, "filter": "name LIKE 'fuzz%'", "order_by": ["name"]},
            "runs/create": {"experiment_id": e, "start_time": 1, "run_name": "r", "tags": []},
            "runs/update": {"run_id": run, "status": "RUNNING", "end_time": 2},
            "runs/delete": {"run_id": "no-such-run"},
            "runs/restore": {"run_id": run},
            "runs/search": {"experiment_ids": [e], "max_results": 5, "filter": "metrics.m > 0",
                            "order_by": ["metrics.m DESC"]},
            "runs/log-metric": dict(run_id=run, **metric),
            "runs/log-parameter": {"run_id": run, "key": f"p{r.randrange(10 ** 9)}", "value": "1"},
            "runs/set-tag": {"run_id": run, "key": "t", "value": "v"},
            "runs/delete-tag": {"run_id": run, "key": "t"},
            "runs/log-batch": {"run_id": run, "metrics": [metric] * r.randrange(3),
                               "params": [], "tags": [{"key": "t", "value": "v"}]},
            "runs/log-inputs": {"run_id": run, "datasets": [{"dataset": {
                "name": "d", "digest": "x", "source_type": "local", "source": "/d"}}]},
        }
        return bodies.get(endpoint, {"experiment_id": e, "run_id": run, "metric_key": "m"})

    def mutate_json(self, r, value, depth=0):
        """`value` with a few fields changed, removed, added or retyped."""
        if isinstance(value, dict):
            out = dict(value)
            for key in list(out):
                roll = r.random()
                if roll < 0.15:
                    del out[key]
                elif roll < 0.45:
                    out[key] = self.json_value(r)
                elif depth < 3:
                    out[key] = self.mutate_json(r, out[key], depth + 1)
            if r.random() < 0.2:
                out[r.choice(["extra", "max_results", "page_token", "run_uuid", "seq"])] = self.json_value(r)
            return out
        if isinstance(value, list):
            return [self.mutate_json(r, v, depth + 1) for v in value] + \
                ([self.json_value(r)] if r.random() < 0.3 else [])
        return self.json_value(r) if r.random() < 0.5 else value

    def json_text(self, r, value):
        text = json.dumps(value, ensure_ascii=r.random() < 0.5).encode()
        roll = r.random()
        if roll < 0.05:
            depth = r.choice([63, 64, 65, 1000, 100_000])
            return b'{"name": ' + b"[" * depth + b"]" * depth + b"}"
        if roll < 0.1:
            return text[:r.randrange(len(text) + 1)]  # truncated
        if roll < 0.15:
            at = r.randrange(len(text) + 1)
            return text[:at] + bytes([r.randrange(256)]) + text[at:]
        if roll < 0.2:
            return text.replace(b"1.5", r.choice([b"1e400", b"-1e999", b"18446744073709551616",
                                                   b"99999999999999999999999", b"NaN", b"1.5e"]))
        if roll < 0.23:
            return text.replace(b'"m"', b'"\xff\xfe"').replace(b'"v"', b'"\xc0\xaf"')
        return text

    # --- requests -----------------------------------------------------------
    def query(self, r):
        params = []
        for _ in range(r.randrange(5)):
            name = r.choice(["max_results", "experiment_id", "run_id", "run_ids", "metric_key",
                             "start_step", "end_step", "path", "page_token", "view_type",
                             "experiment_name", "sweep", "offset", "filter", "order_by", "x"])
            value = r.choice([self.number_text(r), self.run_id, self.experiment_id, "m",
                              "%ff%fe", "%00", "%zz", "a+b", "0/fuzz/artifacts", "..", "x" * 300])
            params.append(f"{name}={value}")
        return "&".join(params)

    def path(self, r):
        kind = r.randrange(10)
        if kind < 4:
            endpoint = r.choice(sorted(self.routes))
            return r.choice(MLFLOW_PREFIXES) + endpoint, endpoint
        if kind == 4:
            tail = r.choice(["", "/0/fuzz/artifacts/a.txt", "/0/fuzz/artifacts", "/0/../x",
                             "/0/fuzz/a.tmp.x", "/0/fuzz/b.lock", "/%2e%2e/x", "/" + "a" * 300,
                             "/0/fuzz/" + "d/" * 50 + "f", "/0/fuzz/\xe9t\xe9"])
            return r.choice(ARTIFACTS) + tail, "artifacts"
        if kind == 5:
            return JOURNAL + r.choice(["append", "records", "nothing", ""]), "journal"
        if kind == 6:
            agents = ["agents/a1/heartbeat", "agents/a1/jobs/1/log", "agents/a1/jobs/1/exit",
                      "agents/local/heartbeat", "agents/" + "x" * 100 + "/heartbeat"]
            return QUEUE + r.choice(
                ["jobs", "jobs/1", "jobs/1/cancel", "jobs/1/log", "jobs/99999999999999999999",
                 "jobs/-1", "agents", ""] + (agents if self.agents else [])), "queue"
        if kind == 7:
            return r.choice(["/health", "/", "/index.html", "/missing.js", "/" + "a" * 300,
                             "/" + "a/" * 2000, "/%00", "/..%2f..%2fetc/passwd", "/\xff"]), "static"
        return "/" + "".join(r.choice("abc/%.-_~é") for _ in range(r.randrange(40))), "random"

    def body(self, r, endpoint):
        if endpoint == "artifacts" or r.random() < 0.05:
            return bytes(r.randrange(256) for _ in range(r.randrange(64)))
        if endpoint == "journal":
            value = {"experiment_id": self.experiment_id, "sweep": "s", "seq": r.randrange(3),
                     "record": "{}"}
        elif endpoint == "queue":
            value = r.choice([{"command": ["true"], "slots": 1, "pool": "default"},
                              {"slots": 1, "running": [1]}, {"exit_code": 0}])  # no wait_s: a long poll
        else:
            value = self.seed_body(r, endpoint)
        return self.json_text(r, self.mutate_json(r, value) if r.random() < 0.8 else value)

    def headers(self, r, method, endpoint):
        headers = [("Host", r.choice([self.host] * 20 + ["localhost", "evil.example", "[::1]",
                                                        "a:b", "x" * 300]))]
        if method in ("POST", "PUT", "PATCH", "DELETE") or r.random() < 0.1:
            ctype = r.choice(["application/json"] * 8 + ["text/plain", "application/octet-stream",
                                                         "multipart/form-data", ""])
            if ctype:
                headers.append(("Content-Type", ctype))
        if r.random() < 0.05:
            headers.append(("Origin", r.choice([f"http://{self.host}", "http://evil.example", "null"])))
        if r.random() < 0.05:
            headers.append(("Expect", r.choice(["100-continue", "nothing"])))
        if r.random() < 0.03:
            headers.append((r.choice(["X-Junk", "Authorization", "Connection"]),
                            r.choice(["close", "Bearer x", "keep-alive", "\xe9"])))
        return headers

    def request(self, index):
        """(payload bytes, HEAD?, complete?) of request `index`."""
        r = random.Random(f"{self.seed}:{index}")
        if r.random() < 0.03:  # raw junk on the wire
            junk = r.choice([bytes(r.randrange(256) for _ in range(r.randrange(200))) + b"\r\n\r\n",
                             b"GET / HTTP/9.9\r\n\r\n", b"GET  / HTTP/1.1\r\n\r\n",
                             b"GET / HTTP/1.1\r\nHost: x\r\n a: folded\r\n\r\n",
                             b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
                             b"GET / HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 70000 + b"\r\n\r\n"])
            return junk, False, True
        path, endpoint = self.path(r)
        method = r.choice(METHODS) if r.random() < 0.3 else (
            r.choice(self.routes.get(endpoint, ["GET", "POST"])) if endpoint in self.routes
            else r.choice(["GET", "POST", "PUT", "DELETE"]))
        target = path.encode("utf-8", "surrogateescape")
        target = b"".join(b"%%%02X" % c if c < 0x21 or c > 0x7e else bytes([c]) for c in target)
        if method == "GET" or r.random() < 0.2:
            target += b"?" + self.query(r).encode("utf-8", "surrogateescape")
        headers = self.headers(r, method, endpoint)
        body = self.body(r, endpoint) if method not in ("GET", "HEAD") or r.random() < 0.05 else b""
        complete = True
        framing = r.random()
        if framing < 0.1 and body:
            chunks, at = [], 0
            while at < len(body):
                piece = body[at:at + r.randint(1, max(1, len(body) // 3))]
                chunks.append(b"%x\r\n" % len(piece) + piece + b"\r\n")
                at += len(piece)
            if r.random() < 0.1:
                chunks.insert(r.randrange(len(chunks) + 1), r.choice([b"zz\r\n", b"5\r\nab\r\n", b"-1\r\n"]))
                complete = False  # the server may wait for bytes that never come
            encoded = b"".join(chunks) + b"0\r\n\r\n"
            headers.append(("Transfer-Encoding", "chunked"))
            body = encoded
        elif framing < 0.13 and body:
            headers.append(("Content-Length", str(len(body) + r.randint(1, 100))))
            complete = False  # the body ends early: the server may only close
        elif body or method in ("POST", "PUT"):
            headers.append(("Content-Length", str(len(body))))
        head = method.encode() + b" " + target + b" HTTP/1.1\r\n"
        head += b"".join(n.encode() + b": " + v.encode("utf-8", "surrogateescape") + b"\r\n"
                         for n, v in headers)
        return head + b"\r\n" + body, method == "HEAD", complete


def setup_ids(port):
    """An experiment and a run for the seeds to name."""
    conn = Connection(port)

    def post(endpoint, body):
        data = json.dumps(body).encode()
        conn.sock = conn.sock or socket.create_connection(("127.0.0.1", port), timeout=10)
        conn.sock.sendall(f"POST /api/2.0/mlflow/{endpoint} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                          f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data)
        while b"\r\n\r\n" not in conn.buf:
            conn._fill()
        head, _, rest = conn.buf.partition(b"\r\n\r\n")
        length = int(re.search(rb"Content-Length: (\d+)", head).group(1))
        while len(rest) < length:
            conn.buf = head + b"\r\n\r\n" + rest
            conn._fill()
            head, _, rest = conn.buf.partition(b"\r\n\r\n")
        conn.buf = rest[length:]
        return json.loads(rest[:length])

    experiment = post("experiments/create", {"name": "fuzz-base"})["experiment_id"]
    run = post("runs/create", {"experiment_id": experiment, "start_time": 1})["run"]["info"]["run_id"]
    conn.close()
    return experiment, run


def fuzz(port, seed, requests=None, seconds=None, alive=None, report_every=0, agents=True):
    """Sends requests until `requests` or `seconds` run out; returns (sent,
    elapsed, statuses, findings). `alive()` says whether the server runs;
    `agents` False leaves out the queue's agent endpoints."""
    experiment, run = setup_ids(port)
    fuzzer = Fuzzer(seed, port, experiment, run, agents)
    conn = Connection(port)
    statuses, findings = {}, []
    start = time.monotonic()
    index = 0
    while (requests is None or index < requests) and \
            (seconds is None or time.monotonic() - start < seconds):
        payload, head, complete = fuzzer.request(index)
        status = conn.exchange(payload, head, complete)
        statuses[status] = statuses.get(status, 0) + 1
        bad = (status is None and complete) or \
            (status is not None and status >= 500 and status not in (501, 505))
        if bad or (index % 1000 == 999 and not health(port)) or (alive and not alive()):
            findings.append((index, status, payload[:300]))
            if alive and not alive():
                break
            conn.close()
        index += 1
        if report_every and index % report_every == 0:
            print(f"  {index} requests, {time.monotonic() - start:.0f} s, statuses {statuses}",
                  flush=True)
    conn.close()
    if not health(port):
        findings.append((index, "health", b"/health failed after the run"))
    return index, time.monotonic() - start, statuses, findings


def health(port):
    try:
        answer = raw_exchange(port, f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        return answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"\r\n\r\nOK")
    except OSError:
        return False


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int)
    parser.add_argument("--seconds", type=float)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--without-agents", action="store_true",
                        help="leave out the queue's agent endpoints (heartbeats, exits, logs)")
    args = parser.parse_args()
    if args.requests is None and args.seconds is None:
        args.requests = 1_000_000
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    print(f"fuzz_server: seed {seed}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(tmp)
        try:
            sent, elapsed, statuses, findings = fuzz(
                server.port, seed, args.requests, args.seconds,
                alive=lambda: server.proc.poll() is None, report_every=50_000,
                agents=not args.without_agents)
        finally:
            exit_code = server.proc.poll()
            tail = server.stderr_tail()
            server.stop()
    print(f"fuzz_server: seed {seed}: {sent} requests in {elapsed:.0f} s "
          f"({sent / max(elapsed, 1e-9):.0f}/s); statuses {dict(sorted(statuses.items(), key=str))}")
    if exit_code is not None:
        print(f"fuzz_server: the server exited with {exit_code}\n{tail}")
    for index, status, payload in findings[:20]:
        print(f"  finding: request {index} (seed {seed}): {status}: {payload!r}")
    print(f"fuzz_server: {len(findings)} findings")
    return 1 if findings or exit_code is not None else 0


if __name__ == "__main__":
    sys.exit(main())
