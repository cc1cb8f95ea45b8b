"""Writing tensor bundles: round trips, TensorFlow's exact bytes, TensorFlow reading ours,
sliced reading, clear errors for damaged files, and crash safety under SIGKILL."""
from __future__ import annotations

import functools
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from conftest import CHECKPOINT_PREFIXES, CHECKPOINTS, EXTRA_MODELS
from savedmodel.protos import tensor_bundle_pb2, types_pb2
from savedmodel.runtime import dtypes, load, registry
from savedmodel.runtime.bundle_writer import merge_bundles, write_bundle
from savedmodel.runtime.errors import FileFormatError, KernelError
from savedmodel.runtime.executor import Context
from savedmodel.runtime.table import read_table
from savedmodel.runtime.table_writer import BLOCK_SIZE, write_table
from savedmodel.runtime.tensor_bundle import (OBJECT_GRAPH_KEY, BundleReader, index_path,
                                              shard_path, slice_key)

EXPECTED = dict(np.load(CHECKPOINTS / "expected.npz"))
EXPECTED_STRINGS = json.loads((CHECKPOINTS / "expected_strings.json").read_text())
BIG = "model/big/.ATTRIBUTES/VARIABLE_VALUE"
STEP = "model/step/.ATTRIBUTES/VARIABLE_VALUE"
STRINGS = np.array([b"", b"a", b"\x00\xff\x80", "h\u00e9llo".encode(), b"x" * 300], dtype=object)


def _sample(dtype: dtypes.DType, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype.is_string:
        return np.resize(STRINGS, shape)
    kind = np.dtype(dtype.numpy).kind
    if kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if kind in "iu":
        info = np.iinfo(dtype.numpy)
        return rng.integers(info.min, info.max, shape, dtype=dtype.numpy, endpoint=True)
    if kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype.numpy)
    return rng.standard_normal(shape).astype(dtype.numpy)


def _zoo() -> dict[str, np.ndarray]:
    """One tensor of every dtype with a numpy form, plus scalars and empty tensors."""
    tensors = {}
    for i, dtype in enumerate(d for d in dtypes.ALL if d.numpy is not None):
        tensors[f"zoo/{dtype.name}"] = _sample(dtype, (3, 5), i)
        tensors[f"zoo/{dtype.name}/scalar"] = _sample(dtype, (), i).reshape(())
        tensors[f"zoo/{dtype.name}/empty"] = _sample(dtype, (0, 4), i)
    return tensors


def _assert_same(value: np.ndarray, expected: np.ndarray, key: str) -> None:
    expected = np.asarray(expected)
    assert value.shape == expected.shape, key
    if expected.dtype == object:
        assert value.dtype == object and value.ravel().tolist() == expected.ravel().tolist(), key
    else:
        assert value.dtype == expected.dtype, key
        assert value.tobytes() == expected.tobytes(), key


def _read_all(prefix) -> dict[str, np.ndarray]:
    reader = BundleReader(prefix)
    return {key: reader.read(key) for key in reader.keys()}


# --- round trips -----------------------------------------------------------------------------


def test_every_dtype_scalars_and_empty_tensors_round_trip(tmp_path):
    tensors = _zoo()
    write_bundle(tmp_path / "ckpt", tensors)
    assert sorted(os.listdir(tmp_path)) == ["ckpt.data-00000-of-00001", "ckpt.index"]
    values = _read_all(tmp_path / "ckpt")
    assert list(values) == sorted(tensors, key=str.encode)
    for key, expected in tensors.items():
        _assert_same(values[key], expected, key)


