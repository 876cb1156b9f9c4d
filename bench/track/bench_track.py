#!/usr/bin/env python3
"""Tracking benchmarks against a fresh `cohort server` per store (--stores:
SQLite in a temp directory, and/or PostgreSQL 15 in a throw-away cluster
started like the tests' with fsync on; loopback HTTP):

  ingest   one Python client posting runs/log-batch of 1000 metrics over one
           kept-alive connection: points/s acknowledged (durable: the store
           commits each batch with synchronous=FULL before answering);
  client   cohort.track's run.log() for every point, then flush: points/s,
           and the cost of one run.log() call in microseconds;
  search   runs/search over 10,000 runs with a param filter and a metric sort;
  history  metrics/get-history-bulk-interval of a 1,000,000-point series
           downsampled to 2,000 points.

Each figure is the median of --repeats runs. "server CPU" is the cohort
server process's, plus with PostgreSQL its backend process's (the WAL
writer and checkpointer are not counted). Usage:
  COHORT_BUILD_DIR=build PYTHONPATH=python /usr/bin/python3 bench/track/bench_track.py \
      [--stores sqlite,postgresql] [--parts ingest,client,search,history]
"""
import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "server"))
import postgres_cluster  # noqa: E402
from tracking_server_fixture import TrackingServer  # noqa: E402


class Client:
    """One kept-alive connection, as a Python MLflow client keeps its session."""

    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def call(self, method, endpoint, body=None, query=""):
        payload = json.dumps(body) if body is not None else None
        self.conn.request(method, "/api/2.0/mlflow/" + endpoint + query, body=payload,
                          headers={"Content-Type": "application/json"})
        resp = self.conn.getresponse()
        data = resp.read()
        if resp.status != 200:
            raise RuntimeError(f"{endpoint}: HTTP {resp.status} {data[:200]!r}")
        return json.loads(data)


