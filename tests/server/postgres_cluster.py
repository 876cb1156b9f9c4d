"""A throw-away PostgreSQL 15 cluster for the tracking tests and benchmarks:
initdb + pg_ctl on a temp dir, listening only on 127.0.0.1 at a free port
and on a Unix socket in that dir, run as an unprivileged user when we are
root (initdb refuses root), stopped and removed by stop() (the tests call it
from a fixture's teardown, so also on failure)."""
import os
import pwd
import shutil
import socket
import subprocess
import tempfile

BIN = "/usr/lib/postgresql/15/bin"
USER = "cohort"          # the cluster's superuser
PASSWORD = "s3cret-pw"   # password logins over TCP (scram); the Unix socket trusts


def available():
    return os.path.exists(os.path.join(BIN, "initdb")) and os.path.exists(os.path.join(BIN, "pg_ctl"))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresCluster:
    def __init__(self, fsync=True):
        self.dir = tempfile.mkdtemp(prefix="cohort-pg-")
        self.data = os.path.join(self.dir, "data")
        self.port = _free_port()
        self.owner = None
        if os.geteuid() == 0:
            self.owner = "postgres" if _user_exists("postgres") else "nobody"
            entry = pwd.getpwnam(self.owner)
            os.chown(self.dir, entry.pw_uid, entry.pw_gid)
        self._databases = 0
        try:
            pwfile = os.path.join(self.dir, "pw")
            with open(pwfile, "w") as f:
                f.write(PASSWORD + "\n")
            if self.owner:
                entry = pwd.getpwnam(self.owner)
                os.chown(pwfile, entry.pw_uid, entry.pw_gid)
            self._run(os.path.join(BIN, "initdb"), "-D", self.data, "-U", USER, "--pwfile", pwfile,
                      "--auth-local=trust", "--auth-host=scram-sha-256", "--locale=C",
                      "--encoding=UTF8", "--no-sync")
            self._options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.dir}"
                       f" -c fsync={'on' if fsync else 'off'} -c max_connections=40")
            self._pg_ctl("start")
        except BaseException:
            self.stop()
            raise

    def _pg_ctl(self, action):
        self._run(os.path.join(BIN, "pg_ctl"), "-D", self.data, "-o", self._options, "-w", "-t", "60",
                  "-m", "fast", "-l", os.path.join(self.dir, "log"), action)

    def restart(self):
        """Stops and starts PostgreSQL: every open session is dropped."""
        self._pg_ctl("restart")

    def _run(self, *args):
        cmd = ["runuser", "-u", self.owner, "--", *args] if self.owner else list(args)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:2])} failed: {p.stdout}{p.stderr}")
        return p.stdout

    def sql(self, statement, database="postgres"):
        """Runs SQL as the superuser over the Unix socket; returns psql's output."""
        return self._run(os.path.join(BIN, "psql"), "-h", self.dir, "-p", str(self.port), "-U", USER,
                         "-d", database, "-v", "ON_ERROR_STOP=1", "-Atc", statement)

    def new_database(self):
        """A fresh empty database; its URI (with the password)."""
        self._databases += 1
        name = f"track{self._databases}"
        self.sql(f"CREATE DATABASE {name}")
        return self.uri(name)

    def uri(self, database, password=PASSWORD):
        return f"postgresql://{USER}:{password}@127.0.0.1:{self.port}/{database}"

    def stop(self):
        if os.path.exists(os.path.join(self.data, "postmaster.pid")):
            try:
                self._run(os.path.join(BIN, "pg_ctl"), "-D", self.data, "-m", "immediate", "-w", "stop")
            except (RuntimeError, subprocess.TimeoutExpired):
                pass
        shutil.rmtree(self.dir, ignore_errors=True)


def _user_exists(name):
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False