def test_strings_hold_arbitrary_bytes_and_str_is_utf8(tmp_path):
    lengths = [0, 1, 127, 128, 16384]
    tensors = {"bytes": np.array([bytes(range(256)) * 3, b"", b"\x00"], dtype=object),
               "long": np.array([b"\xff" * n for n in lengths], dtype=object),
               "text": np.array([["a\u00e9", ""], ["\u4e2d", "\x00"]], dtype=object),
               "numpy_unicode": np.array(["x", "yz"]), "numpy_bytes": np.array([b"q", b"rs"])}
    write_bundle(tmp_path / "ckpt", tensors)
    values = _read_all(tmp_path / "ckpt")
    _assert_same(values["bytes"], tensors["bytes"], "bytes")
    _assert_same(values["long"], tensors["long"], "long")
    _assert_same(values["text"], np.vectorize(str.encode, otypes=[object])(tensors["text"]), "text")
    assert values["numpy_unicode"].tolist() == [b"x", b"yz"]
    assert values["numpy_bytes"].tolist() == [b"q", b"rs"]


def test_non_contiguous_and_big_endian_arrays_are_written_as_little_endian(tmp_path):
    tensors = {"transposed": np.arange(12, dtype=np.int64).reshape(3, 4).T,
               "big_endian": np.arange(5, dtype=">f4"), "strided": np.arange(10.0)[::3]}
    write_bundle(tmp_path / "ckpt", tensors)
    values = _read_all(tmp_path / "ckpt")
    for key, expected in tensors.items():
        np.testing.assert_array_equal(values[key], expected)
    assert values["big_endian"].dtype == np.float32


