"""Experiment tracking: record a training run's config, metrics and files.

    import cohort.track
    run = cohort.track.init(project="digits", name="lr-0.1", config={"lr": 0.1})
    for step in range(steps):
        ...
        run.log({"loss": loss}, step=step)
    run.log_artifact("model.pt")
    run.finish()

COHORT_TRACKING_URI picks where runs go: ``http://host:port`` (a ``cohort
server``, or any MLflow server) or ``sqlite:PATH`` (embedded: no server;
the default is ``sqlite:~/.cohort/tracking.db``). ``run.log`` never waits
on the network: a background thread sends batches, and while the server is
unreachable they wait in a spool file (COHORT_TRACKING_SPOOL, default
~/.cohort/spool) and are replayed later, without doubles.

A run ends when its script does: ``finish()``, the end of a ``with`` block,
or else at exit, FINISHED, or FAILED when the script dies on an uncaught
exception (KILLED on Ctrl-C). A process killed outright is ended by the
server once its heartbeats stop (docs/tracking.md, "Runs that end").

In a job of several ranks only rank 0 records unless ``all_ranks=True``;
the other ranks get a run whose methods do nothing.

Every run records its provenance as tags: the git commit (and the dirty
diff as the artifact provenance/git.diff), the command line, the working
directory, the Python and torch versions, the host and world size, and each
dataset a cohort.data DataLoader opened (cohort.dataset.N = LOCATION@COMMIT). Every
10 s (``system_metrics_s``) the host's CPU, memory and network use are
logged as system/* metrics. While a run is active, cohort.torch's
DistributedOptimizer logs each step's engine figures to it: engine/step_time_s,
engine/allreduce_wait_s (time step() waited for the gradients' allreduce) and
engine/bytes_reduced.
"""
import os
import platform
import shlex
import socket
import subprocess
import sys
import threading
import time

from . import _track, settings

__all__ = ["init", "Run", "active_run"]

_active = None  # the run init() started last, until it finishes (what cohort.torch logs to)
_exit_hooks = False  # whether init() installed _end_on_exception and _end_at_exit


def active_run():
    """The run init() started last and not yet finished, or None."""
    return _active


def _rank():
    for value in (settings.text(settings.RANK, ""), os.environ.get("RANK", ""),
                  os.environ.get("OMPI_COMM_WORLD_RANK", ""), os.environ.get("PMI_RANK", "")):
        if value.isdigit():
            return int(value)
    return 0


def _git(*args):
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def _provenance():
    """Tags describing how to run this again, and the dirty diff (or None)."""
    tags = {
        "cohort.command": shlex.join([sys.executable] + sys.argv),
        "cohort.cwd": os.getcwd(),
        "cohort.python": platform.python_version(),
        "cohort.host": socket.gethostname(),
        "cohort.world_size": settings.text(settings.SIZE, "1"),
        "mlflow.source.name": sys.argv[0] if sys.argv and sys.argv[0] else "<interactive>",
        "mlflow.user": os.environ.get("USER", ""),
    }
    if settings.text(settings.PIPELINE):  # a pipeline step's job (docs/pipelines.md)
        tags["cohort.pipeline"] = settings.text(settings.PIPELINE)
        for var, tag in ((settings.PIPELINE_STEP, "step"), (settings.PIPELINE_RUN, "run"),
                         (settings.JOB_ID, "job")):
            tags["cohort.pipeline." + tag] = settings.text(var, "")
        inputs = settings.family(settings.INPUT_)
        for var, location in inputs.items():
            commit = inputs.get(var + "_COMMIT")
            if commit:
                name = var[len(settings.INPUT_):].lower()
                tags["cohort.pipeline.input." + name] = location + "@" + commit
    torch = sys.modules.get("torch")
    if torch is not None:
        tags["cohort.torch"] = getattr(torch, "__version__", "")
    commit = _git("rev-parse", "HEAD")
    diff = None
    if commit:
        tags["mlflow.source.git.commit"] = commit.strip()
        top = _git("rev-parse", "--show-toplevel")
        if top:
            tags["cohort.git.root"] = top.strip()
        diff = _git("diff", "HEAD")
        tags["cohort.git.dirty"] = "true" if diff else "false"
    return tags, diff or None


