"""cohort.torch.elastic: Horovod's elastic API for PyTorch (horovod.torch.elastic).

    import cohort.torch as hvd
    hvd.init()
    state = hvd.elastic.TorchState(model, optimizer, epoch=0, batch=0)

    @hvd.elastic.run
    def train(state):
        for state.epoch in range(state.epoch, epochs):
            ...                      # steps; state.commit() every few of them

    train(state)

Run with `cohort run --host-discovery-script discover.sh --min-np 2 python
train.py`. When a worker dies, the others' collectives raise
HorovodInternalError; `run` restores the last commit, joins the next round
(new ranks, same processes) and syncs the state from the new rank 0. When a
worker is added, commit() raises HostsUpdatedInterrupt at the same step on
every rank and the job grows without losing the step. cohort.data loaders and
ElasticSampler in the state keep their position: after any change of the
worker count, the rest of the epoch is split over the new workers and every
sample is still delivered once."""
from ... import init, shutdown
from ...elastic import State, HostsUpdatedInterrupt, run_fn  # noqa: F401
from ..exceptions import HorovodInternalError  # noqa: F401
from .sampler import ElasticSampler
from .state import TorchState, ObjectState

__all__ = ["run", "State", "ObjectState", "TorchState", "ElasticSampler",
           "HorovodInternalError", "HostsUpdatedInterrupt"]


def run(func):
    """Decorator: runs func(state, ...) to its end across workers leaving
    and joining. Collectives must not run before func is called (a new
    worker would meet them while the others sync the state)."""
    return run_fn(func, _reset)


def _reset():
    shutdown()
    init()
