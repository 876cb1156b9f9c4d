"""The Python loader (cohort.data): numpy and torch batches without copies,
exact resume through state_dict, and the JPEG decode and resize against PIL.

Run: COHORT_BUILD_DIR=build PYTHONPATH=python /usr/bin/python3 -m pytest tests/data/loader_test.py
"""
import io
import os

import numpy as np
import pytest

from cohort import _data
from cohort.data import DataLoader, ingest_imagefolder

PIL = pytest.importorskip("PIL.Image")


def jpeg_bytes(seed, width, height):
    rng = np.random.default_rng(seed)
    x = np.linspace(0, 255, width)[None, :, None]
    y = np.linspace(0, 255, height)[:, None, None]
    pixels = (x * 0.6 + y * 0.3 + rng.integers(0, 40, (height, width, 3))).clip(0, 255)
    buf = io.BytesIO()
    PIL.fromarray(pixels.astype(np.uint8)).save(buf, format="JPEG", quality=90)
    return buf.getvalue()


@pytest.fixture(scope="module")
def image_dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("imagefolder")
    for label in range(3):
        os.makedirs(root / f"class{label}")
        for i in range(10):
            (root / f"class{label}" / f"{i:02d}.jpg").write_bytes(
                jpeg_bytes(label * 100 + i, 60 + 7 * i, 50 + 5 * label))
    location = str(root / "dataset")
    result = ingest_imagefolder(str(root), location, threads=2)
    assert result["samples"] == 30
    assert result["classes"] == ["class0", "class1", "class2"]
    return root, location


def test_numpy_batches_share_the_loaders_buffers(image_dataset):
    _, location = image_dataset
    loader = DataLoader(location, batch_size=4, image_size=32, seed=1, threads=2)
    assert len(loader) == 8  # ceil(30 / 4), padded
    seen, padded = [], 0
    for batch in loader:
        images, labels = batch["image"], batch["label"]
        assert images.shape == (4, 3, 32, 32) and images.dtype == np.float32
        assert labels.dtype == np.int64
        assert not images.flags["OWNDATA"]  # a view of the C++ batch, no copy
        assert list(labels) == [int(i) // 10 for i in loader.indices]
        seen.extend(loader.indices[: 4 - loader.padded])
        padded += loader.padded
    assert sorted(seen) == list(range(30)) and padded == 2
    assert loader.state_dict() == {"seed": 1, "epoch": 1, "consumed": 0}


def test_torch_tensors_alias_the_numpy_arrays(image_dataset):
    torch = pytest.importorskip("torch")
    _, location = image_dataset
    loader = DataLoader(location, batch_size=5, image_size=16, torch=True, to_float=False)
    batch = next(iter(loader))
    assert isinstance(batch["image"], torch.Tensor)
    assert batch["image"].dtype == torch.uint8 and tuple(batch["image"].shape) == (5, 3, 16, 16)
    assert batch["label"].dtype == torch.int64


def test_resume_from_state_dict_continues_the_same_stream(image_dataset):
    _, location = image_dataset
    first = DataLoader(location, batch_size=3, image_size=8, seed=5)
    stream = [(first.indices.copy(), b["image"].copy()) for b in first]
    interrupted = DataLoader(location, batch_size=3, image_size=8, seed=5)
    it = iter(interrupted)
    for _ in range(4):
        next(it)
    resumed = DataLoader(location, batch_size=3, image_size=8, state=interrupted.state_dict())
    rest = [(resumed.indices.copy(), b["image"].copy()) for b in resumed]
    assert len(stream) == 10 and len(rest) == 6
    for (i1, x1), (i2, x2) in zip(stream[4:], rest):
        assert (i1 == i2).all() and (x1 == x2).all()


def test_two_ranks_split_the_epoch(image_dataset):
    _, location = image_dataset
    parts = []
    for rank in range(2):
        loader = DataLoader(location, batch_size=4, rank=rank, world_size=2, drop_last=True,
                            image_size=8)
        parts.append([int(i) for _ in loader for i in loader.indices])
    assert len(parts[0]) == len(parts[1]) == 12
    assert not set(parts[0]) & set(parts[1])


def test_decode_matches_pil():
    data = jpeg_bytes(3, 123, 77)
    ours = _data.decode_jpeg(data)
    theirs = np.asarray(PIL.open(io.BytesIO(data)).convert("RGB"))
    assert ours.shape == theirs.shape
    assert np.abs(ours.astype(int) - theirs).max() == 0
    region = _data.decode_jpeg(data, (17, 9, 50, 40))
    assert (region == ours[9:49, 17:67]).all()


@pytest.mark.parametrize("box,size", [((0, 0, 123, 77), (224, 224)), ((10, 5, 100, 60), (32, 32)),
                                      ((3, 2, 40, 70), (17, 29))])
def test_resize_matches_pil_bilinear(box, size):
    pixels = np.asarray(PIL.open(io.BytesIO(jpeg_bytes(4, 123, 77))).convert("RGB"))
    x, y, w, h = box
    ours = _data.resize_region(pixels, box, size[0], size[1])
    theirs = np.asarray(PIL.fromarray(pixels).crop((x, y, x + w, y + h)).resize(size, PIL.BILINEAR))
    assert ours.shape == theirs.shape
    assert np.abs(ours.astype(int) - theirs).max() == 0


def test_bad_options_raise_with_the_reason(image_dataset):
    _, location = image_dataset
    with pytest.raises(ValueError, match="has no column 'pixels'"):
        DataLoader(location, batch_size=2, columns=["pixels"])
    with pytest.raises(ValueError, match=r"loader rank 3 is not in \[0, world size 2\)"):
        DataLoader(location, batch_size=2, rank=3, world_size=2)
    with pytest.raises(TypeError, match="unknown option 'batchsize'"):
        _data.Loader(location, batchsize=2)


def test_settings_from_the_environment_are_checked(image_dataset, monkeypatch):
    _, location = image_dataset
    monkeypatch.setenv("COHORT_LOADER_THREADS", "0")
    with pytest.raises(ValueError, match="COHORT_LOADER_THREADS must be 1..256, is 0"):
        DataLoader(location, batch_size=2)
    monkeypatch.setenv("COHORT_LOADER_THREADS", "3")
    monkeypatch.setenv("COHORT_SHUFFLE_WINDOW", "many")
    with pytest.raises(ValueError, match="COHORT_SHUFFLE_WINDOW"):
        DataLoader(location, batch_size=2)
