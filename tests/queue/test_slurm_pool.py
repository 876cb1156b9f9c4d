"""The queue's SLURM pool against a real SLURM on loopback: munged, slurmctld
and slurmd from Debian (tools/setup.sh), a minimal slurm.conf in tmp_path,
started for the test and stopped after."""
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from test_queue import DEADLINE_S, cli, gate, job, start_server, submit, wait_for  # noqa: E402

NEEDED = ["munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo"]
pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or any(shutil.which(b, path=os.environ.get("PATH", "") + ":/usr/sbin") is None
                             for b in NEEDED),
    reason="needs root and SLURM + munge (tools/setup.sh installs them)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SLURM_CONF = """ClusterName=cohort
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={d}/munge.sock
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MinJobAge=600
NodeName=cohortnode NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=cohort Nodes=cohortnode Default=YES MaxTime=INFINITE State=UP
"""


@pytest.fixture
def slurm(tmp_path, monkeypatch):
    d = tmp_path / "slurm"
    for sub in ("state", "spool"):
        (d / sub).mkdir(parents=True)
    d.chmod(0o700)
    key = d / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    conf = d / "slurm.conf"
    conf.write_text(SLURM_CONF.format(d=d, ctld_port=free_port(), d_port=free_port()))
    monkeypatch.setenv("SLURM_CONF", str(conf))
    sbin = lambda name: shutil.which(name, path="/usr/sbin:" + os.environ["PATH"])  # noqa: E731
    daemons = [subprocess.Popen([sbin("munged"), "-F", "-f", f"--socket={d}/munge.sock",
                                 f"--key-file={key}", f"--log-file={d}/munged.log",
                                 f"--pid-file={d}/munged.pid", f"--seed-file={d}/munged.seed"])]
    try:
        deadline = time.monotonic() + DEADLINE_S
        while not (d / "munge.sock").exists():
            assert time.monotonic() < deadline, "munged did not start"
            time.sleep(0.05)
        daemons.append(subprocess.Popen([sbin("slurmctld"), "-D", "-i", "-f", str(conf)]))
        daemons.append(subprocess.Popen([sbin("slurmd"), "-D", "-f", str(conf), "-N", "cohortnode"]))
        deadline = time.monotonic() + 60
        while True:
            p = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True)
            if p.stdout.strip() == "idle":
                break
            assert time.monotonic() < deadline, f"SLURM did not come up: {p.stdout} {p.stderr}"
            time.sleep(0.2)
        yield d
    finally:
        for daemon in reversed(daemons):
            daemon.terminate()
            try:
                daemon.wait(timeout=DEADLINE_S)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait(timeout=DEADLINE_S)


def test_slurm_pool_runs_gangs_through_sbatch(slurm, tmp_path):
    s = start_server(tmp_path, slots=1, extra=["--slurm-pool", "hpc"])
    try:
        assert cli(s, "submit", "--pool", "hpc", "--slots", "3", "--", "true") == (
            1, "", "cohort submit: the job asks for 3 slots but pool 'hpc' has 2 slots\n")
        gang = submit(s, "--pool", "hpc", "--slots", "2", "--", "sh", "-c",
                      'echo "tasks $SLURM_NTASKS job $COHORT_JOB_ID in $(pwd)"; exit 3',
                      cwd=tmp_path)
        j = wait_for(s, gang, {"succeeded", "failed"})
        assert (j["state"], j["exit_code"], j["host"]) == ("failed", 3, "slurm")
        assert cli(s, "logs", str(gang))[1] == f"tasks 2 job {gang} in {tmp_path}\n"
        ok = submit(s, "--pool", "hpc", "--", "true")
        assert wait_for(s, ok, {"succeeded", "failed"})["state"] == "succeeded"
        long = submit(s, "--pool", "hpc", "--", "sleep", "60")
        wait_for(s, long, {"running"})
        assert cli(s, "cancel", str(long))[0] == 0
        j = wait_for(s, long, {"cancelled", "failed", "succeeded"})
        assert (j["state"], j["reason"]) == ("cancelled", "cancelled by alice")
        p = subprocess.run(["squeue", "-h"], capture_output=True, text=True)
        assert p.stdout == ""
    finally:
        s.stop()


def slurm_jobs(name):
    """SLURM's ids of the jobs called `name`, in any state."""
    p = subprocess.run(["squeue", "-h", "--states=all", f"--name={name}", "-o", "%i"],
                       capture_output=True, text=True, check=True)
    return p.stdout.split()


def test_a_server_killed_between_sbatch_and_its_record_submits_nothing_twice(slurm, tmp_path):
    """Issue 25, item 9, for SLURM: a job recorded `starting` is found by its
    SLURM name and followed when sbatch had taken it, and submitted (once)
    when it had not."""
    s = start_server(tmp_path, slots=0, extra=["--slurm-pool", "hpc"])
    try:
        ran = submit(s, "--pool", "hpc", "--", *gate(tmp_path))
        wait_for(s, ran, {"running"})
        waits = submit(s, "--pool", "hpc", "--slots", "2", "--", "sh", "-c",
                       f"echo once >> {tmp_path}/waits")
        assert slurm_jobs(f"cohort-{ran}-0") and job(s, waits)["state"] == "pending"
    finally:
        s.stop(signal.SIGKILL)
    # As if the server died right after sbatch (`ran`) and right before it
    # (`waits`): both recorded `starting`, neither with SLURM's id.
    db = sqlite3.connect(tmp_path / "queue.db")
    db.execute("UPDATE queue_jobs SET state = 'starting', slurm_id = '' WHERE id = ?", (ran,))
    db.execute("UPDATE queue_jobs SET state = 'starting', host = 'slurm', started = 1"
               " WHERE id = ?", (waits,))
    db.commit()
    db.close()
    s = start_server(tmp_path, slots=0, extra=["--slurm-pool", "hpc"])
    try:
        assert job(s, ran)["state"] == "running"  # followed, not submitted again
        assert len(slurm_jobs(f"cohort-{ran}-0")) == 1
        assert job(s, waits)["state"] in ("pending", "running")
        (tmp_path / "go").touch()
        assert wait_for(s, ran, {"succeeded", "failed"})["state"] == "succeeded"
        assert wait_for(s, waits, {"succeeded", "failed"})["state"] == "succeeded"
        assert len(slurm_jobs(f"cohort-{waits}-0")) == 1
        assert (tmp_path / "waits").read_text() == "once\n"
    finally:
        s.stop()
