"""cohort.data: stream a cohort dataset into a training loop.

    from cohort.data import DataLoader
    loader = DataLoader("/data/imagenet", batch_size=256, image_size=224,
                        rank=rank, world_size=size, seed=0, torch=True)
    for epoch in range(epochs):
        for batch in loader:             # one epoch; the next `for` starts the next
            images, labels = batch["image"], batch["label"]   # torch tensors, no copy
            ...
            checkpoint["loader"] = loader.state_dict()
    loader = DataLoader(..., state=checkpoint["loader"])    # resumes exactly, any rank count,
                                                            # on the commit the state names

Batches are dicts of numpy arrays (or, with torch=True, torch tensors made by
torch.from_numpy: they share the loader's buffers). The work (chunk reads,
JPEG decoding, crops, batch assembly) happens in C++ threads; see
include/cohort/loader.h for the order, sharding and resume rules. Settings
default from COHORT_LOADER_THREADS, COHORT_LOADER_PREFETCH and
COHORT_SHUFFLE_WINDOW; rank and world_size from COHORT_RANK and COHORT_SIZE.

Writing and reading samples one at a time:

    from cohort.data import Writer, Dataset
    w = Writer.create("/data/toy", [("x", "array", "float32", (2, 3)), ("label", "label")])
    w.append({"x": np.zeros((2, 3), np.float32), "label": 7})
    commit_id = w.commit("first sample")
    ds = Dataset.open("/data/toy")           # HEAD; or a branch, tag, commit id, REF~N
    ds[0]                                     # {"x": array(...), "label": 7}

A sample is a dict column -> value: numpy arrays for array columns (the
column's dtype exactly, and its shape when the schema fixes one; an array
column without a shape is ragged; bfloat16 as uint16 bits), bytes for image, str for
text and json, int for label. Bad input raises ValueError naming the column;
a commit that lost a race with another writer raises ConflictError (a
RuntimeError); the writer is then unchanged and can be reopened.
"""
import numbers
import os
import sys
from collections.abc import Mapping

from . import _data, settings

__all__ = ["DataLoader", "ingest_imagefolder", "Writer", "Dataset", "ConflictError", "log", "diff",
           "checkout", "create_branch", "create_tag", "resolve"]

ConflictError = _data.ConflictError
log = _data.log            # log(location, ref="") -> [commit dict], newest first
diff = _data.diff          # diff(location, from_ref, to_ref) -> {"added", "removed", "changed"}
checkout = _data.checkout  # checkout(location, ref): HEAD follows a branch, or is detached
create_branch = _data.create_branch
create_tag = _data.create_tag
resolve = _data.resolve    # resolve(location, ref="HEAD") -> commit id


# What state_dict() holds: the position in the stream and what fixes the epoch's order.
_STATE_FIELDS = {"seed": "a non-negative int", "epoch": "a non-negative int",
                 "consumed": "a non-negative int", "commit": "a commit id (64 hex digits)",
                 "window_chunks": "a positive int", "shuffle": "a bool"}


def _state_field_ok(name, value):
    if name == "shuffle":
        return isinstance(value, bool)
    if name == "commit":
        return (isinstance(value, str) and len(value) == 64
                and all(c in "0123456789abcdef" for c in value))
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return False
    return (1 if name == "window_chunks" else 0) <= value < 2**64


def _check_state(state):
    """Raises ValueError naming the field of a state that state_dict() cannot have made."""
    if not isinstance(state, Mapping):
        raise ValueError(f"state must be a dict from DataLoader.state_dict(), got "
                         f"{type(state).__name__}")
    for name in state:
        if name not in _STATE_FIELDS:
            raise ValueError(f"state has an unknown field {name!r} (a state has: "
                             f"{', '.join(_STATE_FIELDS)})")
    for name, want in _STATE_FIELDS.items():
        if name not in state:
            raise ValueError(f"state is missing the field {name!r} ({want}); pass the dict "
                             f"DataLoader.state_dict() returned")
        if not _state_field_ok(name, state[name]):
            raise ValueError(f"state field {name!r} must be {want}, got {state[name]!r}")