def _cpu_times():
    """(busy, total) jiffies of all CPUs, from /proc/stat."""
    with open("/proc/stat") as f:
        values = [int(x) for x in f.readline().split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    return sum(values) - idle, sum(values)


def _memory_used():
    info = {}
    with open("/proc/meminfo") as f:
        for line in f:
            name, value = line.split(":", 1)
            info[name] = int(value.split()[0]) * 1024
    return info["MemTotal"] - info.get("MemAvailable", info.get("MemFree", 0))


def _net_bytes():
    """(received, sent) bytes over every interface but loopback, from /proc/net/dev."""
    rx = tx = 0
    with open("/proc/net/dev") as f:
        for line in f.readlines()[2:]:
            name, data = line.split(":", 1)
            if name.strip() == "lo":
                continue
            fields = data.split()
            rx, tx = rx + int(fields[0]), tx + int(fields[8])
    return rx, tx


class _SystemMetrics(threading.Thread):
    """Logs this host's CPU use (%), memory in use (bytes) and network
    throughput (bytes/s) every `interval` seconds as system/* metrics."""

    def __init__(self, client, interval):
        super().__init__(name="cohort-track-system", daemon=True)
        self._client, self._interval = client, interval
        self._done = threading.Event()

    def run(self):
        busy, total = _cpu_times()
        rx, tx = _net_bytes()
        then, step = time.monotonic(), 0
        while not self._done.wait(self._interval):
            busy2, total2 = _cpu_times()
            rx2, tx2 = _net_bytes()
            now = time.monotonic()
            seconds = max(now - then, 1e-9)
            self._client.log({
                "system/cpu_percent": 100.0 * (busy2 - busy) / max(total2 - total, 1),
                "system/memory_used_bytes": float(_memory_used()),
                "system/network_receive_bytes_per_s": (rx2 - rx) / seconds,
                "system/network_transmit_bytes_per_s": (tx2 - tx) / seconds,
            }, step)
            busy, total, rx, tx, then, step = busy2, total2, rx2, tx2, now, step + 1

    def stop(self):
        self._done.set()
        self.join()


class Run:
    """One recorded run. Use ``log`` every step; ``finish`` at the end (also
    called on exit from a ``with`` block, FAILED when it raised). ``Run(None)``
    records nothing: what ranks other than 0 get, and a stand-in when
    tracking is off."""

    def __init__(self, client, system_metrics_s=None):
        self._client = client
        self._step = 0
        self._system = None
        if client and system_metrics_s:
            self._system = _SystemMetrics(client, system_metrics_s)
            self._system.start()

    @property
    def id(self):
        return self._client.run_id if self._client else None

    @property
    def experiment_id(self):
        return self._client.experiment_id if self._client else None

    def log(self, values, step=None):
        """Records each name -> number of ``values`` at ``step`` (default: one
        more than the last step logged). Returns at once."""
        if not isinstance(values, dict):
            raise TypeError("log: values must be a dict of name -> number, got %s"
                            % type(values).__name__)
        if step is None:
            step = self._step
        self._step = step + 1
        if self._client:
            self._client.log(values, int(step))

    def set_tag(self, key, value):
        if self._client:
            self._client.set_tag(str(key), str(value))

    def log_input(self, name, digest, source, source_type="local", context=""):
        """Records a dataset this run reads (MLflow's runs/log-inputs, shown by
        runs/get under inputs.dataset_inputs): ``digest`` names its version (at
        most 36 characters), ``context`` becomes its mlflow.data.context tag."""
        if self._client:
            self._client.log_input(str(name), str(digest), str(source_type), str(source),
                                   str(context))

    def record_dataset(self, location, commit_id):
        """Notes a dataset this run reads (cohort.data's DataLoader calls it) as
        the tag cohort.dataset.N = "LOCATION@COMMIT" and as a dataset input
        (name: the location's last part, digest: the commit id's first 36
        characters, source: LOCATION@COMMIT); the same one is noted once."""
        seen = self.__dict__.setdefault("_datasets", [])
        entry = "%s@%s" % (location, commit_id)
        if entry not in seen:
            seen.append(entry)
            self.set_tag("cohort.dataset.%d" % (len(seen) - 1), entry)
            name = str(location).rstrip("/").rsplit("/", 1)[-1] or str(location)
            self.log_input(name, str(commit_id)[:36], entry, source_type="cohort.data")

    def log_artifact(self, path, name=None):
        """Uploads the file at ``path`` now, as ``name`` (default its file name)."""
        if self._client:
            self._client.log_artifact(os.fspath(path), name or "")

    def flush(self):
        """Waits until every point logged so far is delivered or spooled."""
        if self._client:
            self._client.flush()

    def spooled_batches(self):
        return self._client.spooled_batches() if self._client else 0

    def _log_engine_step(self, wait_s, bytes_reduced, engine_stats=None):
        """cohort.torch's DistributedOptimizer reports each step here, with the
        engine's counters (cohort.engine_stats()): their change since the last
        step gives the step's cycles, allreduces and fusion figures."""
        now = time.perf_counter()
        values = {"engine/allreduce_wait_s": wait_s, "engine/bytes_reduced": float(bytes_reduced)}
        if engine_stats is not None:
            values.update(_fusion_figures(getattr(self, "_last_engine_stats", None), engine_stats))
            self._last_engine_stats = dict(engine_stats)
        last = getattr(self, "_last_engine_step", None)
        if last is not None:
            values["engine/step_time_s"] = now - last
        self._last_engine_step = now
        self._engine_steps = getattr(self, "_engine_steps", -1) + 1
        if self._client:
            self._client.log(values, self._engine_steps)

    def finish(self, status="FINISHED"):
        global _active
        if _active is self:
            _active = None
        if self._system:
            self._system.stop()
            self._system = None
        if self._client:
            self._client.finish(status)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.finish("FAILED" if exc_type else "FINISHED")
        return False


def _fusion_figures(before, now):
    """One step's engine figures from two engine_stats() readings."""
    d = {k: now[k] - (before or {}).get(k, 0) for k in now}
    out = {"engine/cycles": float(d["cycles"]), "engine/allreduces": float(d["allreduces"]),
           "engine/fusion/fused_bytes": float(d["fused_bytes"])}
    if d["allreduces"]:
        out["engine/fusion/tensors_per_allreduce"] = d["allreduced_tensors"] / d["allreduces"]
    if d["allreduced_tensors"]:
        out["engine/fusion/fused_tensor_fraction"] = d["fused_tensors"] / d["allreduced_tensors"]
    return out


def _end_on_exception(hook):
    """A sys.excepthook that ends the active run as FAILED (KILLED on Ctrl-C)
    before `hook` prints the traceback: a script that dies on an exception
    leaves no run RUNNING."""
    def excepthook(exc_type, exc, tb):
        run = _active
        if run is not None:
            try:
                run.finish("KILLED" if issubclass(exc_type, KeyboardInterrupt) else "FAILED")
            except Exception as e:  # the traceback below matters more
                print("cohort.track: could not end the run: %s" % e, file=sys.stderr)
        hook(exc_type, exc, tb)
    excepthook.cohort_track = True
    return excepthook


def _end_at_exit():
    """At interpreter exit, the run still active ends as FINISHED (the script
    returned or called sys.exit; an exception already ended it)."""
    run = _active
    if run is not None:
        try:
            run.finish("FINISHED")
        except Exception as e:  # at exit there is no caller left to raise to
            print("cohort.track: ending the run at exit: %s" % e, file=sys.stderr)


def _install_exit_hooks():
    global _exit_hooks
    if not getattr(sys.excepthook, "cohort_track", False):
        sys.excepthook = _end_on_exception(sys.excepthook)
    if not _exit_hooks:
        import atexit
        atexit.register(_end_at_exit)
        _exit_hooks = True


def init(project=None, name=None, config=None, tags=None, uri=None, all_ranks=False,
         spool_dir=None, flush_interval_ms=500, system_metrics_s=10.0, run_id=None):
    """Starts a run in experiment ``project`` (None: $MLFLOW_EXPERIMENT_NAME,
    else "Default"). ``config`` (a dict) is logged as the run's params,
    ``tags`` as tags. ``uri`` overrides COHORT_TRACKING_URI (then
    MLFLOW_TRACKING_URI). ``run_id`` (None: $MLFLOW_RUN_ID) goes on with
    that run instead of starting one, as ``mlflow.start_run`` does. Every
    ``system_metrics_s`` seconds (None or 0: never) the host's CPU, memory
    and network use are logged as system/* metrics."""
    if not all_ranks and _rank() != 0:
        return Run(None)
    run_tags, diff = _provenance()
    run_tags.update({str(k): str(v) for k, v in (tags or {}).items()})
    params = {str(k): str(v) for k, v in (config or {}).items()}
    client = _track.TrackingRun(uri or "", project or "", name or "", params, run_tags,
                                spool_dir or "", int(flush_interval_ms), run_id or "")
    run = Run(client, system_metrics_s)
    if diff:
        _log_text(run, "provenance/git.diff", diff)
    global _active
    _active = run
    _install_exit_hooks()
    return run


def _log_text(run, name, text):
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(text)
    try:
        run.log_artifact(f.name, name)
    finally:
        os.unlink(f.name)
