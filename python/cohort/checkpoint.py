"""cohort.checkpoint: save training state atomically and resume from it.

    import cohort.checkpoint as ckpt
    store = ckpt.Checkpointer("/ckpt/run1", keep_last=3)   # or "s3://bucket/prefix"
    state, step = store.load()                             # (None, None) when there is none
    ...
    store.save({"model": model.state_dict(), "opt": optimizer.state_dict()}, step,
               metric=val_loss)

A checkpoint is complete or absent, also when the process is killed while it
saves; the store keeps the newest `keep_last` and the best by `metric` (lower
is better unless higher_is_better=True) and deletes the rest. A corrupt
checkpoint is skipped with a CheckpointWarning naming it: load() returns the
newest one that loads. `state` is
anything torch.save (when torch is loaded) or pickle can write: a dict of
tensors and plain objects. Save from one rank (rank 0); load on every rank.

When a cohort.track run is active, each save tags it with the newest
checkpoint (cohort.checkpoint.location, .step, .sha256).

The module-level save(state, step) and load() use the location in
COHORT_CHECKPOINT_DIR, so a job the queue preempts (SIGTERM, then a grace
period) saves where its resumed run will look. The format is
docs/checkpoints.md."""
import io
import os
import pickle
import sys
import warnings

from . import settings

try:
    from . import _checkpoint
except ImportError as _missing:  # a -DCOHORT_MINIMAL=ON build has no checkpoint store
    _checkpoint = None
    _MISSING = str(_missing)

# The first line of a stored state says how the rest was written.
_TORCH = b"cohort-state torch\n"
_PICKLE = b"cohort-state pickle\n"


def _encode(state):
    if "torch" in sys.modules:
        buffer = io.BytesIO()
        sys.modules["torch"].save(state, buffer)
        return _TORCH + buffer.getvalue()
    return _PICKLE + pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)


def _decode(data, map_location):
    if data.startswith(_TORCH):
        import torch
        return torch.load(io.BytesIO(data[len(_TORCH):]), map_location=map_location,
                          weights_only=False)
    if data.startswith(_PICKLE):
        return pickle.loads(data[len(_PICKLE):])
    raise ValueError("not a cohort.checkpoint state (first bytes %r)" % data[:24])


class CheckpointWarning(UserWarning):
    """A checkpoint was skipped: its manifest cannot be read (it is left in
    place for you to inspect and delete), or its state is missing or does not
    match its manifest. The message names it and, on a load, which
    checkpoint was loaded instead."""


class Checkpointer:
    """Checkpoints at one location: a directory (created) or s3://bucket/prefix."""

    def __init__(self, location, keep_last=3, higher_is_better=False):
        if _checkpoint is None:
            raise ImportError("cohort.checkpoint needs the extension module cohort._checkpoint, "
                              "which this build does not have (a -DCOHORT_MINIMAL=ON build has "
                              "only the runtime and c10d modules; build without it for "
                              "checkpoints): " + _MISSING)
        self._store = _checkpoint.Store(os.fspath(location), keep_last, higher_is_better)

    def _call(self, method, *args):
        """self._store.method(*args), then each skipped checkpoint's report as
        a CheckpointWarning (also when the call raised)."""
        try:
            return getattr(self._store, method)(*args)
        finally:
            for message in self._store.take_warnings():
                warnings.warn(message, CheckpointWarning, stacklevel=4)

    @property
    def location(self):
        return self._store.location

    def save(self, state, step, metric=None):
        """Saves `state` as checkpoint `step` (an int >= 0), then deletes what
        keep_last and the best no longer need."""
        if isinstance(step, bool) or not isinstance(step, int):
            raise TypeError("step must be an int, not %s" % type(step).__name__)
        self._call("save", step, _encode(state), None if metric is None else float(metric))
        _record_on_tracking_run(self.location, step, self._call("list"))

    def load(self, step=None, map_location="cpu"):
        """(state, step) of the newest checkpoint (or of `step`);
        (None, None) when there is none."""
        if step is None:
            found = self._call("load_latest")
            if found is None:
                return None, None
            step, data = found
        else:
            data = self._call("load", step)
            if data is None:
                return None, None
        return _decode(data, map_location), step

    def list(self):
        """[{"step", "bytes", "metric", "sha256"}] of the complete checkpoints, oldest first."""
        return self._call("list")

    def best(self):
        """The best checkpoint's {"step", "bytes", "metric", "sha256"}, or None."""
        return self._call("best")


def _record_on_tracking_run(location, step, saved):
    """Tags the active cohort.track run, when there is one, with the newest
    checkpoint: cohort.checkpoint.location, .step and .sha256."""
    track = sys.modules.get("cohort.track")  # not imported: no run to record on
    run = track.active_run() if track is not None else None
    if run is None:
        return
    entry = next((c for c in saved if c["step"] == step), None)
    run.set_tag("cohort.checkpoint.location", location)
    run.set_tag("cohort.checkpoint.step", step)
    if entry is not None:
        run.set_tag("cohort.checkpoint.sha256", entry["sha256"])


def _default():
    location = settings.text(settings.CHECKPOINT_DIR)
    if not location:
        raise RuntimeError("cohort.checkpoint.save/load need COHORT_CHECKPOINT_DIR "
                           "(or use Checkpointer(location))")
    keep = settings.text(settings.CHECKPOINT_KEEP, "3")
    try:
        keep_last = int(keep)
    except ValueError:
        raise ValueError("COHORT_CHECKPOINT_KEEP '%s' is not an integer" % keep) from None
    return Checkpointer(location, keep_last=keep_last)


def save(state, step, metric=None):
    """Checkpointer(COHORT_CHECKPOINT_DIR).save(state, step, metric)."""
    _default().save(state, step, metric)


def load(step=None, map_location="cpu"):
    """Checkpointer(COHORT_CHECKPOINT_DIR).load(step) -> (state, step)."""
    return _default().load(step, map_location)