@pytest.mark.parametrize("limit", [1, 64, 200, 10**9])
def test_sharded_writes_respect_the_limit(tmp_path, limit):
    sizes = [40, 40, 150, 8, 0, 300, 16, 16]
    tensors = {f"t{i}": np.full(n // 4, i, np.float32) for i, n in enumerate(sizes)}
    tensors["words"] = STRINGS
    write_bundle(tmp_path / "ckpt", tensors, max_shard_bytes=limit)
    reader = BundleReader(tmp_path / "ckpt")
    num_shards = reader.header.num_shards
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["ckpt.index"] + [shard_path("ckpt", i, num_shards).name for i in range(num_shards)])
    shards = [reader.entry(key).shard_id for key in tensors]
    sizes = [reader.entry(key).size for key in tensors]
    assert shards == sorted(shards) and set(shards) == set(range(num_shards))
    used = [sum(n for n, s in zip(sizes, shards) if s == shard) for shard in range(num_shards)]
    for shard in range(num_shards):
        assert shard_path(tmp_path / "ckpt", shard, num_shards).stat().st_size == used[shard]
        alone = sum(1 for n, s in zip(sizes, shards) if s == shard and n) == 1
        assert used[shard] <= limit or alone
        if shard:
            assert used[shard - 1] + sizes[shards.index(shard)] > limit
    for key, expected in tensors.items():
        _assert_same(reader.read(key), expected, key)


def test_bad_arguments_name_the_tensor(tmp_path):
    with pytest.raises(ValueError, match="max_shard_bytes"):
        write_bundle(tmp_path / "a", {"x": np.zeros(1)}, max_shard_bytes=0)
    with pytest.raises(ValueError, match="non-empty"):
        write_bundle(tmp_path / "a", {"": np.zeros(1)})
    with pytest.raises(TypeError, match="'when'.*datetime64"):
        write_bundle(tmp_path / "a", {"when": np.array(["2020-01-01"], dtype="datetime64[D]")})
    with pytest.raises(TypeError, match="'mixed'.*int"):
        write_bundle(tmp_path / "a", {"mixed": np.array([b"a", 3], dtype=object)})
    assert list(tmp_path.iterdir()) == []


def test_a_failed_write_leaves_no_files(tmp_path, monkeypatch):
    from savedmodel.runtime import bundle_writer

    def failing_table(out, records):
        out.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(bundle_writer, "write_table", failing_table)
    with pytest.raises(OSError, match="disk full"):
        write_bundle(tmp_path / "ckpt", {"x": np.zeros(1000)}, max_shard_bytes=100)
    assert list(tmp_path.iterdir()) == []


# --- the table layout ------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", CHECKPOINT_PREFIXES, ids=lambda p: "/".join(p.parts[-2:]))
def test_table_writer_reproduces_tensorflows_index_files(prefix):
    data = index_path(prefix).read_bytes()
    out = io.BytesIO()
    write_table(out, read_table(index_path(prefix)))
    assert out.getvalue() == data


def test_large_tables_are_cut_into_blocks_that_read_back(tmp_path):
    records = [(b"key/%06d/" % i + b"n" * 60, b"v" * (i % 50)) for i in range(12000)]
    path = tmp_path / "t.index"
    with open(path, "wb") as out:
        write_table(out, records)
    assert read_table(path) == records
    assert path.stat().st_size > 2 * BLOCK_SIZE
    with pytest.raises(ValueError, match="strictly increasing"):
        write_table(io.BytesIO(), [(b"b", b""), (b"a", b"")])


# --- reading TensorFlow's checkpoints completely ---------------------------------------------


def _expected(key: str) -> np.ndarray:
    if key in EXPECTED_STRINGS:
        return np.array([s.encode("utf-8") for s in EXPECTED_STRINGS[key]], dtype=object)
    return EXPECTED[key.replace("/", "|")]


@pytest.mark.parametrize("prefix", CHECKPOINT_PREFIXES, ids=lambda p: "/".join(p.parts[-2:]))
def test_every_reference_checkpoint_reads_completely(prefix):
    reader = BundleReader(prefix)
    assert reader.entry(BIG).slices or prefix.parent.name != "sharded"
    for key in reader.keys():
        value = reader.read(key)
        if key == OBJECT_GRAPH_KEY:
            assert value.shape == () and value.dtype == object
        elif prefix.parent.name == "managed" and key in (STEP, "save_counter/.ATTRIBUTES/VARIABLE_VALUE"):
            saves = int(prefix.name.split("-")[1])
            _assert_same(value, np.int64(saves + 42 if key == STEP else saves), key)
        else:
            _assert_same(value, _expected(key), key)


def _sliced_bundle(path: Path, full: np.ndarray, regions) -> Path:
    """A bundle storing `full` as tensor 't' in the slices `regions` ((start, length) per dim,
    None for a full dimension), built by rewriting the index of plainly written parts."""
    parts = {}
    for i, region in enumerate(regions):
        index = tuple(slice(None) if r is None else slice(r[0], r[0] + r[1]) for r in region)
        parts[f"part{i}"] = full[index]
    write_bundle(path, parts)

    def to_slices(entries):
        whole = tensor_bundle_pb2.BundleEntryProto(dtype=entries[b"part0"].dtype)
        for size in full.shape:
            whole.shape.dim.add(size=size)
        for i, region in enumerate(regions):
            spec = whole.slices.add()
            for r in region:
                extent = spec.extent.add()
                if r is not None:
                    extent.start, extent.length = r
            entries[slice_key(b"t", spec)] = entries.pop(b"part%d" % i)
        entries[b"t"] = whole

    _rewrite_index(path, to_slices)
    return path


def _rewrite_index(prefix: Path, change) -> None:
    """Let `change` edit the {key: BundleEntryProto} records, then write the index back."""
    records = read_table(index_path(prefix))
    entries = {k: tensor_bundle_pb2.BundleEntryProto.FromString(v) for k, v in records[1:]}
    change(entries)
    with open(index_path(prefix), "wb") as out:
        write_table(out, [records[0]] + sorted((k, e.SerializeToString()) for k, e in entries.items()))


@pytest.mark.parametrize("dtype", ["float32", "string"])
def test_slices_are_assembled_into_one_array(tmp_path, dtype):
    full = _sample(dtypes.from_name(dtype), (5, 7))
    regions = [((0, 2), None), ((2, 3), (0, 4)), ((2, 3), (4, 3))]
    _assert_same(BundleReader(_sliced_bundle(tmp_path / "ckpt", full, regions)).read("t"), full, "t")


def test_overlapping_slices_are_an_error(tmp_path):
    prefix = _sliced_bundle(tmp_path / "ckpt", np.arange(10.0), [((0, 4),), ((2, 4),), ((8, 2),)])
    with pytest.raises(FileFormatError, match=r"ckpt\.index: tensor 't': slices 0,4 and 2,4 overlap"):
        BundleReader(prefix).read("t")


# --- damaged files ---------------------------------------------------------------------------


@pytest.fixture
def sharded_copy(tmp_path) -> Path:
    for path in (CHECKPOINTS / "sharded").iterdir():
        shutil.copyfile(path, tmp_path / path.name)
    return tmp_path / "ckpt"


def _set_extent(slice_index: int, dim: int, start: int, length: int):
    def change(entries):
        extent = entries[BIG.encode()].slices[slice_index].extent[dim]
        extent.start, extent.length = start, length
    return change


def _set_dims(*sizes: int):
    def change(entries):
        del entries[BIG.encode()].shape.dim[:]
        for size in sizes:
            entries[BIG.encode()].shape.dim.add(size=size)
    return change


def _set_dtype(enum: int):
    return lambda entries: setattr(entries[BIG.encode()], "dtype", enum)


def _drop_slice_record(entries):
    del entries[next(k for k in entries if k.startswith(b"\x00model/big"))]


FUZZ_SEEDS = {
    "extent_end_overflow": (_set_extent(1, 0, 2**62, 2**62), "overflows int64"),
    "negative_extent_start": (_set_extent(1, 0, -5, 45), "negative start"),
    "extent_past_dimension": (_set_extent(1, 1, 0, 501), "extends past dimension 1 of size 500"),
    "tensor_size_overflow": (_set_dims(2**40, 2**40), "overflows the tensor size limit"),
    "missing_tensor_data": (_drop_slice_record, "missing tensor data"),
    "negative_dimension": (_set_dims(-600, 500), "negative dimension"),
    "unsupported_tensor_type": (_set_dtype(types_pb2.DT_RESOURCE), "DT_RESOURCE cannot be read"),
    "unknown_tensor_type": (_set_dtype(999), "unsupported DataType enum value 999"),
    "slice_rank_mismatch": (lambda e: e[BIG.encode()].slices[0].extent.pop(), "has 1 dimensions"),
    "slices_do_not_cover": (lambda e: e[BIG.encode()].slices.pop(), "slices hold 299921 elements"),
}


@pytest.mark.parametrize("seed", FUZZ_SEEDS)
def test_fuzz_seed_cases_are_clear_errors(sharded_copy, seed):
    change, message = FUZZ_SEEDS[seed]
    _rewrite_index(sharded_copy, change)
    reader = BundleReader(sharded_copy)
    with pytest.raises(FileFormatError, match=rf"ckpt\.index: tensor '{BIG}'.*{message}"):
        reader.read(BIG)


def test_slice_record_of_the_wrong_size_is_an_error(sharded_copy):
    def shrink(entries):
        record = next(v for k, v in entries.items() if k.startswith(b"\x00model/big"))
        record.shape.dim[0].size -= 1
    _rewrite_index(sharded_copy, shrink)
    with pytest.raises(FileFormatError, match=rf"tensor '{BIG}', slice .*slice record has shape"):
        BundleReader(sharded_copy).read(BIG)


@pytest.fixture
def written(tmp_path) -> Path:
    write_bundle(tmp_path / "ckpt", {"a": np.arange(1000, dtype=np.float32), "w": STRINGS,
                                     "b": np.ones((4, 4))}, max_shard_bytes=4000)
    return tmp_path / "ckpt"


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x10
    path.write_bytes(bytes(data))


def test_crc_mismatch_in_an_index_block(written):
    _flip(index_path(written), 3)
    with pytest.raises(FileFormatError, match=r"ckpt\.index: checksum mismatch in data block"):
        BundleReader(written)


@pytest.mark.parametrize("key", ["a", "w", "b"])
def test_crc_mismatch_in_a_tensor(written, key):
    entry = BundleReader(written).entry(key)
    _flip(shard_path(written, entry.shard_id, 2), entry.offset + entry.size - 1)
    with pytest.raises(FileFormatError, match=rf"ckpt\.index: tensor '{key}': checksum mismatch"):
        BundleReader(written).read(key)


def test_truncated_and_missing_shards(written):
    shard = shard_path(written, 1, 2)
    shard.write_bytes(shard.read_bytes()[:10])
    with pytest.raises(FileFormatError, match=r"tensor 'w'.*outside the 10-byte shard .*00001-of-00002"):
        BundleReader(written).read("w")
    shard.unlink()
    with pytest.raises(FileFormatError, match=r"tensor 'b'.*data shard .*ckpt\.data-00001-of-00002 is missing"):
        BundleReader(written).read("b")
    np.testing.assert_array_equal(BundleReader(written).read("a"), np.arange(1000, dtype=np.float32))


# --- crash safety ----------------------------------------------------------------------------

WRITER = """
import sys
import numpy as np
from savedmodel.runtime.bundle_writer import write_bundle
block = (np.arange(32 << 20) % 251).astype(np.uint8)
write_bundle(sys.argv[1], {f"t{i:02d}": block for i in range(16)}, max_shard_bytes=64 << 20)
"""


def test_sigkill_mid_write_leaves_no_half_written_files(tmp_path):
    previous = {"kept": np.arange(100.0), "words": STRINGS}
    write_bundle(tmp_path / "previous", previous)
    process = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path / "interrupted")])
    try:
        deadline = time.monotonic() + 20
        while not any(".tmp" in p.name and p.stat().st_size for p in tmp_path.iterdir()):
            assert process.poll() is None and time.monotonic() < deadline, "writer never started"
            time.sleep(0.001)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert process.returncode == -signal.SIGKILL
    for key, value in _read_all(tmp_path / "previous").items():
        _assert_same(value, previous[key], key)
    block = (np.arange(32 << 20) % 251).astype(np.uint8)
    for path in tmp_path.glob("interrupted.data-*"):
        assert ".tmp" in path.name or path.read_bytes() == block.tobytes() * 2, path.name
    if index_path(tmp_path / "interrupted").exists():
        assert all(v.tobytes() == block.tobytes() for v in _read_all(tmp_path / "interrupted").values())


