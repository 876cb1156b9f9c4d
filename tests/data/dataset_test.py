"""The Python dataset API (cohort.data.Writer, Dataset, log/diff/checkout):
every column kind and dtype through a round trip, ragged shapes, update and
delete, a conflict between two writers, and bad input with clear messages.

Run: COHORT_BUILD_DIR=build PYTHONPATH=python /usr/bin/python3 -m pytest tests/data/dataset_test.py
"""
import numpy as np
import pytest

from cohort.data import ConflictError, Dataset, Writer, checkout, diff, log

DTYPES = ["uint8", "int8", "int32", "int64", "float16", "float32", "float64"]


def array_of(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def sample_of(i):
    shape = (i % 3, 2 + i) if i % 2 else (3,)  # ragged, with zero-sized arrays
    sample = {f"a_{dtype}": array_of(dtype, shape, i * 10 + k) for k, dtype in enumerate(DTYPES)}
    sample["a_bfloat16"] = array_of("uint16", (i + 1,), i)  # bfloat16 bits travel as uint16
    sample["scalar"] = np.array(i * 0.5)  # 0-d
    sample.update(image=bytes([i, 0, 255, i]) * i, text=f"sample {i} — ünïcode",
                  json=f'{{"i": {i}}}', label=-(i * 1000003))
    return sample


SCHEMA = ([(f"a_{dtype}", "array", dtype) for dtype in DTYPES] +
          [("a_bfloat16", "array", "bfloat16"), ("scalar", "array", np.float64),
           ("image", "image"), ("text", "text"), ("json", "json"), ("label", "label")])


def assert_same(got, want):
    assert set(got) == set(want)
    for name, value in want.items():
        if isinstance(value, np.ndarray):
            assert got[name].dtype == value.dtype, name
            assert got[name].shape == value.shape, name
            np.testing.assert_array_equal(got[name], value, err_msg=name)
        else:
            assert type(got[name]) is type(value), name
            assert got[name] == value, name


def test_round_trip_every_kind_and_dtype(tmp_path):
    location = str(tmp_path / "ds")
    writer = Writer.create(location, SCHEMA, chunk_bytes=512)  # several chunks
    for i in range(12):
        writer.append(sample_of(i))
    assert len(writer) == 12
    commit_id = writer.commit("twelve", author="tester", command="dataset_test")
    assert len(commit_id) == 64 and writer.base == commit_id

    ds = Dataset.open(location)
    assert len(ds) == 12
    assert ds.commit["id"] == commit_id
    assert ds.commit["num_chunks"] > 1
    assert (ds.commit["message"], ds.commit["author"], ds.commit["command"]) == (
        "twelve", "tester", "dataset_test")
    assert ds.schema[0] == ("a_uint8", "array", "uint8")
    assert ds.schema[-1] == ("label", "label")
    for i in range(12):
        assert_same(ds[i], sample_of(i))
    assert_same(ds[-1], sample_of(11))
    with pytest.raises(IndexError, match="sample 12 is out of range: the dataset has 12"):
        ds[12]


def test_update_delete_history_and_checkout(tmp_path):
    location = str(tmp_path / "ds")
    writer = Writer.create(location, {"x": ("array", "int32"), "label": "label"})
    for i in range(5):
        writer.append({"x": np.arange(i, dtype=np.int32), "label": i})
    first = writer.commit("five")
    writer.update(1, {"x": np.full((2, 2), 7, np.int32), "label": 70})
    writer.delete(-1)  # the last one
    writer.append({"x": np.zeros(0, np.int32), "label": 99})
    second = writer.commit("edit")

    ds = Dataset.open(location)
    assert [s["label"] for s in ds] == [0, 70, 2, 3, 99]
    np.testing.assert_array_equal(ds[1]["x"], np.full((2, 2), 7, np.int32))
    assert ds.sample_id(1) == 1 and ds.sample_id(4) == 5  # ids survive updates, are never reused
    assert [c["message"] for c in log(location)] == ["edit", "five", "create dataset"]
    assert log(location)[0]["parent"] == first
    assert diff(location, first, second) == {"added": [5], "removed": [4], "changed": [1]}
    assert [s["label"] for s in Dataset.open(location, "HEAD~1")] == [0, 1, 2, 3, 4]

    checkout(location, first)  # detached at the first commit
    assert len(Dataset.open(location)) == 5
    checkout(location, "main")
    assert Dataset.open(location).commit["id"] == second


def test_conflict_between_two_writers(tmp_path):
    location = str(tmp_path / "ds")
    Writer.create(location, [("label", "label")]).commit("empty")
    a, b = Writer.open(location), Writer.open(location)
    a.append({"label": 1})
    b.append({"label": 2})
    winner = a.commit("a")
    with pytest.raises(ConflictError, match="conflict: ") as info:
        b.commit("b")
    assert isinstance(info.value, RuntimeError)
    assert len(b) == 1  # the loser keeps its changes; a fresh writer sees the winner
    assert Dataset.open(location).commit["id"] == winner
    c = Writer.open(location)
    c.append({"label": 2})
    c.commit("b again")
    assert [s["label"] for s in Dataset.open(location)] == [1, 2]


def test_bad_input_is_reported_with_the_column(tmp_path):
    location = str(tmp_path / "ds")
    writer = Writer.create(location, [("x", "array", "float32"), ("name", "text"),
                                      ("label", "label")])
    good = {"x": np.zeros(2, np.float32), "name": "a", "label": 1}
    with pytest.raises(ValueError, match=r"sample has a column 'y' the schema lacks "
                                         r"\(columns: x, name, label\)"):
        writer.append({**good, "y": 1})
    with pytest.raises(ValueError, match="sample lacks column 'name'"):
        writer.append({"x": good["x"], "label": 1})
    with pytest.raises(ValueError, match=r"column 'x' holds float32 \(numpy float32\), "
                                         r"got an array of float64"):
        writer.append({**good, "x": np.zeros(2)})
    with pytest.raises(ValueError, match=r"column 'x' \(array\) takes a numpy array, got list"):
        writer.append({**good, "x": [1.0, 2.0]})
    with pytest.raises(ValueError, match=r"column 'name' \(text\) takes str, got bytes"):
        writer.append({**good, "name": b"a"})
    with pytest.raises(ValueError, match=r"column 'label' \(label\) takes an int, got float"):
        writer.append({**good, "label": 1.5})
    with pytest.raises(ValueError, match="sample 3 is out of range"):
        writer.update(3, good)
    assert len(writer) == 0  # nothing bad got in
    writer.append({**good, "label": np.int64(4)})  # numpy integers are ints
    writer.append({**good, "x": np.float32(2.5)})  # numpy scalars are 0-d arrays
    writer.commit("two")
    assert Dataset.open(location)[0]["label"] == 4
    assert Dataset.open(location)[1]["x"].shape == () and Dataset.open(location)[1]["x"] == 2.5

    with pytest.raises(ValueError, match="unknown column kind 'picture'"):
        Writer.create(str(tmp_path / "b"), [("x", "picture")])
    with pytest.raises(ValueError, match="unknown data type 'float8'"):
        Writer.create(str(tmp_path / "c"), [("x", "array", "float8")])
    with pytest.raises(ValueError, match="array column 'x' needs a dtype"):
        Writer.create(str(tmp_path / "d"), [("x", "array")])
    with pytest.raises(ValueError, match="column 'x' appears twice"):
        Writer.create(str(tmp_path / "e"), [("x", "label"), ("x", "text")])
    with pytest.raises(ValueError, match="unknown ref 'no_such_ref'"):
        Dataset.open(location, "no_such_ref")


def test_a_fixed_shape_is_checked_at_append_and_kept_in_the_schema(tmp_path):
    location = str(tmp_path / "fixed")
    writer = Writer.create(location, [("x", "array", "float32", (2, 3)),
                                      ("free", "array", "int64"), ("label", "label")])
    writer.append({"x": np.zeros((2, 3), np.float32), "free": np.arange(5), "label": 1})
    with pytest.raises(ValueError, match=r"column 'x': a value of shape \[3,2\] does not fit the "
                                         r"column's fixed shape \[2,3\]"):
        writer.append({"x": np.zeros((3, 2), np.float32), "free": np.arange(2), "label": 2})
    writer.commit("one")
    assert Dataset.open(location).schema == [("x", "array", "float32", (2, 3)),
                                             ("free", "array", "int64"), ("label", "label")]
