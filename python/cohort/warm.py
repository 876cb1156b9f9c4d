"""Warm starts: run a Python script forked from a process that has already
imported its heavy modules, instead of a fresh interpreter that imports them
again. Meant for sweep trials, whose start is mostly ``import torch``:

    command: /usr/bin/python3 -m cohort.warm --preload torch,sklearn.datasets -- train.py --epochs 1

``python3 -m cohort.warm [--preload MOD,...] [--idle S] [--] SCRIPT ARGS...``
behaves like ``python3 SCRIPT ARGS...``: the script's argv, environment,
working directory, stdin/stdout/stderr and exit status are this process's;
SIGTERM, SIGINT and SIGHUP sent to this process reach the script; when this
process is killed (SIGKILL) the script is killed too. Underneath, this
process is a small client: it asks a warm server (one per user, interpreter,
preload list, PYTHONPATH and COHORT_BUILD_DIR; started by the first client
and gone after ``--idle`` seconds, default 300, without a script) to fork,
and the fork runs the script with runpy. The server listens on a Unix socket
in a directory only the user can enter, and serves only its own user.

What a warm start cannot give: modules the server imported (the preload
list and what they import) are the server's copies, imported in the
server's environment, not the script's; threads the server started do not
exist in the fork (preload modules that start threads at import do not
belong in the list). See docs/sweeps.md, "Trial start".
"""
import argparse
import fcntl
import hashlib
import json
import os
import runpy
import selectors
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback

from cohort import settings

__all__ = ["main"]

_START_DEADLINE_S = 120  # the server's first start imports the preload list


def _key(preload):
    """The server a client may use: same interpreter, modules, paths, user."""
    parts = [sys.executable, ",".join(preload), os.environ.get("PYTHONPATH", ""),
             settings.text(settings.BUILD_DIR, ""), str(os.getuid())]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def _socket_dir():
    base = os.environ.get("XDG_RUNTIME_DIR") or "/tmp"
    path = os.path.join(base, "cohort-warm-%d" % os.getuid())
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.lstat(path)
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise RuntimeError("cohort.warm: %s must be a directory of this user's that only it can "
                           "enter (mode 0700)" % path)
    return path


def _send(conn, message):
    conn.sendall(json.dumps(message).encode() + b"\n")


def _read_line(conn, buffer):
    """One JSON line from conn (bytes left over stay in buffer); None at EOF."""
    while b"\n" not in buffer:
        data = conn.recv(65536)
        if not data:
            return None
        buffer.extend(data)
    line, _, rest = bytes(buffer).partition(b"\n")
    buffer[:] = rest
    return json.loads(line)


# ---- the client ------------------------------------------------------------

def _connect(path, preload, idle):
    """A connection to the warm server at path, starting one when none answers."""
    deadline = time.monotonic() + _START_DEADLINE_S
    server = None
    log = path[:-len(".sock")] + ".log"
    while True:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(path)
            return conn
        except (FileNotFoundError, ConnectionRefusedError):
            conn.close()
        if server is None:
            # Detached: it outlives this client and serves the next ones.
            with open(log, "w") as out:
                server = subprocess.Popen(
                    [sys.executable, "-m", "cohort.warm", "--serve", path, "--preload",
                     ",".join(preload), "--idle", str(idle)], stdin=subprocess.DEVNULL,
                    stdout=out, stderr=out, start_new_session=True, close_fds=True)
        elif server.poll():  # failed (0: another client's server is starting)
            with open(log) as f:
                raise RuntimeError("cohort.warm: the warm server failed to start:\n" + f.read())
        if time.monotonic() > deadline:
            raise RuntimeError("cohort.warm: no warm server answered at %s within %d s (see %s)"
                               % (path, _START_DEADLINE_S, log))
        time.sleep(0.05)  # polling the server's socket, with the deadline above


def _run_client(preload, idle, argv):
    path = os.path.join(_socket_dir(), _key(preload) + ".sock")
    conn = _connect(path, preload, idle)
    socket.send_fds(conn, [json.dumps({"argv": argv, "cwd": os.getcwd(),
                                       "env": dict(os.environ)}).encode() + b"\n"], [0, 1, 2])
    buffer = bytearray()
    started = _read_line(conn, buffer)
    if started is None or "pid" not in started:
        print("cohort.warm: the warm server did not start the script: %s"
              % (started or {}).get("error", "it closed the connection"), file=sys.stderr)
        return 1
    pid = started["pid"]

    def forward(sig, _frame):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)
    ended = _read_line(conn, buffer)
    if ended is None:
        print("cohort.warm: the warm server went away while the script ran", file=sys.stderr)
        return 1
    if ended.get("signal"):
        # Ends as the script did, so a launcher reports the same signal.
        if ended["signal"] not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(ended["signal"], signal.SIG_DFL)
        os.kill(os.getpid(), ended["signal"])
    return ended.get("code", 1)