# --- kernels ---------------------------------------------------------------------------------


def _kernel(op: str):
    """The kernel of `op`, called as eager ops call it (with a context that confines nothing)."""
    found = registry.lookup(op)
    return functools.partial(found.fn, Context(None, None)) if found.context else found.fn


def _strings(*values: str) -> np.ndarray:
    return np.array([v.encode() for v in values], dtype=object)


def test_save_v2_then_restore_v2(tmp_path):
    prefix = np.array(str(tmp_path / "ckpt").encode(), dtype=object)
    values = [np.arange(6, dtype=np.int32).reshape(2, 3), STRINGS]
    kinds = [dtypes.from_name("int32"), dtypes.from_name("string")]
    assert _kernel("SaveV2")(prefix, _strings("x", "s"), _strings("", ""), *values, dtypes=kinds) == ()
    restored = _kernel("RestoreV2")(prefix, _strings("s", "x"), _strings("", ""), dtypes=kinds[::-1])
    _assert_same(restored[0], STRINGS, "s")
    _assert_same(restored[1], values[0], "x")
    with pytest.raises(KernelError, match="SaveV2: saving partitioned slices is not supported"):
        _kernel("SaveV2")(prefix, _strings("x"), _strings("2 3 0,1:-"), values[0][:1])
    with pytest.raises(KernelError, match="SaveV2: 2 names, 1 slice specs and 1 tensors"):
        _kernel("SaveV2")(prefix, _strings("x", "y"), _strings(""), values[0])