def server_cpu_s(pid):
    """User + system CPU seconds the server process has used (a figure the
    machine's other load does not inflate, unlike wall time)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def new_run(client, experiment_id="0"):
    return client.call("POST", "runs/create", {"experiment_id": experiment_id,
                                               "start_time": int(time.time() * 1000)})["run"]["info"]["run_id"]


def bench_ingest(client, batches):
    run_id = new_run(client)
    now = int(time.time() * 1000)
    start = time.perf_counter()
    for b in range(batches):
        metrics = [{"key": "loss", "value": 1.0 / (i + 1), "timestamp": now, "step": b * 1000 + i}
                   for i in range(1000)]
        client.call("POST", "runs/log-batch", {"run_id": run_id, "metrics": metrics})
    return batches * 1000 / (time.perf_counter() - start)


def bench_client(url, points, spool):
    import cohort.track
    run = cohort.track.init(project="bench-client", uri=url, spool_dir=spool)
    start = time.perf_counter()
    for step in range(points):
        run.log({"loss": 1.0 / (step + 1)}, step=step)
    logged = time.perf_counter()
    run.flush()
    done = time.perf_counter()
    run.finish()
    return points / (done - start), (logged - start) / points * 1e6


def setup_runs(client, port, n, threads=4):
    """n runs with two params and one metric, created over `threads` connections."""
    from concurrent.futures import ThreadPoolExecutor
    eid = client.call("POST", "experiments/create", {"name": f"search-{time.time()}"})["experiment_id"]

    def create(first):
        c = Client(port)
        for i in range(first, n, threads):
            rid = new_run(c, eid)
            c.call("POST", "runs/log-batch", {
                "run_id": rid,
                "metrics": [{"key": "loss", "value": (i * 7919) % 10007 / 10007, "timestamp": 1}],
                "params": [{"key": "opt", "value": ["adam", "sgd", "lamb", "adagrad"][i % 4]},
                           {"key": "lr", "value": str(0.001 * (i % 10))}],
                "tags": [{"key": "team", "value": "vision"}]})

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(create, range(threads)))
    return eid


def bench_search(client, eid, max_results, matching):
    body = {"experiment_ids": [eid], "filter": "params.opt = 'adam'",
            "order_by": ["metrics.loss ASC"], "max_results": max_results}
    start = time.perf_counter()
    page = client.call("POST", "runs/search", body)
    elapsed = time.perf_counter() - start
    assert len(page["runs"]) == min(max_results, matching)
    return elapsed * 1000


def bench_history(client, run_id):
    start = time.perf_counter()
    body = client.call("GET", "metrics/get-history-bulk-interval",
                       query=f"?run_ids={run_id}&metric_key=loss&max_results=2000")
    elapsed = time.perf_counter() - start
    assert 1000 <= len(body["metrics"]) <= 2000, len(body["metrics"])
    return elapsed * 1000


def uri_database(uri):
    return uri.rsplit("/", 1)[1]


def bench_store(args, server, tmp, label, cluster):
    client = Client(server.port)
    pid = server.proc.pid
    # With PostgreSQL, the work is shared with the server's backend process:
    # its CPU is counted too (the WAL writer and checkpointer are not).
    backend = None
    if cluster:
        backend = int(cluster.sql("SELECT pid FROM pg_stat_activity WHERE application_name ="
                                  " 'cohort server'", uri_database(server.store)))

    def server_cpu():
        return server_cpu_s(pid) + (server_cpu_s(backend) if backend else 0.0)

    if "ingest" in args.parts:
        cpu0 = server_cpu()
        ingest = [bench_ingest(client, args.batches) for _ in range(args.repeats)]
        cpu_per_batch = (server_cpu() - cpu0) / (args.batches * args.repeats) * 1000
        print(f"[{label}] ingest: log-batch of 1000 metrics, one client: median "
              f"{statistics.median(ingest):,.0f} points/s (runs: "
              f"{', '.join(f'{x:,.0f}' for x in ingest)}); server CPU {cpu_per_batch:.2f} ms/batch "
              f"= {1000 / cpu_per_batch * 1000:,.0f} points per CPU-second", flush=True)
    if "client" in args.parts:
        results = [bench_client(server.url, 200000, os.path.join(tmp, "spool"))
                   for _ in range(args.repeats)]
        print(f"[{label}] client: cohort.track run.log per point + flush: median "
              f"{statistics.median(r[0] for r in results):,.0f} points/s, run.log() "
              f"{statistics.median(r[1] for r in results):.2f} us/call", flush=True)
    if "search" in args.parts:
        eid = setup_runs(client, server.port, args.runs)
        client = Client(server.port)  # the first one sat idle past the server's 60 s
        for max_results in (100, 1000):
            cpu0 = server_cpu()
            times = [bench_search(client, eid, max_results, args.runs // 4)
                     for _ in range(args.repeats * 2)]
            cpu = (server_cpu() - cpu0) / (args.repeats * 2) * 1000
            print(f"[{label}] search: {args.runs} runs, params.opt filter + metrics.loss sort, "
                  f"max_results={max_results}: median {statistics.median(times):.1f} ms "
                  f"(server CPU {cpu:.1f} ms/request)", flush=True)
    if "history" in args.parts:
        run_id = new_run(client)
        for b in range(args.history_points // 1000):
            client.call("POST", "runs/log-batch", {"run_id": run_id, "metrics": [
                {"key": "loss", "value": ((b * 1000 + i) * 2654435761 % 1000) / 1000.0,
                 "timestamp": 1, "step": b * 1000 + i} for i in range(1000)]})
        cpu0 = server_cpu()
        times = [bench_history(client, run_id) for _ in range(args.repeats * 2)]
        cpu = (server_cpu() - cpu0) / (args.repeats * 2) * 1000
        print(f"[{label}] history: {args.history_points:,}-point series to <= 2,000 points: median "
              f"{statistics.median(times):.1f} ms (server CPU {cpu:.1f} ms/request)", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batches", type=int, default=100, help="log-batch requests per ingest run")
    parser.add_argument("--runs", type=int, default=10000)
    parser.add_argument("--history-points", type=int, default=1000000)
    parser.add_argument("--stores", default="sqlite", help="comma-separated: sqlite, postgresql")
    parser.add_argument("--parts", default="ingest,client,search,history")
    args = parser.parse_args()
    for store in args.stores.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            cluster = postgres_cluster.PostgresCluster() if store == "postgresql" else None
            try:
                uri = cluster.new_database() if cluster else None
                server = TrackingServer(Path(tmp), store=uri)
                try:
                    bench_store(args, server, tmp, store, cluster)
                finally:
                    server.stop()
            finally:
                if cluster:
                    cluster.stop()
    print(f"load: {os.getloadavg()[0]:.1f} (1-min average; the machine is shared)")


if __name__ == "__main__":
    main()
