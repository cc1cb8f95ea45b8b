"""Fuzzing the readers, loader and planner with damaged copies of committed files.

Hypothesis mutates the bytes of a SavedModel's `saved_model.pb`, of its top-level GraphDef,
of checkpoint `.index` files and of data shards (bit flips, truncations, splices, a varint
replaced by a huge one), then loads the result (`savedmodel.runtime.load` and one signature
call, or `BundleReader` reading every tensor) in a child process with bounded memory and time
(tests/bounded.py). The only acceptable outcomes are success and a SavedModelError: any other
exception, a hang or running out of the memory bound is a defect.

Derandomized, so CI runs the same examples every time (100 per file kind; conftest.fuzz_settings). A longer
campaign: `SAVEDMODEL_FUZZ_EXAMPLES=5000 bash tools/run-tests tests/test_fuzz_formats.py`, and
`SAVEDMODEL_FUZZ_SEED=<n>` for other examples than CI's.
"""
from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import numpy as np
import pytest
from google.protobuf.message import DecodeError
from hypothesis import assume, given
from hypothesis import strategies as st

from bounded import bounded_call
from conftest import CHECKPOINTS, SAVEDMODELS, fuzz_settings
from savedmodel.protos import saved_model_pb2
from savedmodel.runtime import load
from savedmodel.runtime.tensor_bundle import BundleReader

SECONDS = 20
"""Time bound of one example: loading and one call take well under a second."""

SEEDS = next(p for p in SAVEDMODELS if p.name == "seeds")
CALLED = ("simple_relu", "dense", "serving_default")
"""Signatures without loops, so that a damaged model cannot run an endless (valid) While loop."""

FUZZ = fuzz_settings(100)

_positions = st.floats(min_value=0, max_value=1, allow_nan=False)
mutations = st.lists(st.one_of(
    st.tuples(st.just("flip"), _positions, st.integers(0, 7)),
    st.tuples(st.just("truncate"), _positions),
    st.tuples(st.just("splice"), _positions, _positions, st.integers(1, 64)),
    st.tuples(st.just("varint"), _positions, st.integers(7, 63)),
), min_size=1, max_size=4)


def mutate(data: bytes, steps) -> bytes:
    """`data` after each mutation in turn; positions are fractions of the current length."""
    out = bytearray(data)
    for step in steps:
        at = min(int(step[1] * len(out)), max(len(out) - 1, 0))
        if not out:
            break
        if step[0] == "flip":
            out[at] ^= 1 << step[2]
        elif step[0] == "truncate":
            del out[at:]
        elif step[0] == "splice":
            source = int(step[2] * len(out))
            out[at:at] = out[source:source + step[3]]
        else:  # a byte becomes a varint of 2**bits - 1: an inflated length or count
            out[at:at + 1] = _varint((1 << step[2]) - 1)
    return bytes(out)


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(out + bytes([value]))


def _check(fn, *args) -> None:
    outcome, message = bounded_call(fn, *args, seconds=SECONDS)
    assert outcome in ("returned", "SavedModelError"), f"{outcome}: {message}"


def _load_and_call(export_dir: Path) -> None:
    model = load(export_dir)
    name = next((n for n in CALLED if n in model.signatures), None)
    if name is not None:
        signature = model.signatures[name]
        signature(**{key: _zeros(spec) for key, spec in signature.inputs.items()})


def _zeros(spec):
    shape = () if spec.shape is None else tuple(1 if d is None else min(d, 16) for d in spec.shape)
    dtype = {"DT_STRING": object, "DT_INT32": np.int32, "DT_INT64": np.int64}.get(spec.dtype, np.float32)
    return np.zeros(shape, dtype) if dtype is not object else np.full(shape, b"", object)


def _read_bundle(prefix: Path) -> None:
    reader = BundleReader(prefix)
    for key in reader.keys():
        reader.read(key)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """One copy of each fuzzed fixture, whose files each example overwrites."""
    root = tmp_path_factory.mktemp("fuzz")
    shutil.copytree(SEEDS, root / "model")
    shutil.copytree(CHECKPOINTS / "single", root / "single")
    return root


@contextlib.contextmanager
def _replaced(path: Path, data: bytes):
    """`path` holds `data` inside the block, and its own bytes again after it (each example
    damages one file of the shared copy)."""
    original = path.read_bytes()
    path.write_bytes(data)
    try:
        yield
    finally:
        path.write_bytes(original)


def _seeds_file(name: str) -> bytes:
    return (SEEDS / name).read_bytes()