def test_merge_v2_checkpoints_renumbers_shards_and_removes_sources(tmp_path):
    parts = [tmp_path / "ckpt_temp" / f"part-{i:05d}-of-00002" for i in range(2)]
    write_bundle(parts[0], {"a": np.arange(3.0), "s": STRINGS})
    write_bundle(parts[1], {"b": np.arange(4, dtype=np.int8)})
    _kernel("MergeV2Checkpoints")(np.array([str(p).encode() for p in parts], dtype=object),
                                  np.array(str(tmp_path / "ckpt").encode(), dtype=object),
                                  delete_old_dirs=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "ckpt.data-00000-of-00002", "ckpt.data-00001-of-00002", "ckpt.index"]
    reader = BundleReader(tmp_path / "ckpt")
    assert [reader.entry(k).shard_id for k in ("a", "b", "s")] == [0, 1, 0]
    _assert_same(reader.read("b"), np.arange(4, dtype=np.int8), "b")
    _assert_same(reader.read("s"), STRINGS, "s")


def test_merge_rejects_a_key_in_two_inputs_and_keeps_the_sources(tmp_path):
    write_bundle(tmp_path / "one", {"a": np.zeros(2)})
    write_bundle(tmp_path / "two", {"a": np.ones(2)})
    with pytest.raises(FileFormatError, match=r"two\.index: key 'a' is also in an earlier"):
        merge_bundles([tmp_path / "one", tmp_path / "two"], tmp_path / "merged")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "one.data-00000-of-00001", "one.index", "two.data-00000-of-00001", "two.index"]
    merge_bundles([tmp_path / "absent", tmp_path / "one"], tmp_path / "merged", allow_missing=True)
    np.testing.assert_array_equal(BundleReader(tmp_path / "merged").read("a"), np.zeros(2))


