"""The Python loader (cohort.data): numpy and torch batches without copies,
exact resume through state_dict, and the JPEG decode and resize against PIL.

Run: COHORT_BUILD_DIR=build PYTHONPATH=python /usr/bin/python3 -m pytest tests/data/loader_test.py
"""
import io
import os

import numpy as np
import pytest

from cohort import _data
from cohort.data import DataLoader, Writer, ingest_imagefolder, resolve

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
    assert loader.state_dict() == {"seed": 1, "epoch": 1, "consumed": 0,
                                   "commit": resolve(location), "window_chunks": 8,
                                   "shuffle": True}


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
                                      ((3, 2, 40, 70), (17, 29)), ((100, 60, 23, 17), (224, 224)),
                                      ((0, 0, 123, 77), (40, 25)), ((0, 0, 123, 77), (9, 5))])
def test_resize_matches_pil_bilinear(box, size):
    pixels = np.asarray(PIL.open(io.BytesIO(jpeg_bytes(4, 123, 77))).convert("RGB"))
    x, y, w, h = box
    ours = _data.resize_region(pixels, box, size[0], size[1])
    theirs = np.asarray(PIL.fromarray(pixels).crop((x, y, x + w, y + h)).resize(size, PIL.BILINEAR))
    assert ours.shape == theirs.shape
    assert np.abs(ours.astype(int) - theirs).max() == 0


def test_resize_region_refuses_boxes_outside_the_image():
    pixels = np.zeros((10, 20, 3), dtype=np.uint8)
    with pytest.raises(ValueError, match=r"box \(15, 0, 10, 5\) is not a non-empty part of the 20x10 image"):
        _data.resize_region(pixels, (15, 0, 10, 5), 4, 4)
    with pytest.raises(ValueError, match="positive width and height"):
        _data.resize_region(pixels, (0, 0, 20, 10), 0, 4)


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
    with pytest.raises(ValueError,
                       match=r"loader threads \(COHORT_LOADER_THREADS\) must be 1..256, is 0"):
        DataLoader(location, batch_size=2)
    monkeypatch.setenv("COHORT_LOADER_THREADS", "3")
    monkeypatch.setenv("COHORT_SHUFFLE_WINDOW", "many")
    with pytest.raises(ValueError, match="COHORT_SHUFFLE_WINDOW"):
        DataLoader(location, batch_size=2)


def float_dataset(path, n):
    writer = Writer.create(str(path), [("x", "array", "float32"), ("label", "label")],
                           chunk_bytes=200)
    for i in range(n):
        writer.append({"x": np.full(4, i, np.float32), "label": i})
    return writer, writer.commit(f"{n} samples")


def test_a_state_pins_its_commit_and_another_is_refused(tmp_path):
    writer, first = float_dataset(tmp_path / "ds", 101)
    location = str(tmp_path / "ds")
    loader = DataLoader(location, batch_size=5, seed=3, window_chunks=2)
    it = iter(loader)
    seen = []
    for _ in range(7):
        next(it)
        seen.extend(int(i) for i in loader.indices)
    state = loader.state_dict()
    assert state == {"seed": 3, "epoch": 0, "consumed": 35, "commit": first,
                     "window_chunks": 2, "shuffle": True}
    writer.append({"x": np.zeros(4, np.float32), "label": -1})
    second = writer.commit("one more")
    resumed = DataLoader(location, batch_size=5, state=state)  # the state's window and commit
    assert resumed.dataset_size == 101
    for _ in resumed:
        seen.extend(int(i) for i in resumed.indices[: 5 - resumed.padded])
    assert sorted(seen) == list(range(101))
    with pytest.raises(ValueError, match=f"saved on commit {first} .* ref 'main' is commit "
                                         f"{second}: .* set allow_commit_change"):
        DataLoader(location, batch_size=5, state=state, ref="main")
    moved = DataLoader(location, batch_size=5, state=state, allow_commit_change=True)
    assert moved.dataset_size == 102 and moved.state_dict()["commit"] == second
    with pytest.raises(ValueError, match="saved with window_chunks 2 .* loader has window_chunks 4"):
        DataLoader(location, batch_size=5, state=state, window_chunks=4)


