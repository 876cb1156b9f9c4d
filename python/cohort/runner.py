"""cohort.run: runs a Python function on N workers of a local job (the
notebook workflow) and returns their results in rank order.

The function and its arguments travel to the workers with cloudpickle (so
functions defined in a notebook or in __main__ work); each worker is
`python -m cohort._run_worker DIR` under `cohort run -np N` and writes its
result (or its exception) to DIR/rank-<r>.pkl."""
import os
import subprocess
import sys
import tempfile
import warnings

_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _build_dir():
    from . import _build
    return _build


def _launcher():
    from . import _launcher_path as path
    if not os.access(path, os.X_OK):
        raise RuntimeError("cohort.run: the launcher %s does not exist; build the `cohort_cli` "
                           "target or set COHORT_BUILD_DIR" % path)
    return path


def _raise_worker_error(rank, np, exc, trace):
    if isinstance(exc, BaseException):
        exc.rank = rank
        exc.add_note("raised on rank %d of %d; worker traceback:\n%s" % (rank, np, trace))
        raise exc
    raise RuntimeError("cohort.run: rank %d of %d raised an exception that could not be sent "
                       "back (%s):\n%s" % (rank, np, exc, trace))


def _host_args(hosts, hostfile):
    """`cohort run` flags for Horovod's hosts ("h1:2,h2:2") / hostfile keywords."""
    if hosts and hostfile:
        raise ValueError("cohort.run: give hosts or hostfile, not both")
    if hosts:
        return ["-H", hosts]
    if hostfile:
        return ["--hostfile", hostfile]
    return []


def run(fn, args=(), kwargs=None, np=None, env=None, launcher_args=(), timeout=None,
        verbose=True, hosts=None, hostfile=None, num_proc=None, use_gloo=None, use_mpi=None):
    """Runs fn(*args, **kwargs) on `np` workers under `cohort run` and returns
    the list of their return values, rank 0 first. An exception on a worker is
    re-raised here with `.rank` set and the worker's traceback as a note.
    `env` adds environment variables; `launcher_args` adds `cohort run` flags
    (e.g. ["--timeout", "60"]); workers' output is printed with a [rank]
    prefix unless verbose is False. `timeout` (seconds) bounds the whole job.

    Horovod's horovod.run keywords work too: `num_proc` (= np), `hosts`
    ("host:slots,..."), `hostfile`; `use_gloo`/`use_mpi` choose Horovod's
    controller and mean nothing to cohort (a note says they are ignored)."""
    import cloudpickle

    if np is not None and num_proc is not None and int(np) != int(num_proc):
        raise ValueError("cohort.run: np=%r and num_proc=%r disagree" % (np, num_proc))
    np = 1 if np is None and num_proc is None else int(np if np is not None else num_proc)
    if np < 1:
        raise ValueError("cohort.run: np must be at least 1, got %r" % (np,))
    if use_gloo or use_mpi:
        warnings.warn("cohort.run: use_gloo/use_mpi are ignored; cohort runs its own collectives "
                      "(no Gloo or MPI controller)", stacklevel=2)
    launcher_args = _host_args(hosts, hostfile) + list(launcher_args)
    with tempfile.TemporaryDirectory(prefix="cohort-run-") as workdir:
        with open(os.path.join(workdir, "payload.pkl"), "wb") as f:
            cloudpickle.dump((fn, tuple(args), dict(kwargs or {})), f)
        child_env = dict(os.environ)
        child_env.update({k: str(v) for k, v in (env or {}).items()})
        if _build_dir() is not None:  # a source checkout's build, not an installed package
            child_env["COHORT_BUILD_DIR"] = _build_dir()
        # Workers import what this process can: functions and classes that
        # cloudpickle sends by reference (module-level ones) resolve there too.
        child_env["PYTHONPATH"] = os.pathsep.join(
            [_PACKAGE_PARENT] + [p for p in sys.path if p and os.path.isdir(p)])
        cmd = [_launcher(), "run", "-np", str(np), *launcher_args, "--", sys.executable, "-m",
               "cohort._run_worker", workdir]
        proc = subprocess.Popen(cmd, env=child_env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        output = []
        try:
            for line in proc.stdout:
                output.append(line)
                if verbose:
                    sys.stdout.write(line)
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise TimeoutError("cohort.run: the job did not finish within %s s" % timeout) from None
        finally:
            proc.stdout.close()
        results = {}
        for r in range(np):
            path = os.path.join(workdir, "rank-%d.pkl" % r)
            if os.path.exists(path):
                with open(path, "rb") as f:
                    results[r] = cloudpickle.load(f)
        for r in sorted(results):
            status, value, trace = results[r]
            if status == "error":
                _raise_worker_error(r, np, value, trace)
        if code != 0 or len(results) != np:
            raise RuntimeError("cohort.run: the job failed (exit status %d) and ranks %s returned "
                               "no result; its last output:\n%s" % (
                                   code, sorted(set(range(np)) - set(results)),
                                   "".join(output[-20:])))
        return [results[r][1] for r in range(np)]
