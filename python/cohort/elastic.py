"""Elastic training, framework-neutral part (horovod.common.elastic's names).

Under `cohort run --host-discovery-script S --min-np N` workers join and leave
while the job runs. A failed collective raises HorovodInternalError (a
CohortError) on the survivors; `run_fn` then restores the last committed
state, leaves the broken round and joins the next one (shutdown + init: new
ranks, a new mesh, the same processes), synchronizes the state from the new
rank 0 and calls the training function again. When the launcher has
published a newer round (a new worker is waiting), `commit()` raises
HostsUpdatedInterrupt on every rank at the same step and the job moves to it
the same way, without restoring. See cohort.torch.elastic for the PyTorch
state (model, optimizer, samplers, cohort.data loaders)."""
import functools

from . import _cohort

__all__ = ["HostsUpdatedInterrupt", "State", "ObjectState", "run_fn", "rounds"]


class HostsUpdatedInterrupt(RuntimeError):
    """The job's workers changed: raised by State.commit() and
    check_host_updates() on every rank at the same step. `skip_sync` says the
    state need not be synchronized before training resumes."""

    def __init__(self, skip_sync=False):
        super().__init__("the job's hosts were updated")
        self.skip_sync = skip_sync


def rounds():
    """(joined, newest): the round of the elastic job this process joined
    and the newest one the launcher published; None outside an elastic job
    (or before init)."""
    if not _cohort.is_initialized():
        return None
    try:
        return _cohort.elastic_rounds()
    except _cohort.CohortValueError:
        return None


class State:
    """State kept in memory across the workers of an elastic job.

    bcast_object(obj) returns rank 0's obj on every rank; get_rank() this
    worker's rank. Subclasses implement save, restore and sync."""

    def __init__(self, bcast_object, get_rank):
        self._bcast_object = bcast_object
        self._rank = get_rank
        self._reset_callbacks = []

    def register_reset_callbacks(self, callbacks):
        """Functions called after every reset (workers added or removed), e.g.
        to scale the learning rate with the new size()."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        for callback in self._reset_callbacks:
            callback()

    def on_hosts_updated(self, timestamp, update_res=None):
        """Horovod's notification hook; cohort's workers ask the store
        instead (check_host_updates), so there is nothing to record."""

    def commit(self):
        """Saves the state, then raises HostsUpdatedInterrupt if the job's
        workers changed. Committing copies the state: commit every few steps
        rather than every step when the state is large."""
        self.save()
        self.check_host_updates()

    def check_host_updates(self):
        """Raises HostsUpdatedInterrupt on every rank when the launcher has
        published a newer round (rank 0's view, broadcast, so all ranks agree)."""
        seen = rounds()
        if seen is None:
            return
        joined, newest = seen
        if self._bcast_object(newest > joined):
            raise HostsUpdatedInterrupt(skip_sync=False)

    def save(self):
        raise NotImplementedError()

    def restore(self):
        raise NotImplementedError()

    def sync(self):
        raise NotImplementedError()


class ObjectState(State):
    """State of plain Python objects given as keyword arguments, which become
    attributes; commit() saves them, restore() puts the saved values back,
    sync() broadcasts rank 0's saved values."""

    def __init__(self, bcast_object, get_rank, **kwargs):
        self._saved_state = kwargs
        self._set_attrs()
        super().__init__(bcast_object=bcast_object, get_rank=get_rank)

    def save(self):
        self._saved_state = {attr: getattr(self, attr) for attr in self._saved_state}

    def restore(self):
        self._set_attrs()

    def sync(self):
        if self._saved_state:
            self._saved_state = self._bcast_object(self._saved_state)
            self._set_attrs()

    def _set_attrs(self):
        for attr, value in self._saved_state.items():
            setattr(self, attr, value)


def run_fn(func, reset):
    """Wraps func(state, ...) so that it runs until it returns, across
    failures (restore, reset, sync, call again) and host updates (reset, sync,
    call again). `reset` leaves the current round and joins the next."""
    from ._cohort import CohortError

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        skip_sync = False
        while True:
            try:
                if not skip_sync:
                    state.sync()
                return func(state, *args, **kwargs)
            except CohortError:
                state.restore()
                skip_sync = False
            except HostsUpdatedInterrupt as e:
                skip_sync = e.skip_sync
            reset()
            state.on_reset()
    return wrapper