def test_merging_a_bundle_onto_itself_keeps_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_bundle("ckpt", {"a": np.arange(3)})
    merge_bundles(["ckpt"], tmp_path / "ckpt", delete_old_dirs=False)
    assert sorted(os.listdir(tmp_path)) == ["ckpt.data-00000-of-00001", "ckpt.index"]
    np.testing.assert_array_equal(BundleReader("ckpt").read("a"), np.arange(3))


def test_a_tf1_savers_sharded_save_graph_runs(tmp_path):
    model_dir = next(p for p in EXTRA_MODELS if p.name == "tf1_ref")
    model = load(model_dir, output_dir=tmp_path, engine="numpy")  # run_graph: the numpy engine's session API
    saver = model._meta_graph.saver_def
    assert saver.sharded
    name, index = saver.save_tensor_name.split(":")
    model.run_graph({(saver.filename_tensor_name.split(":")[0], 0):
                     np.array(str(tmp_path / "ckpt").encode(), dtype=object)}, [(name, int(index))])
    ours, theirs = _read_all(tmp_path / "ckpt"), _read_all(model_dir / "variables" / "variables")
    assert list(ours) == list(theirs)
    for key in ours:
        _assert_same(ours[key], theirs[key], key)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.data-00000-of-00001", "ckpt.index"]


# --- live: TensorFlow as the oracle ----------------------------------------------------------


def _tf_tensor(tf, value: np.ndarray):
    if value.dtype == object:
        return tf.constant(value.tolist() if value.ndim else value.item(), dtype=tf.string,
                           shape=value.shape)
    if value.dtype == ml_dtypes.bfloat16:
        return tf.cast(tf.constant(value.astype(np.float32)), tf.bfloat16)
    return tf.constant(value)


def _tf_save(tf, prefix: Path, tensors: dict) -> None:
    tf.raw_ops.SaveV2(prefix=str(prefix), tensor_names=list(tensors),
                      shape_and_slices=[""] * len(tensors),
                      tensors=[_tf_tensor(tf, v) for v in tensors.values()])


