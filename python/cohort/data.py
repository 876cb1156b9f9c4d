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

Writing and reading samples one at a time:

    from cohort.data import Writer, Dataset
    w = Writer.create("/data/toy", [("x", "array", "float32"), ("label", "label")])
    w.append({"x": np.zeros((2, 3), np.float32), "label": 7})
    commit_id = w.commit("first sample")
    ds = Dataset.open("/data/toy")           # HEAD; or a branch, tag, commit id, REF~N
    ds[0]                                     # {"x": array(...), "label": 7}

A sample is a dict column -> value: numpy arrays for array columns (the
column's dtype exactly; bfloat16 as uint16 bits), bytes for image, str for
text and json, int for label. Bad input raises ValueError naming the column;
a commit that lost a race with another writer raises ConflictError (a
RuntimeError); the writer is then unchanged and can be reopened.
"""
import os
import sys

from . import _data

__all__ = ["DataLoader", "ingest_imagefolder", "Writer", "Dataset", "ConflictError", "log", "diff",
           "checkout", "create_branch", "create_tag", "resolve"]

ConflictError = _data.ConflictError
log = _data.log            # log(location, ref="") -> [commit dict], newest first
diff = _data.diff          # diff(location, from_ref, to_ref) -> {"added", "removed", "changed"}
checkout = _data.checkout  # checkout(location, ref): HEAD follows a branch, or is detached
create_branch = _data.create_branch
create_tag = _data.create_tag
resolve = _data.resolve    # resolve(location, ref="HEAD") -> commit id


def _env_int(name, default):
    value = os.environ.get(name, "")
    return int(value) if value else default


def _record_in_tracking(location, ref):
    """Names the dataset and commit this loader reads in cohort.track's active
    run (its provenance), when there is one."""
    track = sys.modules.get("cohort.track")
    run = track.active_run() if track else None
    if run is not None:
        run.record_dataset(location, resolve(location, ref))


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
        _record_in_tracking(location, options.get("ref") or "HEAD")
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


def _schema_entries(schema):
    """[(name, kind) | (name, "array", dtype)] or {name: kind | ("array", dtype)} -> string lists."""
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