# ---- the server ------------------------------------------------------------

def _run_script(conn, request, fds):
    """In the fork: become the client's script; never returns."""
    code = 1
    try:
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL if sig != signal.SIGINT else signal.default_int_handler)
        os.setpgid(0, 0)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])

        def watch_client():
            # The client gone (killed) means the script must go too.
            try:
                while conn.recv(1):
                    pass
            except OSError:
                pass
            os.kill(os.getpid(), signal.SIGKILL)
        threading.Thread(target=watch_client, daemon=True, name="cohort-warm-client").start()
        argv = request["argv"]
        sys.argv = list(argv)
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
        try:
            runpy.run_path(argv[0], run_name="__main__")
            code = 0
        except SystemExit as e:
            if e.code is None:
                code = 0
            elif isinstance(e.code, int):
                code = e.code
            else:
                print(e.code, file=sys.stderr)
                code = 1
        except BaseException:
            sys.excepthook(*sys.exc_info())
            code = 1
        import atexit
        atexit._run_exitfuncs()
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code & 0xFF)


def _serve(path, preload, idle):
    lock = open(path + ".lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return 0  # another server of this key is starting or running
    import importlib
    for name in preload:
        importlib.import_module(name)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    running = {}  # pid -> the client's connection
    last_busy = time.monotonic()
    try:
        while running or time.monotonic() - last_busy < idle:
            for _ in selector.select(timeout=0.05):
                conn, _ = listener.accept()
                last_busy = time.monotonic()
                _start(conn, listener, running)
            while running:
                pid, status = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    break
                conn = running.pop(pid, None)
                if conn is not None:
                    ended = ({"signal": os.WTERMSIG(status)} if os.WIFSIGNALED(status)
                             else {"code": os.WEXITSTATUS(status)})
                    try:
                        _send(conn, ended)
                    except OSError:
                        pass
                    conn.close()
                last_busy = time.monotonic()
    finally:
        os.unlink(path)
    return 0


def _start(conn, listener, running):
    """Forks the script a client asked for; the fork's pid goes back to it."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _, uid, _ = struct.unpack("3i", creds)
    if uid != os.getuid():
        conn.close()
        return
    try:
        data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
        while not data.endswith(b"\n"):
            more = conn.recv(1 << 20)
            if not more:
                raise ValueError("the request ended early")
            data += more
        request = json.loads(data)
        if len(fds) != 3 or not request.get("argv"):
            raise ValueError("a request needs argv and the client's stdin, stdout and stderr")
    except (OSError, ValueError) as e:
        try:
            _send(conn, {"error": str(e)})
        except OSError:
            pass
        conn.close()
        return
    pid = os.fork()
    if pid == 0:
        listener.close()
        for other in running.values():  # other clients' scripts are not this one's business
            other.close()
        _run_script(conn, request, fds)
    for fd in fds:
        os.close(fd)
    running[pid] = conn
    _send(conn, {"pid": pid})


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python3 -m cohort.warm",
        description="Run a Python script forked from a warm process (see cohort.warm).")
    parser.add_argument("--preload", default="",
                        help="modules the warm process imports once, comma-separated")
    parser.add_argument("--idle", type=float, default=300.0,
                        help="seconds the warm process waits for the next script (default 300)")
    parser.add_argument("--serve", metavar="SOCKET", help=argparse.SUPPRESS)
    parser.add_argument("script", nargs=argparse.REMAINDER, help="SCRIPT ARGS...")
    args = parser.parse_args(argv)
    preload = [m for m in args.preload.split(",") if m]
    if args.serve:
        return _serve(args.serve, preload, args.idle)
    script = args.script[1:] if args.script[:1] == ["--"] else args.script
    if not script:
        parser.error("no SCRIPT given")
    return _run_client(preload, args.idle, script)


if __name__ == "__main__":
    sys.exit(main())