def test_impossible_states_and_contradictions_raise_naming_the_field(tmp_path):
    _, commit = float_dataset(tmp_path / "ds", 20)
    location = str(tmp_path / "ds")
    good = {"seed": 1, "epoch": 0, "consumed": 4, "commit": commit, "window_chunks": 8,
            "shuffle": True}
    assert DataLoader(location, batch_size=4, state=good).state_dict() == good

    def refused(state, match, **kw):
        with pytest.raises(ValueError, match=match):
            DataLoader(location, batch_size=4, state=state, **kw)

    refused({**good, "consumed": 20}, "loader state consumed 20 is beyond the epoch: dataset .* "
                                      "has 20 samples")
    missing = dict(good)
    del missing["epoch"]
    refused(missing, "state is missing the field 'epoch'")
    refused({**good, "consumed": "4"}, "state field 'consumed' must be a non-negative int, got '4'")
    refused({**good, "seed": -1}, "state field 'seed' must be a non-negative int, got -1")
    refused({**good, "shuffle": 1}, "state field 'shuffle' must be a bool, got 1")
    refused({**good, "commit": "abc"}, "state field 'commit' must be a commit id")
    refused({**good, "step": 3}, "state has an unknown field 'step'")
    refused([1, 0, 4], "state must be a dict from DataLoader.state_dict\\(\\), got list")
    refused(good, "seed=7 contradicts state= \\(whose seed is 1\\)", seed=7)
    refused(good, "consumed= contradicts state=", consumed=0)


def test_epochs_without_a_batch_raise_naming_the_sizes(tmp_path):
    Writer.create(str(tmp_path / "empty"), [("x", "array", "float32")])
    with pytest.raises(ValueError, match="has no samples .* every epoch would be empty"):
        DataLoader(str(tmp_path / "empty"), batch_size=2)
    float_dataset(tmp_path / "ds", 10)
    with pytest.raises(ValueError, match="has 10 samples, fewer than one step of 3 ranks x batch "
                                         "size 4 = 12: with drop_last every epoch would be empty"):
        DataLoader(str(tmp_path / "ds"), batch_size=4, rank=0, world_size=3, drop_last=True)


def test_padding_example_masks_the_padded_rows(tmp_path):
    import subprocess
    import sys
    script = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "loader_padding.py")
    out = subprocess.run([sys.executable, script, str(tmp_path / "ds")], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert "rank 2: batch 0 has 4 of 4 rows padding" in out
    assert "samples counted once each: 8 of 8" in out


def test_png_in_every_mode_decodes_as_pil_converts_it(tmp_path):
    rng = np.random.default_rng(7)
    rgb = rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)
    images = {
        "rgb": PIL.fromarray(rgb),
        "rgba": PIL.fromarray(np.dstack([rgb, rng.integers(0, 256, (16, 16), dtype=np.uint8)])),
        "gray": PIL.fromarray(rgb[:, :, 0]),
        "gray_alpha": PIL.fromarray(rgb[:, :, 0]).convert("LA"),
        "palette": PIL.fromarray(rgb).quantize(colors=37),
        "bilevel": PIL.fromarray(rgb[:, :, 0]).convert("1"),
    }
    os.makedirs(tmp_path / "tree" / "all")
    files = []
    for name, image in sorted(images.items()):
        path = tmp_path / "tree" / "all" / f"{name}.png"
        image.save(path, format="PNG")
        files.append(path)
    ingest_imagefolder(str(tmp_path / "tree"), str(tmp_path / "ds"))
    loader = DataLoader(str(tmp_path / "ds"), batch_size=len(files), image_size=16,
                        random_crop=False, center_fraction=1.0, to_float=False, shuffle=False)
    batch = next(iter(loader))["image"]
    for row, path in enumerate(files):
        theirs = np.asarray(PIL.open(path).convert("RGB")).transpose(2, 0, 1)
        assert (batch[row] == theirs).all(), path.name


def test_device_batches_equal_the_host_stream_and_resume_where_handed_out(image_dataset):
    """device=: batches are copied one ahead (cohort.torch.device_feed); the
    stream, the metadata and state_dict are those of the batch handed out.
    With "cpu" here; tests/python/test_gpu.py runs "cuda" on a GPU."""
    torch = pytest.importorskip("torch")
    _, location = image_dataset
    host = DataLoader(location, batch_size=3, image_size=8, seed=5, torch=True)
    want = [(host.indices.copy(), b["image"].clone(), host.state_dict()) for b in host]
    fed = DataLoader(location, batch_size=3, image_size=8, seed=5, device="cpu")
    assert len(fed) == 10
    it = iter(fed)
    for k in range(4):
        b = next(it)
        assert b["image"].device.type == "cpu"
        assert (fed.indices == want[k][0]).all() and torch.equal(b["image"], want[k][1])
        assert fed.state_dict() == want[k][2]  # not the batch copied ahead
        assert len(fed) == 10 - k - 1
    resumed = DataLoader(location, batch_size=3, image_size=8, state=fed.state_dict(),
                         device="cpu")
    rest = [(resumed.indices.copy(), b["image"]) for b in resumed]
    assert len(rest) == 6
    for (i1, x1, _), (i2, x2) in zip(want[4:], rest):
        assert (i1 == i2).all() and torch.equal(x1, x2)
    # Epoch after epoch, as without a device: each iteration ends at its epoch's end.
    again = DataLoader(location, batch_size=3, image_size=8, seed=5, device="cpu")
    assert [len(list(again)) for _ in range(3)] == [10, 10, 10]