def test_index_and_data_are_byte_identical_to_tensorflows(tf, tmp_path):
    tensors = _zoo() | {"words": STRINGS, "a/long/name/.ATTRIBUTES/VARIABLE_VALUE": np.eye(3)}
    _tf_save(tf, tmp_path / "theirs", tensors)
    write_bundle(tmp_path / "ours", tensors)
    for suffix in (".index", ".data-00000-of-00001"):
        ours = Path(f"{tmp_path / 'ours'}{suffix}").read_bytes()
        assert ours == Path(f"{tmp_path / 'theirs'}{suffix}").read_bytes(), suffix


def test_multi_block_index_is_byte_identical_to_tensorflows(tf, tmp_path):
    tensors = {f"layer_{i:05d}/{'sub/' * 25}kernel/.ATTRIBUTES/VARIABLE_VALUE": np.float32(i)
               for i in range(4000)}
    _tf_save(tf, tmp_path / "theirs", tensors)
    write_bundle(tmp_path / "ours", tensors)
    theirs = index_path(tmp_path / "theirs").read_bytes()
    assert len(theirs) > 2 * BLOCK_SIZE
    assert index_path(tmp_path / "ours").read_bytes() == theirs


@pytest.mark.parametrize("limit", [None, 100])
def test_tensorflow_reads_ours(tf, tmp_path, limit):
    tensors = _zoo() | {"words": STRINGS}
    write_bundle(tmp_path / "ckpt", tensors, max_shard_bytes=limit)
    reader = tf.train.load_checkpoint(str(tmp_path / "ckpt"))
    shapes, types = reader.get_variable_to_shape_map(), reader.get_variable_to_dtype_map()
    assert set(shapes) == set(tensors)
    for key, expected in tensors.items():
        assert shapes[key] == list(expected.shape), key
        assert types[key].as_numpy_dtype == (object if expected.dtype == object else expected.dtype)
        _assert_same(np.asarray(reader.get_tensor(key), dtype=expected.dtype), expected, key)


def test_tensorflow_written_slices_read_like_tensorflow(tf, tmp_path):
    full = np.arange(24, dtype=np.float32).reshape(4, 6)
    words = np.resize(STRINGS, (3, 2))
    tf.raw_ops.SaveV2(prefix=str(tmp_path / "ckpt"), tensor_names=["a", "a", "a", "s", "s"],
                      shape_and_slices=["4 6 0,2:-", "4 6 2,2:0,3", "4 6 2,2:3,3", "3 2 0,1:-",
                                        "3 2 1,2:-"],
                      tensors=[full[:2], full[2:, :3], full[2:, 3:], _tf_tensor(tf, words[:1]),
                               _tf_tensor(tf, words[1:])])
    reader = BundleReader(tmp_path / "ckpt")
    _assert_same(reader.read("a"), full, "a")
    _assert_same(reader.read("s"), words, "s")


def test_merge_is_byte_identical_to_tensorflows(tf, tmp_path):
    for side in ("theirs", "ours"):
        write_bundle(tmp_path / side / "p0", {"a": np.arange(3.0), "s": STRINGS})
        write_bundle(tmp_path / side / "p1", {"b": np.arange(4, dtype=np.int8), "c": np.eye(2)})
    sources = lambda side: [str(tmp_path / side / "p0"), str(tmp_path / side / "p1")]
    tf.raw_ops.MergeV2Checkpoints(checkpoint_prefixes=sources("theirs"),
                                  destination_prefix=str(tmp_path / "theirs" / "m"),
                                  delete_old_dirs=False)
    merge_bundles(sources("ours"), tmp_path / "ours" / "m", delete_old_dirs=False)
    assert sorted(os.listdir(tmp_path / "ours")) == sorted(os.listdir(tmp_path / "theirs"))
    for name in os.listdir(tmp_path / "theirs"):
        assert (tmp_path / "ours" / name).read_bytes() == (tmp_path / "theirs" / name).read_bytes()