def _resume_options(state, seed, options):
    """The loader options that resume `state`; refuses arguments that contradict it."""
    _check_state(state)
    if seed is not None:
        raise ValueError(f"seed={seed} contradicts state= (whose seed is {state['seed']}): a "
                         f"resumed loader takes its seed from the state; drop seed=")
    for name in ("epoch", "consumed", "commit"):
        if name in options:
            raise ValueError(f"{name}= contradicts state=: a resumed loader takes it from the "
                             f"state; drop {name}=")
    options.setdefault("window_chunks", state["window_chunks"])
    options.setdefault("shuffle", state["shuffle"])
    options.update(seed=int(state["seed"]), epoch=int(state["epoch"]),
                   consumed=int(state["consumed"]), commit=state["commit"],
                   state_window_chunks=int(state["window_chunks"]),
                   state_shuffle=state["shuffle"])


def _env_int(name, default):
    value = settings.text(name, "")
    return int(value) if value else default


def _job_rank_and_size():
    """The running cohort job's rank and size (an elastic job's change at each
    reset, unlike COHORT_RANK), else COHORT_RANK and COHORT_SIZE."""
    runtime = sys.modules.get("cohort._cohort")
    if runtime is not None and runtime.is_initialized():
        return runtime.rank(), runtime.size()
    return _env_int(settings.RANK, 0), _env_int(settings.SIZE, 1)


def _record_in_tracking(location, ref):
    """Names the dataset and commit this loader reads in cohort.track's active
    run (its provenance), when there is one."""
    track = sys.modules.get("cohort.track")
    run = track.active_run() if track else None
    if run is not None:
        run.record_dataset(location, resolve(location, ref))


class DataLoader:
    """Iterator over this rank's batches of a dataset commit."""

    def __init__(self, location, batch_size, *, rank=None, world_size=None, seed=None,
                 state=None, allow_commit_change=False, torch=False, device=None, **options):
        """`device` ("cuda", "cuda:1", ...): batches come as tensors on that
        device, copied ahead through pinned memory while the previous batch
        is in use (cohort.torch.device_feed)."""
        self.location = location
        self._torch = None
        self._feed = None
        self._last_state = None  # with a feed: the state after the last batch handed out
        if torch or device is not None:
            import torch as torch_module  # only when asked: the numpy path needs no torch
            self._torch = torch_module
        if device is not None:
            from cohort.torch.device_feed import DeviceFeed
            self._feed = DeviceFeed(device)
        if state is not None:
            _resume_options(state, seed, options)
        else:
            options["seed"] = 0 if seed is None else seed
        options["allow_commit_change"] = allow_commit_change
        job_rank, job_size = _job_rank_and_size()
        options["rank"] = job_rank if rank is None else rank
        options["world_size"] = job_size if world_size is None else world_size
        self._batch_size = batch_size
        self._options = {k: v for k, v in options.items()
                         if k not in ("seed", "epoch", "consumed", "commit", "state_window_chunks",
                                      "state_shuffle")}
        self._loader = _data.Loader(location, batch_size=batch_size, **options)
        _record_in_tracking(location, options.get("ref") or "HEAD")
        self.indices = None  # dataset sample index of each row of the last batch
        self.padded = 0      # trailing rows of the last batch that repeat earlier samples
        self.epoch = None    # epoch of the last batch

    def __iter__(self):
        return self

    def _take(self):
        """The loader's next batch as (arrays, (indices, padded, epoch, state)), or None."""
        batch = self._loader.next()
        if batch is None:
            return None
        meta = (batch.pop("__indices__"), batch.pop("__padded__"), batch.pop("__epoch__"),
                batch.pop("__state__"))
        return batch, meta

    def __next__(self):
        taken = self._feed.next(self._take) if self._feed is not None else self._take()
        if taken is None:
            raise StopIteration
        batch, (self.indices, self.padded, self.epoch, state) = taken
        if self._feed is not None:
            self._last_state = state
            return batch
        if self._torch is not None:
            return {name: self._torch.from_numpy(array) for name, array in batch.items()}
        return batch

    def __len__(self):
        """Batches left in the current epoch."""
        ahead = 1 if self._feed is not None and self._feed.pending else 0
        return self._loader.batches_left + ahead

    @property
    def dataset_size(self):
        return self._loader.dataset_size

    def state_dict(self):
        """Where the stream stands after the last batch: pass as `state=` to resume.

        {seed, epoch, consumed, commit, window_chunks, shuffle}: the resumed
        loader reads the same commit (a later commit would change the epoch's
        order) unless allow_commit_change=True, which accepts that the rest of
        this epoch may repeat or skip samples."""
        if self._feed is not None and self._last_state is not None:
            return dict(self._last_state)  # the loader itself is a batch ahead
        return self._loader.state()

    def load_state_dict(self, state, rank=None, world_size=None):
        """Restarts the stream at `state` (from state_dict(), possibly of
        another rank) as `rank` of `world_size`, by default the running job's:
        the ranks split what is left of the epoch, so after a change of the
        rank count (an elastic reset) every sample is still delivered once.
        Batches prefetched beyond the old position are dropped."""
        options = dict(self._options)
        _resume_options(state, None, options)
        job_rank, job_size = _job_rank_and_size()
        options["rank"] = job_rank if rank is None else rank
        options["world_size"] = job_size if world_size is None else world_size
        self._loader = _data.Loader(self.location, batch_size=self._batch_size, **options)
        if self._feed is not None:
            self._feed.drop()
            self._last_state = None


