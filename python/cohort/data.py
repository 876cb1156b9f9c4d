"""cohort.data: stream a cohort dataset into a training loop.

    from cohort.data import DataLoader
    loader = DataLoader("/data/imagenet", batch_size=256, image_size=224,
                        rank=rank, world_size=size, seed=0, torch=True)
    for epoch in range(epochs):
        for batch in loader:             # one epoch; the next `for` starts the next
            images, labels = batch["image"], batch["label"]   # torch tensors, no copy
            ...
            checkpoint["loader"] = loader.state_dict()
    loader = DataLoader(..., state=checkpoint["loader"])    # resumes exactly, any rank count

Batches are dicts of numpy arrays (or, with torch=True, torch tensors made by
torch.from_numpy: they share the loader's buffers). The work (chunk reads,
JPEG decoding, crops, batch assembly) happens in C++ threads; see
include/cohort/loader.h for the order, sharding and resume rules. Settings
default from COHORT_LOADER_THREADS, COHORT_LOADER_PREFETCH and
COHORT_SHUFFLE_WINDOW; rank and world_size from COHORT_RANK and COHORT_SIZE.
"""
import os

from . import _data

__all__ = ["DataLoader", "ingest_imagefolder"]


def _env_int(name, default):
    value = os.environ.get(name, "")
    return int(value) if value else default


class DataLoader:
    """Iterator over this rank's batches of a dataset commit."""

    def __init__(self, location, batch_size, *, rank=None, world_size=None, seed=0,
                 state=None, torch=False, **options):
        self.location = location
        self._torch = None
        if torch:
            import torch as torch_module  # only when asked: the numpy path needs no torch
            self._torch = torch_module
        if state is not None:
            options.update(seed=state["seed"], epoch=state["epoch"], consumed=state["consumed"])
        else:
            options.setdefault("seed", seed)
        options["rank"] = _env_int("COHORT_RANK", 0) if rank is None else rank
        options["world_size"] = _env_int("COHORT_SIZE", 1) if world_size is None else world_size
        self._loader = _data.Loader(location, batch_size=batch_size, **options)
        self.indices = None  # dataset sample index of each row of the last batch
        self.padded = 0      # trailing rows of the last batch that repeat earlier samples
        self.epoch = None    # epoch of the last batch

    def __iter__(self):
        return self

    def __next__(self):
        batch = self._loader.next()
        if batch is None:
            raise StopIteration
        self.indices = batch.pop("__indices__")
        self.padded = batch.pop("__padded__")
        self.epoch = batch.pop("__epoch__")
        batch.pop("__state__")
        if self._torch is not None:
            return {name: self._torch.from_numpy(array) for name, array in batch.items()}
        return batch

    def __len__(self):
        """Batches left in the current epoch."""
        return self._loader.batches_left

    @property
    def dataset_size(self):
        return self._loader.dataset_size

    def state_dict(self):
        """Where the stream stands after the last batch: pass as `state=` to resume."""
        seed, epoch, consumed = self._loader.state()
        return {"seed": seed, "epoch": epoch, "consumed": consumed}


def ingest_imagefolder(directory, location, threads=0):
    """DIR/CLASS/IMAGE files -> image + label samples at `location`, committed."""
    return _data.ingest_imagefolder(directory, location, threads)