@FUZZ
@given(steps=mutations)
def test_damaged_saved_model_pb(scratch, steps):
    with _replaced(scratch / "model" / "saved_model.pb", mutate(_seeds_file("saved_model.pb"), steps)):
        _check(_load_and_call, scratch / "model")


def _parts(meta_graph) -> list:
    """The sub-messages of a MetaGraphDef whose damage the planner and loader see (damage to
    the file's bytes mostly breaks protobuf's own framing). Maps are listed in key order and
    messages serialized deterministically: protobuf's own map order differs from process to
    process, and so would the derandomized examples."""
    return (list(meta_graph.graph_def.node) + list(meta_graph.graph_def.library.function)
            + [meta_graph.signature_def[key] for key in sorted(meta_graph.signature_def)]
            + [meta_graph.object_graph_def, meta_graph.meta_info_def.stripped_op_list])


PART_COUNT = len(_parts(saved_model_pb2.SavedModel.FromString(
    (SEEDS / "saved_model.pb").read_bytes()).meta_graphs[0]))


@FUZZ
@given(steps=mutations, part=st.integers(0, PART_COUNT - 1))
def test_damaged_part_of_saved_model_pb(scratch, steps, part):
    """One node, function, signature, the object graph or the op list, damaged; what still
    parses is loaded and run (what does not is the whole file failing to parse, as above)."""
    model = saved_model_pb2.SavedModel.FromString(_seeds_file("saved_model.pb"))
    message = _parts(model.meta_graphs[0])[part]
    damaged = mutate(message.SerializeToString(deterministic=True), steps)
    message.Clear()
    try:
        message.MergeFromString(damaged)
    except DecodeError:
        assume(False)
    with _replaced(scratch / "model" / "saved_model.pb", model.SerializeToString(deterministic=True)):
        _check(_load_and_call, scratch / "model")


@FUZZ
@given(steps=mutations)
def test_damaged_graph_def(scratch, steps):
    """The model's top-level GraphDef, damaged as a GraphDef file would be, in place of its
    graph (bytes that do not parse as a GraphDef make the whole file fail to parse)."""
    model = saved_model_pb2.SavedModel.FromString(_seeds_file("saved_model.pb"))
    meta_graph = model.meta_graphs[0]
    graph = mutate(meta_graph.graph_def.SerializeToString(deterministic=True), steps)
    meta_graph.ClearField("graph_def")
    damaged = _field(2, meta_graph.SerializeToString(deterministic=True) + _field(2, graph))  # MetaGraphDef.graph_def
    header = saved_model_pb2.SavedModel(saved_model_schema_version=model.saved_model_schema_version)
    with _replaced(scratch / "model" / "saved_model.pb", header.SerializeToString(deterministic=True) + damaged):
        _check(_load_and_call, scratch / "model")


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (both SavedModel.meta_graphs and MetaGraphDef.graph_def
    are field 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


@FUZZ
@given(steps=mutations, which=st.sampled_from(["seeds", "single"]))
def test_damaged_variables_index(scratch, steps, which):
    prefix = _prefix(scratch, which)
    with _replaced(Path(f"{prefix}.index"), mutate(_original(which, ".index"), steps)):
        _check(_read_bundle, prefix)
        if which == "seeds":
            _check(_load_and_call, scratch / "model")


@FUZZ
@given(steps=mutations)
def test_damaged_data_shard(scratch, steps):
    shard = ".data-00000-of-00001"
    prefix = _prefix(scratch, "seeds")
    with _replaced(Path(f"{prefix}{shard}"), mutate(_original("seeds", shard), steps)):
        _check(_read_bundle, prefix)
        _check(_load_and_call, scratch / "model")


def _prefix(scratch: Path, which: str) -> Path:
    return scratch / "model" / "variables" / "variables" if which == "seeds" else scratch / "single" / "ckpt"


def _original(which: str, suffix: str) -> bytes:
    prefix = SEEDS / "variables" / "variables" if which == "seeds" else CHECKPOINTS / "single" / "ckpt"
    return Path(f"{prefix}{suffix}").read_bytes()


def test_mutations_damage_what_they_say():
    assert mutate(b"\x00\x00", [("flip", 0.5, 3)]) == b"\x00\x08"
    assert mutate(b"abcdef", [("truncate", 0.5)]) == b"abc"
    assert mutate(b"abcdef", [("splice", 0.0, 0.5, 2)]) == b"deabcdef"
    assert mutate(b"abc", [("varint", 0.4, 14)]) == b"a\xff\x7fc"
