"""cohort.sweep: hyperparameter search.

As a library (ask/tell), over the C++ algorithms (cohort._sweep):

    study = cohort.sweep.Study(
        parameters={"lr": {"type": "float", "low": 1e-4, "high": 1.0, "log": True},
                    "optimizer": {"type": "categorical", "values": ["sgd", "adam"]},
                    "momentum": {"type": "float", "low": 0.0, "high": 0.99,
                                 "when": {"optimizer": "sgd"}}},
        algorithm="tpe", mode="min", seed=0, budget={"trials": 50})
    while (trial := study.ask()) is not None:
        study.tell(trial, loss(**trial.params))
    study.best.params

ASHA, Hyperband and PBT also take intermediate results: study.report(trial,
value, step) returns "continue", "pause" (save a checkpoint and stop; the
trial may be resumed later: ask() returns it again with trial.resumed) or
"stop".

Inside a trial started by `cohort sweep SPEC.yaml` (docs/sweeps.md):
params() gives the trial's values, report(value, step) sends a result to the
controller and returns its decision, checkpoint_dir() is where the trial keeps
the state it resumes from.
"""
import json
import os
import socket
import time

from . import _sweep, settings

__all__ = ["Study", "Trial", "params", "report", "checkpoint_dir", "trial_id", "resource",
           "clone_checkpoint_dir", "start_step", "in_sweep"]


class Trial:
    """One trial: `params` (a dict of the active parameters), `resource` (train
    until this many steps/epochs), `resumed` (a paused trial promoted),
    `clone_of` and `start_step` (PBT: start from that trial's checkpoint)."""

    def __init__(self, d):
        self.id = d["id"]
        self.params = d["params"]
        self.resource = d["resource"]
        self.resumed = d["resumed"]
        self.clone_of = d["clone_of"]
        self.start_step = d["start_step"]
        self.state = d.get("state", "running")
        self.value = d.get("value")
        self.error = d.get("error", "")

    def __repr__(self):
        return "Trial(id=%d, state=%s, value=%r, params=%r)" % (self.id, self.state, self.value,
                                                                 self.params)


class Study:
    """An ask/tell study. `parameters`: {name: {"type": "float"|"int"|"categorical",
    "low", "high", "log", "values", "when"}}; `algorithm`: grid, random, sobol,
    tpe, asha, hyperband or pbt; `budget`: {"trials", "concurrent", "min_resource",
    "max_resource", "reduction"} (docs/sweeps.md). Bad arguments raise ValueError."""

    def __init__(self, parameters, algorithm="random", mode="min", seed=0, budget=None,
                 sobol=False, sampler="random", grid_points=5):
        if not isinstance(parameters, dict) or not parameters:
            raise ValueError("parameters must be a non-empty dict {name: {type: ...}}")
        self._study = _sweep.Study(parameters, algorithm, mode, int(seed), dict(budget or {}),
                                   bool(sobol), sampler, int(grid_points))

    def ask(self):
        """The next trial to run, or None when none can start now."""
        d = self._study.ask()
        return None if d is None else Trial(d)

    def report(self, trial, value, step):
        """An intermediate result; returns "continue", "pause" or "stop"."""
        return self._study.report(_id(trial), float(value), int(step))

    def tell(self, trial, value):
        """The trial's final result."""
        self._study.tell(_id(trial), float(value))

    def fail(self, trial, error):
        self._study.fail(_id(trial), str(error))

    @property
    def finished(self):
        """No trial running and none left to ask for."""
        return self._study.finished

    @property
    def trials(self):
        return [Trial(d) for d in self._study.trials()]

    @property
    def best(self):
        """The completed trial with the best value, or None."""
        d = self._study.best()
        return None if d is None else Trial(d)


def _id(trial):
    return trial.id if isinstance(trial, Trial) else int(trial)


# --- inside a trial run by `cohort sweep` ---------------------------------

def in_sweep():
    """Whether this process is a trial of `cohort sweep`."""
    return settings.is_set(settings.SWEEP_TRIAL)


def _env(name):
    value = settings.text(name)
    if value is None:
        raise RuntimeError("%s is not set: this process is not a trial of `cohort sweep`" % name)
    return value


def trial_id():
    return int(_env(settings.SWEEP_TRIAL))


def params():
    """This trial's parameter values (a dict)."""
    return json.loads(_env(settings.SWEEP_PARAMS))


_resource = None  # raised by the controller's answers to report()


def resource():
    """Train until this many steps (epochs, ...) have been done in total. ASHA
    may raise it when a report promotes the trial at once: loop on it."""
    return _resource if _resource is not None else int(_env(settings.SWEEP_RESOURCE))


def checkpoint_dir():
    """Where this trial saves the state it resumes from when paused."""
    return _env(settings.SWEEP_CHECKPOINT_DIR)


def clone_checkpoint_dir():
    """PBT: the checkpoint directory of the trial this one starts from, or None."""
    return settings.text(settings.SWEEP_CLONE_FROM) or None


def start_step():
    """PBT: the step the cloned checkpoint was taken at (0 otherwise)."""
    return int(settings.text(settings.SWEEP_START_STEP, "0"))


_connection = None

# How long report() keeps trying to reach the controller: a trial running as a
# queue job outlives a killed controller and goes on with the restarted one.
_RECONNECT_S = 60.0


def _exchange(line):
    """Sends one report line and returns the controller's answer; OSError when
    the controller cannot be reached or went away."""
    global _connection
    if _connection is None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(_env(settings.SWEEP_SOCKET))
        except OSError:
            s.close()
            raise
        _connection = s.makefile("rw", encoding="utf-8", newline="\n")
    _connection.write(line)
    _connection.flush()
    reply = _connection.readline().strip()
    if not reply:
        raise ConnectionError("the sweep controller closed the connection")
    return reply


def _disconnect():
    global _connection
    if _connection is not None:
        try:
            _connection.close()
        except OSError:
            pass
        _connection = None


def report(value, step):
    """Sends a result after `step` units of resource to the sweep controller
    and returns its decision: "continue", "pause" (save to checkpoint_dir() and
    exit 0) or "stop" (exit 0). `value` is the metric's value, or a dict of
    metrics of which the spec's metric is used. Every rank calls it; rank 0's
    value counts and every rank gets the same decision. A controller that is
    gone (killed, and started again) is tried again for up to
    $COHORT_SWEEP_RECONNECT_S seconds (default 60)."""
    global _resource
    if isinstance(value, dict):
        payload = {k: float(v) for k, v in value.items()}
    else:
        payload = float(value)
    rank = int(settings.text(settings.RANK, "0"))
    line = "report %d %d %d %s\n" % (trial_id(), rank, int(step), json.dumps(payload))
    patience = float(settings.text(settings.SWEEP_RECONNECT_S, _RECONNECT_S))
    deadline = time.monotonic() + patience
    while True:
        try:
            reply = _exchange(line)
            break
        except OSError as e:
            _disconnect()
            if time.monotonic() >= deadline:
                raise RuntimeError("cannot reach the sweep controller at %s for %g s: %s"
                                   % (_env(settings.SWEEP_SOCKET), patience, e)) from e
            time.sleep(0.2)  # the restarted controller listens again soon
    if reply.startswith("error "):
        raise ValueError(reply[len("error "):])
    decision, _, target = reply.partition(" ")
    if target:
        _resource = int(target)
    return decision
