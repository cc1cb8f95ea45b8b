"""sm.train.Checkpoint and CheckpointManager against TensorFlow, in both directions.

The structures are built by one function from either library (`lib` is `tf` or `sm`), so each
comparison runs the same program on both. Without TensorFlow, the reference checkpoints (made by
TensorFlow, see tests/data/reference/make_reference.py) are the oracle.
"""
from __future__ import annotations

import collections
import filecmp
import json
import os
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest

import savedmodel as sm
from conftest import CHECKPOINTS, SAVEDMODELS
from savedmodel.protos import trackable_object_graph_pb2
from savedmodel.runtime.tensor_bundle import OBJECT_GRAPH_KEY, BundleReader

EXPECTED = dict(np.load(CHECKPOINTS / "expected.npz"))
EXPECTED_STRINGS = json.loads((CHECKPOINTS / "expected_strings.json").read_text())
ASSERTIONS = ("assert_consumed", "assert_existing_objects_matched", "assert_nontrivial_match")
Pair = collections.namedtuple("Pair", "first second")
NEEDS_ESCAPING = 'c"k\\\tδ\''
"""A checkpoint name whose path the state file must escape (TensorFlow globs the latest
checkpoint's files, so its own test leaves out the backslash)."""


# ----------------------------------------------------------------------------- structures

