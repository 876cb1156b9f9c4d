"""TorchState: the elastic state of a PyTorch training process
(horovod.torch.elastic.TorchState), with a handler per kind of value."""
import copy
import sys

import torch

from ... import rank
from ...elastic import ObjectState as _ObjectState
from ..functions import (broadcast_object, broadcast_optimizer_state,
                         broadcast_parameters)
from .sampler import ElasticSampler


class ObjectState(_ObjectState):
    """ObjectState over cohort.torch's broadcast_object."""

    def __init__(self, bcast_object=broadcast_object, get_rank=rank, **kwargs):
        super().__init__(bcast_object=bcast_object, get_rank=get_rank, **kwargs)


class TorchState(ObjectState):
    """The model, the optimizer and any keyword attributes. Values of a known
    kind (nn.Module, Optimizer, LR scheduler, ElasticSampler,
    cohort.data.DataLoader) are saved, restored and synced by their handler;
    the rest as plain objects."""

    def __init__(self, model=None, optimizer=None, **kwargs):
        kwargs.update(model=model, optimizer=optimizer)
        self._handlers, kwargs = _get_handlers(kwargs)
        for name, handler in self._handlers.items():
            setattr(self, name, handler.value)
        super().__init__(**kwargs)

    def save(self):
        for handler in self._handlers.values():
            handler.save()
        super().save()

    def restore(self):
        for handler in self._handlers.values():
            handler.restore()
        super().restore()

    def sync(self):
        for handler in self._handlers.values():
            handler.sync()
        super().sync()

    def __setattr__(self, name, value):
        if hasattr(self, name) and name in self._handlers:
            self._handlers[name].set_value(value)
        super().__setattr__(name, value)


class StateHandler:
    def __init__(self, value):
        self.value = value

    def save(self):
        raise NotImplementedError()

    def restore(self):
        raise NotImplementedError()

    def sync(self):
        raise NotImplementedError()

    def set_value(self, value):
        self.value = value
        self.save()


class ModelStateHandler(StateHandler):
    def __init__(self, model):
        super().__init__(model)
        self.save()

    def save(self):
        self._saved = copy.deepcopy(self.value.state_dict())

    def restore(self):
        self.value.load_state_dict(self._saved)

    def sync(self):
        broadcast_parameters(self.value.state_dict(), root_rank=0)


class OptimizerStateHandler(StateHandler):
    def __init__(self, optimizer):
        super().__init__(optimizer)
        self.save()

    def save(self):
        self._saved = copy.deepcopy(self.value.state_dict())

    def restore(self):
        # Gradients whose allreduce was under way when the round broke.
        drop = getattr(self.value, "_drop_pending", None)
        if drop is not None:
            drop()
        self.value.load_state_dict(self._saved)

    def sync(self):
        broadcast_optimizer_state(self.value, root_rank=0)


class StateDictHandler(StateHandler):
    """Any object with state_dict()/load_state_dict(): saved as a deep copy,
    synced from rank 0."""

    def __init__(self, value):
        super().__init__(value)
        self.save()

    def save(self):
        self._saved = copy.deepcopy(self.value.state_dict())

    def restore(self):
        self.value.load_state_dict(self._saved)

    def sync(self):
        self.value.load_state_dict(broadcast_object(self.value.state_dict()))


class SchedulerStateHandler(StateDictHandler):
    """A torch learning-rate scheduler."""


class SamplerStateHandler(StateDictHandler):
    """Every rank records the same number of batches, so the processed count
    is the same everywhere; sync re-splits the rest over the new ranks."""


class DataLoaderStateHandler(StateHandler):
    """A cohort.data.DataLoader's position ({epoch, consumed, ...}: samples
    consumed by all ranks together) is saved at commit. sync restarts rank 0's
    stream, at its current position or, after restore(), at the saved one, on
    the new ranks, which split the rest of the epoch."""

    def __init__(self, loader):
        super().__init__(loader)
        self._restored = None
        self.save()

    def save(self):
        self._saved = self.value.state_dict()

    def restore(self):
        # Restarting the stream waits for sync, which follows every restore
        # once the new ranks are known.
        self._restored = self._saved

    def sync(self):
        position = self._restored if self._restored is not None else self.value.state_dict()
        self._restored = None
        self.value.load_state_dict(broadcast_object(position, name="DataLoaderStateHandler"))


def _is_cohort_data_loader(value):
    data = sys.modules.get("cohort.data")  # loaded whenever such a loader exists
    return data is not None and isinstance(value, data.DataLoader)


_handler_registry = [
    (lambda v: isinstance(v, torch.nn.Module), ModelStateHandler),
    (lambda v: isinstance(v, torch.optim.Optimizer), OptimizerStateHandler),
    (lambda v: isinstance(v, torch.optim.lr_scheduler._LRScheduler), SchedulerStateHandler),
    (lambda v: isinstance(v, ElasticSampler), SamplerStateHandler),
    (_is_cohort_data_loader, DataLoaderStateHandler),
]


def _get_handlers(kwargs):
    handlers, rest = {}, {}
    for name, value in kwargs.items():
        for matches, handler_class in _handler_registry:
            if value is not None and matches(value):
                handlers[name] = handler_class(value)
                break
        else:
            rest[name] = value
    return handlers, rest
