"""Elastic jobs end to end: `cohort run --host-discovery-script` with
elastic_train.py (cohort.torch.elastic over a cohort.data loader). Workers die
(kill -9, rank 0 too), hang (SIGSTOP) or join (the discovery script's host file
grows) mid-epoch; the job goes on without restarting the survivors, and the
epoch's committed steps saw every sample exactly once. Runs as plain pytest:
each case starts its own `cohort run` with --timeout-secs as its deadline."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("COHORT_BUILD_DIR", os.path.join(REPO, "build"))
CLI = os.path.join(BUILD, "cohort")
TRAIN = os.path.join(REPO, "tests", "python", "elastic_train.py")
SAMPLES = 60


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    sys.path.insert(0, os.path.join(REPO, "python"))
    from cohort.data import Writer
    location = str(tmp_path_factory.mktemp("elastic") / "ds")
    w = Writer.create(location, [("x", "array", "float32"), ("label", "label")])
    for i in range(SAMPLES):
        w.append({"x": np.full(4, i, np.float32), "label": i})
    w.commit("elastic test samples")
    return location


def run_elastic(tmp_path, dataset, slots, *train_args, flags=()):
    hosts = tmp_path / "hosts"
    hosts.write_text(slots + "\n")
    out = tmp_path / "out.json"
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"), COHORT_BUILD_DIR=BUILD)
    command = [CLI, "run", "--host-discovery-script", "cat " + str(hosts), "--timeout-secs", "100",
               *flags, "--", sys.executable, TRAIN, dataset, str(out),
               *[a.replace("HOSTS", str(hosts)) for a in train_args]]
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    record = json.loads(out.read_text()) if out.exists() else None
    return proc, record


def assert_each_sample_once(proc, record):
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = record["seen"]["0"]
    assert sorted(seen) == list(range(SAMPLES)), (len(seen), proc.stderr)


@pytest.mark.parametrize("victim", [1, 0])
def test_kill_9_mid_epoch_survivors_finish_the_epoch(tmp_path, dataset, victim):
    proc, record = run_elastic(tmp_path, dataset, "127.0.0.1:3", "--kill", "%d:3" % victim,
                               flags=["--min-np", "2", "--timeout", "30"])
    assert_each_sample_once(proc, record)
    # 3 steps of 3 ranks x 4 samples, then the 24 left on 2 ranks.
    assert record["sizes"] == [3, 3, 3, 2, 2, 2], record["sizes"]
    assert "was killed by signal 9 (Killed); going on with 2 workers" in proc.stderr
    assert "elastic round 2 (worker %d was killed by signal 9" % victim in proc.stderr
    assert len(record["resumed"]) == 1  # the survivors reset once, without a restart


def test_discovered_host_grows_the_job_at_a_commit(tmp_path, dataset):
    proc, record = run_elastic(tmp_path, dataset, "127.0.0.1:2", "--grow",
                               "2:HOSTS:127.0.0.1:3", flags=["--min-np", "2", "--timeout", "60"])
    assert_each_sample_once(proc, record)
    # 2 steps of 2 x 4, then the 44 left on 3 ranks (the last step padded).
    assert record["sizes"] == [2, 2, 3, 3, 3, 3], record["sizes"]
    assert "elastic round 2 (a worker started on 127.0.0.1): 3 workers" in proc.stderr


def test_host_with_fewer_slots_shrinks_the_job(tmp_path, dataset):
    proc, record = run_elastic(tmp_path, dataset, "127.0.0.1:3", "--grow", "2:HOSTS:127.0.0.1:2",
                               flags=["--min-np", "2", "--timeout", "30"])
    assert_each_sample_once(proc, record)
    assert record["sizes"][:2] == [3, 3] and set(record["sizes"][2:]) == {2}, record["sizes"]
    assert "host 127.0.0.1 has fewer slots now; stopping worker 2" in proc.stderr, proc.stderr
    assert "elastic round 2 (host 127.0.0.1 shrank): 2 workers" in proc.stderr, proc.stderr


def test_stopped_worker_is_removed_after_the_elastic_timeout(tmp_path, dataset):
    proc, record = run_elastic(tmp_path, dataset, "127.0.0.1:3", "--kill", "1:2:STOP",
                               flags=["--min-np", "2", "--timeout", "3", "--elastic-timeout", "4"])
    assert_each_sample_once(proc, record)
    assert record["sizes"][:2] == [3, 3] and set(record["sizes"][2:]) == {2}, record["sizes"]
    assert ("did not join elastic round 2 within 4 s (--elastic-timeout); removing it"
            in proc.stderr), proc.stderr


LATE_SCRIPT = """
import sys, time, numpy, cohort, cohort.elastic
cohort.init()
if cohort.rank() == 0 and cohort.elastic.rounds()[0] == 1:
    open(sys.argv[1], "w").write("127.0.0.1:3\\n")
    deadline = time.time() + 60
    while cohort.elastic.rounds()[1] == 1 and time.time() < deadline:
        time.sleep(0.05)