def ingest_imagefolder(directory, location, threads=0):
    """DIR/CLASS/IMAGE files -> image + label samples at `location`, committed."""
    return _data.ingest_imagefolder(directory, location, threads)


def _schema_entries(schema):
    """[(name, kind) | (name, "array", dtype[, shape])] or {name: kind | ("array", dtype[, shape])}
    -> string lists. An array column with a shape tuple is fixed to it; without, it is ragged."""
    items = schema.items() if isinstance(schema, dict) else schema
    entries = []
    for item in items:
        if isinstance(schema, dict):
            name, spec = item
            item = (name, spec) if isinstance(spec, str) else (name, *spec)
        entry = [str(part) for part in item[:2]]
        if len(item) > 2:
            dtype = item[2]
            if not isinstance(dtype, str):
                import numpy  # numpy dtypes and scalar types: their canonical name
                dtype = numpy.dtype(dtype).name
            entry.append(dtype)
        if len(item) > 3 and isinstance(item[3], (tuple, list)):  # a fixed shape
            entry.append("shape:" + ",".join(str(int(d)) for d in item[3]))
            item = tuple(item[:3]) + tuple(item[4:])
        entry.extend(str(part) for part in item[3:])  # too many parts: the library says so
        entries.append(entry)
    return entries


class Writer:
    """Builds the next commit of one branch; changes stay in memory until commit()."""

    def __init__(self, writer):
        self._writer = writer

    @classmethod
    def create(cls, location, schema, *, branch="", chunk_bytes=0, compression="none",
               compression_level=0):
        """A new dataset at `location` with an empty first commit on `branch` (default main)."""
        return cls(_data.Writer.create(location, _schema_entries(schema), branch, chunk_bytes,
                                       compression, compression_level))

    @classmethod
    def open(cls, location, *, branch="", chunk_bytes=0, compression="none", compression_level=0):
        """Continues `branch` (default: the branch HEAD names) of an existing dataset."""
        return cls(_data.Writer.open(location, branch, chunk_bytes, compression, compression_level))

    def append(self, sample):
        self._writer.append(sample)

    def update(self, index, sample):
        """Replaces sample `index`, keeping its sample id."""
        self._writer.update(index, sample)

    def delete(self, index):
        """Removes sample `index`; later samples move down by one."""
        self._writer.delete(index)

    def commit(self, message, author=None, command=None):
        """Writes the commit and moves the branch to it; returns the commit id."""
        return self._writer.commit(message, author or "", command or "")

    def __len__(self):
        return len(self._writer)

    @property
    def base(self):
        """The commit this writer builds on."""
        return self._writer.base

    @property
    def schema(self):
        return self._writer.schema


class Dataset:
    """Read-only view of one commit: len(ds), ds[i] -> dict column -> value."""

    def __init__(self, dataset):
        self._dataset = dataset

    @classmethod
    def open(cls, location, ref=""):
        return cls(_data.Dataset(location, ref))

    def __len__(self):
        return len(self._dataset)

    def __getitem__(self, index):
        return self._dataset[index]

    def __iter__(self):
        return (self._dataset[i] for i in range(len(self._dataset)))

    def sample_id(self, index):
        """The stable id of sample `index` (kept across updates; diff() reports ids)."""
        return self._dataset.sample_id(index)

    @property
    def schema(self):
        return self._dataset.schema

    @property
    def commit(self):
        """The commit's id, parent, message, author, command, time, counts and schema."""
        return self._dataset.commit