def reference_module(lib):
    """The module make_reference.py checkpointed, built with `lib`."""
    class Inner(lib.Module):
        def __init__(self):
            super().__init__()
            self.kernel = lib.Variable(np.arange(12, dtype=np.float32).reshape(3, 4), name="kernel")
            self.flags = lib.Variable([True, False, True], name="flags")

    class Outer(lib.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()
            self.step = lib.Variable(42, dtype="int64", name="step")
            self.words = lib.Variable(["alpha", "", "gamma δ"], name="words")
            self.big = lib.Variable(np.linspace(-1, 1, 300_000, dtype=np.float32).reshape(600, 500),
                                    name="big")
            self.half = lib.Variable(np.array([1.5, -2.25], np.float16), name="half")
            self.layers = [lib.Variable(float(i), name=f"layer{i}") for i in range(3)]

    return Outer()


def dense(lib, n_in, n_out, name=None, scale=1.0):
    module = lib.Module(name=name)
    module.w = lib.Variable(scale * np.arange(n_in * n_out, dtype=np.float32).reshape(n_in, n_out),
                            name="w")
    module.b = lib.Variable(scale * np.ones(n_out, np.float32), name="b")
    return module


def rich_module(lib, scale=1.0):
    """Every kind of edge: attributes, nested lists, dicts with keys that need escaping,
    tuples and namedtuples, shared objects, a cycle, empty containers, a name scope."""
    model = lib.Module(name="model")
    model.zeta = lib.Variable(scale * 1.5, name="zeta")
    model.dense = dense(lib, 2, 3, scale=scale)
    model.sizes = [1, 2]
    model.layers = [dense(lib, 3, 3, name="l0", scale=scale),
                    [lib.Variable(int(scale * 5), name="nested")], 7]
    model.table = {"b/x": lib.Variable(np.float16(scale * 2.5), name="slash"),
                   "a.y": lib.Variable([b"s", b"t" * int(scale)], name="dot"),
                   "sub": dense(lib, 1, 1, scale=scale)}
    model.pair = Pair(lib.Variable(int(scale), dtype="int64", name="first"),
                      lib.Variable(scale > 1, name="second"))
    model.plain = (lib.Variable(scale * 2.0, trainable=False, name="frozen"), "text")
    model.shared = model.zeta
    model.empty = {}
    model.myself = model
    with model.name_scope:
        model.scoped = lib.Variable(scale * np.eye(2), name="scoped")
    return model


def values(module) -> list:
    return [v.numpy() for v in module.variables]


def assert_same_values(ours, theirs) -> None:
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


def expected_value(key: str) -> np.ndarray:
    if key in EXPECTED_STRINGS:
        return np.array([s.encode("utf-8") for s in EXPECTED_STRINGS[key]], dtype=object)
    return EXPECTED[key.replace("/", "|")]


def object_graph(prefix) -> bytes:
    return BundleReader(prefix).read(OBJECT_GRAPH_KEY)[()]


def same_files(a, b) -> bool:
    return filecmp.cmp(a, b, shallow=False)


def bundle_files(prefix) -> list[str]:
    folder, name = os.path.split(str(prefix))
    return sorted(f for f in os.listdir(folder) if f.startswith(name + "."))


def outcome(call) -> str:
    try:
        call()
    except AssertionError:
        return "fails"
    return "passes"


# ----------------------------------------------------------------------------- without TensorFlow

@pytest.mark.parametrize("prefix", ["single/ckpt", "sharded/ckpt"])
def test_restoring_the_reference_checkpoints_gives_tensorflows_values(prefix):
    model = reference_module(sm)
    for variable in model.variables:
        variable.assign(np.full(variable.shape, b"", object) if variable.dtype.is_string
                        else np.zeros(variable.shape, variable.dtype.numpy))
    status = sm.train.Checkpoint(model=model).read(CHECKPOINTS / prefix)
    status.assert_consumed()
    reader = BundleReader(CHECKPOINTS / prefix)
    for key in reader.keys():
        if key != OBJECT_GRAPH_KEY:
            path = key.split("/.ATTRIBUTES")[0].split("/")[1:]
            target = model
            for part in path:
                target = target[int(part)] if isinstance(target, list) else getattr(target, part)
            assert_same_values([target.numpy()], [expected_value(key)])


def test_our_write_is_byte_identical_to_tensorflows(tmp_path):
    prefix = sm.train.Checkpoint(model=reference_module(sm)).write(tmp_path / "ckpt")
    reference = CHECKPOINTS / "single" / "ckpt"
    assert bundle_files(prefix) == bundle_files(reference)
    for name in bundle_files(reference):
        assert same_files(tmp_path / name, reference.parent / name), name


def test_manager_run_is_byte_identical_to_tensorflows(tmp_path):
    model = reference_module(sm)
    manager = sm.train.CheckpointManager(sm.train.Checkpoint(model=model), tmp_path, max_to_keep=2)
    for _ in range(4):
        model.step.assign_add(1)
        manager.save()
    reference = CHECKPOINTS / "managed"
    assert sorted(os.listdir(tmp_path)) == sorted(os.listdir(reference))
    for name in os.listdir(reference):
        if name != "checkpoint":
            assert same_files(tmp_path / name, reference / name), name
    ours = sm.train.get_checkpoint_state(tmp_path)
    theirs = sm.train.get_checkpoint_state(reference)
    assert [os.path.basename(p) for p in ours.all_model_checkpoint_paths] == \
        [os.path.basename(p) for p in theirs.all_model_checkpoint_paths]
    assert len(ours.all_model_checkpoint_timestamps) == len(theirs.all_model_checkpoint_timestamps)
    assert manager.checkpoints == [str(tmp_path / "ckpt-3"), str(tmp_path / "ckpt-4")]


def test_manager_takes_over_tensorflows_directory(tmp_path):
    directory = shutil.copytree(CHECKPOINTS / "managed", tmp_path / "managed")
    for name in os.listdir(directory):
        os.chmod(directory / name, 0o644)
    model = reference_module(sm)
    checkpoint = sm.train.Checkpoint(model=model)
    manager = sm.train.CheckpointManager(checkpoint, directory, max_to_keep=2)
    assert manager.checkpoints == [str(directory / "ckpt-3"), str(directory / "ckpt-4")]
    assert manager.restore_or_initialize() == str(directory / "ckpt-4")
    step = "model/step/.ATTRIBUTES/VARIABLE_VALUE"
    assert model.step.numpy() == sm.train.load_variable(CHECKPOINTS / "managed" / "ckpt-4", step)
    assert manager.save() == str(directory / "ckpt-5")
    assert manager.checkpoints == [str(directory / "ckpt-4"), str(directory / "ckpt-5")]
    assert not (directory / "ckpt-3.index").exists()
    assert sm.train.latest_checkpoint(directory) == str(directory / "ckpt-5")


def test_save_numbers_checkpoints_and_records_the_latest(tmp_path):
    checkpoint = sm.train.Checkpoint(v=sm.Variable(1.0))
    first = checkpoint.save(tmp_path / "run" / "ck")
    second = checkpoint.save(tmp_path / "run" / "ck")
    assert (first, second) == (str(tmp_path / "run" / "ck-1"), str(tmp_path / "run" / "ck-2"))
    state = sm.train.get_checkpoint_state(tmp_path / "run")
    assert state.model_checkpoint_path == second
    assert state.all_model_checkpoint_paths == [second]
    assert sm.train.load_variable(second, "save_counter/.ATTRIBUTES/VARIABLE_VALUE") == 2


def test_write_has_no_save_counter_until_something_creates_it(tmp_path):
    checkpoint = sm.train.Checkpoint(v=sm.Variable(1.0))
    keys = [k for k, _ in sm.train.list_variables(checkpoint.write(tmp_path / "a"))]
    assert keys == [OBJECT_GRAPH_KEY, "v/.ATTRIBUTES/VARIABLE_VALUE"]
    assert checkpoint.save_counter.numpy() == 0
    keys = [k for k, _ in sm.train.list_variables(checkpoint.write(tmp_path / "b"))]
    assert "save_counter/.ATTRIBUTES/VARIABLE_VALUE" in keys


def test_manager_keeps_all_without_max_to_keep_and_rejects_zero(tmp_path):
    checkpoint = sm.train.Checkpoint(v=sm.Variable(1.0))
    manager = sm.train.CheckpointManager(checkpoint, tmp_path, max_to_keep=None,
                                         checkpoint_name="model")
    paths = [manager.save() for _ in range(3)]
    assert manager.checkpoints == paths
    assert all(os.path.exists(p + ".index") for p in paths)
    assert manager.save(checkpoint_number=10) == str(tmp_path / "model-10")
    with pytest.raises(ValueError, match="max_to_keep"):
        sm.train.CheckpointManager(checkpoint, tmp_path, max_to_keep=0)


def test_deferred_restoration_fills_objects_attached_later(tmp_path):
    prefix = sm.train.Checkpoint(model=rich_module(sm, scale=3.0)).write(tmp_path / "ck")
    model = sm.Module(name="model")
    status = sm.train.Checkpoint(model=model).read(prefix)
    with pytest.raises(AssertionError, match="Unresolved object"):
        status.assert_consumed()
    model.zeta = sm.Variable(0.0)
    model.layers = []
    model.layers.append(dense(sm, 3, 3, scale=0.0))
    model.table = {}
    model.table["b/x"] = sm.Variable(np.float16(0))
    model.dense = dense(sm, 2, 3, scale=0.0)
    expected = rich_module(sm, scale=3.0)
    assert model.zeta.numpy() == expected.zeta.numpy()
    assert model.table["b/x"].numpy() == expected.table["b/x"].numpy()
    assert_same_values(values(model.layers[0]), values(expected.layers[0]))
    assert_same_values(values(model.dense), values(expected.dense))
    status.assert_existing_objects_matched()


def test_shape_mismatch_names_the_key_the_variable_and_both_shapes(tmp_path):
    prefix = sm.train.Checkpoint(model=dense(sm, 2, 3)).write(tmp_path / "ck")
    model = dense(sm, 2, 4, scale=0.0)
    before = values(model)
    with pytest.raises(sm.train.RestoreError) as err:
        sm.train.Checkpoint(model=model).read(prefix)
    message = str(err.value)
    for part in ("model/w/.ATTRIBUTES/VARIABLE_VALUE", "'w:0'", "(2, 3)", "(2, 4)", str(prefix)):
        assert part in message
    assert_same_values(values(model), before)


def test_dtype_mismatch_and_deferred_mismatch_are_errors(tmp_path):
    prefix = sm.train.Checkpoint(model=dense(sm, 2, 3)).write(tmp_path / "ck")
    model = sm.Module()
    model.w = sm.Variable(np.zeros((2, 3), np.float64))
    with pytest.raises(ValueError, match="float64.*float32"):
        sm.train.Checkpoint(model=model).read(prefix)
    model = sm.Module()
    sm.train.Checkpoint(model=model).read(prefix)
    with pytest.raises(ValueError, match=r"\(2, 3\)"):
        model.w = sm.Variable(np.zeros(5, np.float32))


def test_restoring_a_missing_path_names_it(tmp_path):
    missing = tmp_path / "nothing" / "ckpt"
    for call in (sm.train.Checkpoint().read, sm.train.Checkpoint().restore,
                 sm.train.load_checkpoint):
        with pytest.raises(FileNotFoundError, match=str(missing)):
            call(missing)
    with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file"):
        sm.train.load_checkpoint(tmp_path)


def test_restore_none_is_initialization_only():
    checkpoint = sm.train.Checkpoint(v=sm.Variable(1.0))
    status = checkpoint.restore(None)
    assert status.expect_partial() is status
    for name in ASSERTIONS:
        with pytest.raises(AssertionError, match="No checkpoint specified"):
            getattr(status, name)()


def test_reader_utilities_match_the_reference_listing():
    listing = json.loads((CHECKPOINTS / "expected_keys.json").read_text())
    prefix = CHECKPOINTS / "single" / "ckpt"
    assert sm.train.list_variables(prefix) == sorted(listing.items())
    reader = sm.train.load_checkpoint(prefix)
    assert reader.has_tensor("model/step/.ATTRIBUTES/VARIABLE_VALUE")
    assert not reader.has_tensor("model/step")
    assert isinstance(reader.get_tensor(OBJECT_GRAPH_KEY), bytes)
    step = sm.train.load_variable(prefix, "model/step/.ATTRIBUTES/VARIABLE_VALUE:0")
    assert step == expected_value("model/step/.ATTRIBUTES/VARIABLE_VALUE")
    half = "model/half/.ATTRIBUTES/VARIABLE_VALUE"
    assert reader.get_variable_to_dtype_map()[half].numpy == expected_value(half).dtype
    managed = sm.train.list_variables(CHECKPOINTS / "managed")
    assert managed == sm.train.list_variables(CHECKPOINTS / "managed" / "ckpt-4")


def test_restore_from_a_savedmodel_directory():
    directory = next(p for p in SAVEDMODELS if p.name == "seeds")
    reader = BundleReader(directory / "variables" / "variables")
    model = sm.Module()
    model.w = sm.Variable(np.zeros((2, 2), np.float32))
    model.b = sm.Variable(np.zeros(2, np.float32))
    model.calls = sm.Variable(5, dtype="int64")
    checkpoint = sm.train.Checkpoint(w=model.w, b=model.b, calls=model.calls)
    checkpoint.read(directory).assert_existing_objects_matched()
    assert_same_values(values(model), [reader.read(f"{k}/.ATTRIBUTES/VARIABLE_VALUE")
                                       for k in ("b", "calls", "w")])


def test_lists_must_stay_append_only_to_be_saved(tmp_path):
    model = sm.Module()
    model.items = [1, sm.Variable(1.0)]
    model.items.append(sm.Variable(2.0))
    sm.train.Checkpoint(model=model).write(tmp_path / "ok")
    model.items.pop(0)
    with pytest.raises(ValueError, match="append-only"):
        sm.train.Checkpoint(model=model).write(tmp_path / "bad")
    assert not os.path.exists(tmp_path / "bad.index")


def test_state_file_round_trips_paths_that_need_escaping(tmp_path):
    directory = tmp_path / "dir δ"
    checkpoint = sm.train.Checkpoint(v=sm.Variable(1.0))
    manager = sm.train.CheckpointManager(checkpoint, directory, max_to_keep=3,
                                         checkpoint_name=NEEDS_ESCAPING)
    path = manager.save()
    text = (directory / "checkpoint").read_text("utf-8")
    assert all(escape in text for escape in ('\\"', "\\\\", "\\t", "\\'", "δ"))
    assert sm.train.latest_checkpoint(directory) == path
    reopened = sm.train.CheckpointManager(checkpoint, directory, max_to_keep=3,
                                          checkpoint_name=NEEDS_ESCAPING)
    assert reopened.checkpoints == [path]


# ----------------------------------------------------------------------------- against TensorFlow

def test_object_graph_and_files_equal_tensorflows_for_the_same_structure(tf, tmp_path):
    for method in ("write", "save"):
        theirs = getattr(tf.train.Checkpoint(model=rich_module(tf), alpha=tf.Variable(1.0)),
                         method)(str(tmp_path / "tf" / "ck"))
        ours = getattr(sm.train.Checkpoint(model=rich_module(sm), alpha=sm.Variable(1.0)),
                       method)(tmp_path / "sm" / "ck")
        assert object_graph(ours) == object_graph(theirs)
        assert bundle_files(ours) == bundle_files(theirs)
        for name in bundle_files(theirs):
            assert same_files(os.path.join(os.path.dirname(ours), name),
                              os.path.join(os.path.dirname(theirs), name)), name


def test_object_graph_nodes_are_tensorflows(tf, tmp_path):
    """A readable view of the same comparison: node by node, children and attributes."""
    theirs = tf.train.Checkpoint(model=rich_module(tf)).write(str(tmp_path / "tf"))
    ours = sm.train.Checkpoint(model=rich_module(sm)).write(tmp_path / "sm")
    parse = trackable_object_graph_pb2.TrackableObjectGraph.FromString
    mine, reference = parse(object_graph(ours)), parse(object_graph(theirs))
    assert len(mine.nodes) == len(reference.nodes)
    for node_id, (a, b) in enumerate(zip(mine.nodes, reference.nodes)):
        assert str(a) == str(b), node_id


def test_tensorflow_reads_our_checkpoints(tf, tmp_path):
    for shard_limit in (None, 64):
        options = sm.train.CheckpointOptions(max_shard_bytes=shard_limit)
        checkpoint = sm.train.Checkpoint(model=rich_module(sm, 2.0))
        prefix = checkpoint.write(tmp_path / f"ck{shard_limit}", options=options)
        reader, ours = tf.train.load_checkpoint(prefix), sm.train.load_checkpoint(prefix)
        assert reader.get_variable_to_shape_map() == ours.get_variable_to_shape_map()
        assert {k: v.name for k, v in reader.get_variable_to_dtype_map().items()} == \
            {k: v.name for k, v in ours.get_variable_to_dtype_map().items()}
        for key in ours.get_variable_to_shape_map():
            assert_same_values([ours.get_tensor(key)], [reader.get_tensor(key)])
        assert tf.train.list_variables(prefix) == sm.train.list_variables(prefix)
        if shard_limit:
            assert BundleReader(prefix).header.num_shards > 1
        model = rich_module(tf, 0.0)
        tf.train.Checkpoint(model=model).read(prefix).assert_consumed()
        assert_same_values(values(model), values(rich_module(sm, 2.0)))


def test_we_read_tensorflows_checkpoints(tf, tmp_path):
    options = tf.train.CheckpointOptions(experimental_sharding_callback=(
        tf.train.experimental.MaxShardSizePolicy(max_shard_size=100)))
    for name, opts in (("plain", None), ("sharded", options)):
        prefix = tf.train.Checkpoint(model=rich_module(tf, 2.0)).write(str(tmp_path / name),
                                                                        options=opts)
        model = rich_module(sm, 0.0)
        sm.train.Checkpoint(model=model).read(prefix).assert_consumed()
        assert_same_values(values(model), values(rich_module(tf, 2.0)))
        assert tf.train.list_variables(prefix) == sm.train.list_variables(prefix)


def test_manager_behaves_as_tensorflows(tf, tmp_path):
    runs = {}
    for lib in (tf, sm):
        directory = tmp_path / lib.__name__
        checkpoint = lib.train.Checkpoint(v=lib.Variable(1.0))
        manager = lib.train.CheckpointManager(checkpoint, str(directory), max_to_keep=2)
        saved = [manager.save() for _ in range(3)] + [manager.save(checkpoint_number=10)]
        again = lib.train.CheckpointManager(lib.train.Checkpoint(v=lib.Variable(1.0)),
                                            str(directory), max_to_keep=3)
        runs[lib.__name__] = [[os.path.relpath(p, directory) for p in paths] for paths in (
            saved, manager.checkpoints, again.checkpoints, [again.latest_checkpoint],
            [again.save()], again.checkpoints)] + [sorted(os.listdir(directory))]
        state = (directory / "checkpoint").read_text("utf-8").splitlines()
        runs[lib.__name__].append([line.split(":")[0] if "timestamp" in line else line
                                   for line in state])
    assert runs["savedmodel"] == runs["tensorflow"]


def test_state_files_are_read_both_ways(tf, tmp_path):
    for writer, reader in ((sm, tf), (tf, sm)):
        directory = tmp_path / f"{writer.__name__}-δ"
        checkpoint = writer.train.Checkpoint(v=writer.Variable(1.0))
        name = NEEDS_ESCAPING.replace("\\", "")
        manager = writer.train.CheckpointManager(checkpoint, str(directory), max_to_keep=2,
                                                 checkpoint_name=name)
        saved = [manager.save() for _ in range(3)]
        assert reader.train.latest_checkpoint(str(directory)) == saved[-1]
        state = reader.train.get_checkpoint_state(str(directory))
        assert state.model_checkpoint_path == saved[-1]
        assert list(state.all_model_checkpoint_paths) == saved[1:]
        assert len(state.all_model_checkpoint_timestamps) == 2
        assert state.last_preserved_timestamp > 0
        single = writer.train.Checkpoint(v=writer.Variable(1.0)).save(
            str(directory / "single" / "ck"))
        assert reader.train.latest_checkpoint(str(directory / "single")) == single
    assert sm.train.latest_checkpoint(tmp_path / "missing") is None


def _partial(lib):
    model = lib.Module(name="model")
    model.zeta = lib.Variable(0.0)
    return model


def _extra(lib):
    model = rich_module(lib, 0.0)
    model.extra = lib.Variable(9.0)
    return model


def _wrong_kinds(lib):
    model = lib.Module(name="model")
    model.zeta = lib.Module()
    model.layers = lib.Variable(0.0)
    return model


def _unrelated(lib):
    model = lib.Module(name="model")
    model.other = lib.Variable(0.0)
    return model


STATUS_CASES = {
    "full": lambda lib: {"model": rich_module(lib, 0.0)},
    "partial": lambda lib: {"model": _partial(lib)},
    "extra": lambda lib: {"model": _extra(lib)},
    "wrong-kinds": lambda lib: {"model": _wrong_kinds(lib)},
    "unrelated": lambda lib: {"model": _unrelated(lib)},
    "other-name": lambda lib: {"other": lib.Variable(0.0)},
    "empty": lambda lib: {},
}


@pytest.mark.parametrize("case", STATUS_CASES)
@pytest.mark.parametrize("writer", ["write", "save"])
@pytest.mark.parametrize("reader", ["read", "restore"])
def test_status_assertions_pass_and_fail_as_tensorflows(tf, tmp_path, case, writer, reader):
    prefix = getattr(tf.train.Checkpoint(model=rich_module(tf)), writer)(str(tmp_path / "ck"))
    outcomes = {}
    for lib in (tf, sm):
        status = getattr(lib.train.Checkpoint(**STATUS_CASES[case](lib)), reader)(prefix)
        outcomes[lib.__name__] = [outcome(getattr(status, name)) for name in ASSERTIONS]
        status.expect_partial()
    assert outcomes["savedmodel"] == outcomes["tensorflow"]


def test_deferred_restoration_matches_tensorflows(tf, tmp_path):
    prefix = tf.train.Checkpoint(model=rich_module(tf, 3.0)).save(str(tmp_path / "ck"))
    results = {}
    for lib in (tf, sm):
        model = lib.Module(name="model")
        checkpoint = lib.train.Checkpoint(model=model)
        status = checkpoint.restore(prefix)
        before = outcome(status.assert_consumed)
        model.layers = [dense(lib, 3, 3, scale=0.0)]
        model.layers.append([])
        model.layers[1].append(lib.Variable(0))
        model.table = {"sub": dense(lib, 1, 1, scale=0.0)}
        model.table["a.y"] = lib.Variable([b"", b""])
        model.pair = Pair(lib.Variable(0, dtype="int64"), lib.Variable(False))
        model.zeta = lib.Variable(0.0)
        model.dense = dense(lib, 2, 3, scale=0.0)
        results[lib.__name__] = (before, values(model), int(checkpoint.save_counter.numpy()),
                                 outcome(status.assert_existing_objects_matched))
        status.expect_partial()
    ours, theirs = results["savedmodel"], results["tensorflow"]
    assert (ours[0], ours[2], ours[3]) == (theirs[0], theirs[2], theirs[3])
    assert_same_values(ours[1], theirs[1])


@pytest.mark.parametrize("mutate", [
    lambda items, lib: items.__setitem__(0, lib.Variable(2.0)),
    lambda items, lib: items.__setitem__(1, items[1]),
    lambda items, lib: items.pop(),
    lambda items, lib: items.insert(0, 9),
    lambda items, lib: items.insert(3, lib.Variable(3.0)),
    lambda items, lib: items.sort(),
    lambda items, lib: items.remove(2),
    lambda items, lib: items.__delitem__(slice(2, None)),
    lambda items, lib: items.clear(),
    lambda items, lib: items.append([lib.Variable(5.0)]),
], ids=["set-int-to-var", "set-var", "pop", "insert-int", "insert-var", "sort", "remove",
        "del-slice", "clear", "append"])
def test_list_mutations_block_saving_as_in_tensorflow(tf, tmp_path, mutate):
    failed = {}
    for lib in (tf, sm):
        model = lib.Module()
        model.items = [1, lib.Variable(1.0), 2]
        mutate(model.items, lib)
        try:
            lib.train.Checkpoint(model=model).write(str(tmp_path / lib.__name__))
            failed[lib.__name__] = None
        except ValueError:
            failed[lib.__name__] = "ValueError"
    assert failed["savedmodel"] == failed["tensorflow"]


def test_invalid_checkpoint_contents_raise_value_errors_in_both(tf, tmp_path):
    for lib in (tf, sm):
        with pytest.raises(ValueError, match="trackable"):
            lib.train.Checkpoint(number=5)
        model = lib.Module()
        model.table = {1: lib.Variable(1.0)}
        with pytest.raises(ValueError, match="key"):
            lib.train.Checkpoint(model=model).write(str(tmp_path / lib.__name__))
        model.table = {1: 2, "x": lib.Variable(1.0)}
        lib.train.Checkpoint(model=model).write(str(tmp_path / lib.__name__))


def test_reference_checkpoints_list_and_load_as_in_tensorflow(tf):
    for prefix in (CHECKPOINTS / "single" / "ckpt", CHECKPOINTS / "sharded" / "ckpt",
                   CHECKPOINTS / "managed"):
        assert sm.train.list_variables(prefix) == tf.train.list_variables(str(prefix))
        for key, _ in tf.train.list_variables(str(prefix)):
            theirs = tf.train.load_variable(str(prefix), key)
            ours = sm.train.load_variable(prefix, key)
            assert type(ours) is type(theirs)
            if key != OBJECT_GRAPH_KEY:
                assert_same_values([ours], [theirs])


MANAGED_SAVER = """
import sys
import numpy as np
import savedmodel as sm
model = sm.Module()
model.blocks = [sm.Variable(np.full((8 << 20,), float(i), np.float32)) for i in range(12)]
manager = sm.train.CheckpointManager(sm.train.Checkpoint(model=model), sys.argv[1], max_to_keep=3)
manager.save()
print("first", flush=True)
for block in model.blocks:
    block.assign_add(np.ones((8 << 20,), np.float32))
manager.save()
print("second", flush=True)
"""


def test_sigkill_during_a_save_keeps_the_previous_checkpoint_and_state(tmp_path):
    """Killed while writing its second checkpoint, a process leaves the first one complete and
    the state file naming it."""
    process = subprocess.Popen([sys.executable, "-c", MANAGED_SAVER, str(tmp_path)],
                               stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "first"
        first = sm.train.latest_checkpoint(tmp_path)
        while not any(".tmp" in p.name and "ckpt-2" in p.name for p in tmp_path.iterdir()):
            assert process.poll() is None, "the second save finished before it could be interrupted"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert sm.train.latest_checkpoint(tmp_path) == first
    restored = sm.Module()
    restored.blocks = [sm.Variable(np.zeros((8 << 20,), np.float32)) for _ in range(12)]
    sm.train.Checkpoint(model=restored).restore(first).assert_existing_objects_matched()
    assert [float(b.numpy()[-1]) for b in restored.blocks] == [float(i) for i in range(12)]