cohort.allreduce(numpy.zeros(1), name="end")  # rank 1 ends after rank 0 saw the new round
cohort.shutdown()
"""


def test_a_worker_still_joining_when_training_ends_is_stopped(tmp_path):
    hosts, script = tmp_path / "hosts", tmp_path / "late.py"
    hosts.write_text("127.0.0.1:2\n")
    script.write_text(LATE_SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"), COHORT_BUILD_DIR=BUILD)
    proc = subprocess.run([CLI, "run", "--host-discovery-script", "cat " + str(hosts),
                           "--min-np", "2", "--timeout-secs", "100", "--", sys.executable,
                           str(script), str(hosts)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ("the job's training ended; stopping worker 2, which was waiting to join it"
            in proc.stderr), proc.stderr


def test_below_min_np_the_job_fails_saying_so(tmp_path, dataset):
    proc, record = run_elastic(tmp_path, dataset, "127.0.0.1:2", "--kill", "1:1",
                               flags=["--min-np", "2", "--elastic-timeout", "2"])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert record is None
    assert ("cohort run: 1 worker left, below --min-np 2, and no more slots were discovered "
            "within 2 s (--elastic-timeout); stopping the other 1 worker") in proc.stderr, proc.stderr


def test_reset_limit_ends_the_job(tmp_path, dataset):
    proc, _ = run_elastic(tmp_path, dataset, "127.0.0.1:3", "--kill", "2:1",
                          flags=["--min-np", "2", "--reset-limit", "0"])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert ("the job's workers changed 1 times, more than --reset-limit 0 (last: worker 2 was "
            "killed by signal 9 (Killed))") in proc.stderr, proc.stderr


def test_elastic_flags_are_checked(tmp_path):
    def usage(*flags):
        proc = subprocess.run([CLI, "run", *flags, "--", "true"], capture_output=True, text=True,
                              timeout=30)
        assert proc.returncode == 2
        return proc.stderr.splitlines()[0]
    assert usage("--min-np", "2") == (
        "cohort run: --min-np needs --host-discovery-script (an elastic job)")
    assert usage("--host-discovery-script", "x", "--min-np", "3", "--max-np", "2") == (
        "cohort run: --max-np 2 is below --min-np 3")
    assert usage("--host-discovery-script", "x", "--elastic-timeout", "0").startswith(
        "cohort run: --elastic-timeout")
    assert usage("--host-discovery-script", "x", "-H", "a:2") == (
        "cohort run: an elastic job takes its hosts from --host-discovery-script, "
        "not -H or --hostfile")
    proc = subprocess.run([CLI, "run", "--host-discovery-script", "echo 'a:b'", "--", "true"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1
    assert "host discovery output line 1 'a:b': expected host or host:slots" in proc.stderr


def test_elastic_sampler_splits_the_rest_of_the_epoch_over_the_new_ranks(monkeypatch):
    sys.path.insert(0, os.path.join(REPO, "python"))
    from cohort.torch.elastic import sampler as sampler_module
    world = {"rank": 0, "size": 2}
    monkeypatch.setattr(sampler_module, "rank", lambda: world["rank"])
    monkeypatch.setattr(sampler_module, "size", lambda: world["size"])
    dataset = list(range(11))
    shares = {}
    for r in range(2):
        world["rank"] = r
        shares[r] = list(sampler_module.ElasticSampler(dataset, shuffle=True, seed=3))
    # Two ranks, two batches of 2 each: 8 samples processed.
    first = shares[0][:4] + shares[1][:4]
    sampler = sampler_module.ElasticSampler(dataset, shuffle=True, seed=3)
    sampler.record_batch(0, 2)
    sampler.record_batch(1, 2)
    state = sampler.state_dict()
    assert state == {"epoch": 0, "processed_num": 8}
    world["size"] = 3
    rest = []
    for r in range(3):
        world["rank"] = r
        s = sampler_module.ElasticSampler(dataset, shuffle=True, seed=3)
        s.load_state_dict(state)
        assert len(s) == 1
        rest += list(s)
    assert sorted(first + rest) == dataset
    sampler.set_epoch(1)
    assert sampler.state_dict() == {"epoch": 1, "processed_num": 0}


class _BrokenRound:
    """The handle of an allreduce whose round broke (a peer died)."""

    def wait(self):
        raise RuntimeError("allreduce: lost rank 1 (simulated)")


class _Completed:
    """The handle of an allreduce that completed: Adasum of one rank's delta is itself."""

    def __init__(self, tensor):
        self.tensor = tensor

    def wait(self):
        return self.tensor


def test_adasum_optimizer_drops_its_allreduces_on_restore(monkeypatch):
    """A round breaks while op=Adasum's allreduces are in flight; the elastic
    state's restore() must drop them, else the next backward finds the old
    handles and refuses the gradient (as computed twice before step())."""
    sys.path.insert(0, os.path.join(REPO, "python"))
    import torch
    from cohort.torch import optimizer as optimizer_module
    from cohort.torch.compression import Compression
    from cohort.torch.elastic.state import ModelStateHandler, OptimizerStateHandler

    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    base = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    # What DistributedOptimizer(op=Adasum) builds on two ranks or more.
    cls = type("SGD", (torch.optim.SGD,),
               dict(optimizer_module._DistributedAdasumOptimizer.__dict__))
    opt = cls(base.param_groups, model.named_parameters(), Compression.none)
    handlers = [ModelStateHandler(model), OptimizerStateHandler(opt)]
    x = torch.randn(4, 3)

    monkeypatch.setattr(optimizer_module, "allreduce_async_", lambda t, **kw: _BrokenRound())
    model(x).sum().backward()  # every parameter's local step and allreduce start
    with pytest.raises(RuntimeError, match="lost rank 1"):
        opt.step()
    for handler in handlers:  # what the elastic loop does after the failure
        handler.restore()

    monkeypatch.setattr(optimizer_module, "allreduce_async_", lambda t, **kw: _Completed(t))
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
    # One rank's Adasum is its own delta: the result is a plain SGD step from
    # the restored state.
    torch.manual_seed(0)
    plain = torch.nn.Linear(3, 2)
    plain_opt = torch.optim.SGD(plain.parameters(), lr=0.5, momentum=0.9)
    plain(x).sum().backward()
    plain_opt.step()
    for got, want in zip(model.parameters(), plain.parameters()):
        assert torch.allclose(got, want)
