"""Our .proto schema against TensorFlow's: generated code in sync, descriptors identical, and
every protobuf file of the reference corpus parsed with no unknown fields and re-serialized to
the identical bytes."""
from __future__ import annotations

import filecmp
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2, text_format

from conftest import CHECKPOINT_PREFIXES, GRAPHS, SAVEDMODELS
from savedmodel.protos import fingerprint_pb2, graph_pb2, saved_model_pb2, trackable_object_graph_pb2
from savedmodel.runtime.protofiles import read_message, unknown_field_paths
from savedmodel.runtime.tensor_bundle import OBJECT_GRAPH_KEY, BundleReader

ROOT = Path(__file__).resolve().parent.parent
PROTO_NAMES = sorted(p.stem for p in (ROOT / "protos").glob("*.proto"))


def test_committed_modules_equal_generated(tmp_path):
    # A subprocess: protoc's C++ code crashes when TensorFlow is loaded in the same process.
    subprocess.run([sys.executable, str(ROOT / "tools" / "gen_protos.py"), str(tmp_path)],
                   check=True, capture_output=True)
    written = sorted(tmp_path.iterdir())
    assert {p.name for p in written} == {f"{n}_pb2{ext}" for n in PROTO_NAMES for ext in (".py", ".pyi")}
    stale = [p.name for p in written if not filecmp.cmp(p, ROOT / "protos" / p.name, shallow=False)]
    assert not stale, f"run `python tools/gen_protos.py`: committed modules differ: {stale}"


def _assert_exact(message, data: bytes, where: str) -> None:
    assert unknown_field_paths(message) == [], where
    assert message.SerializeToString(deterministic=True) == data, where


@pytest.mark.parametrize("model", SAVEDMODELS, ids=lambda p: p.name)
def test_saved_model_and_fingerprint_parse_exactly(model):
    for name, message_type in [("saved_model.pb", saved_model_pb2.SavedModel),
                               ("fingerprint.pb", fingerprint_pb2.FingerprintDef)]:
        path = model / name
        _assert_exact(read_message(path, message_type), path.read_bytes(), str(path))


OBJECT_GRAPH_SOURCES = CHECKPOINT_PREFIXES + [m / "variables" / "variables" for m in SAVEDMODELS]


@pytest.mark.parametrize("prefix", OBJECT_GRAPH_SOURCES, ids=lambda p: "/".join(p.parts[-3:]))
def test_checkpoint_object_graph_parses_exactly(prefix):
    data = BundleReader(prefix).read(OBJECT_GRAPH_KEY)[()]
    graph = trackable_object_graph_pb2.TrackableObjectGraph.FromString(data)
    assert len(graph.nodes) > 1
    _assert_exact(graph, data, str(prefix))


@pytest.mark.parametrize("path", GRAPHS, ids=lambda p: p.stem)
def test_graph_text_round_trip(path):
    text = path.read_text()
    graph = text_format.Parse(text, graph_pb2.GraphDef())
    assert graph.node
    assert str(graph) == text


def test_unknown_fields_are_reported_with_their_path():
    model = read_message(SAVEDMODELS[0] / "saved_model.pb", saved_model_pb2.SavedModel)
    model.meta_graphs[0].signature_def["serving_default"].MergeFromString(b"\xa0\x06\x01")
    assert unknown_field_paths(model) == [
        "$.meta_graphs[0].signature_def['serving_default']: unknown field number(s) [100]"]


def _tensorflow_module(tf, name: str):
    for folder in ("framework", "protobuf"):
        try:
            return importlib.import_module(f"tensorflow.core.{folder}.{name}_pb2")
        except ImportError:
            continue
    raise AssertionError(f"TensorFlow has no {name}.proto")


def _normalized_descriptor(module) -> str:
    """The file descriptor as text, with package, file paths and file options taken out."""
    proto = descriptor_pb2.FileDescriptorProto()
    module.DESCRIPTOR.CopyToProto(proto)
    proto.ClearField("options")
    proto.ClearField("package")
    text = str(proto).replace(".savedmodel.", ".").replace(".tensorflow.", ".")
    return re.sub(r'"(savedmodel/protos|tensorflow/core/(framework|protobuf))/', '"', text)


@pytest.mark.parametrize("name", PROTO_NAMES)
def test_descriptors_equal_tensorflows(tf, name):
    ours = importlib.import_module(f"savedmodel.protos.{name}_pb2")
    assert _normalized_descriptor(ours) == _normalized_descriptor(_tensorflow_module(tf, name))


@pytest.mark.parametrize("model", SAVEDMODELS, ids=lambda p: p.name)
def test_tensorflow_reads_our_serialization(tf, model):
    from tensorflow.core.protobuf import saved_model_pb2 as tf_saved_model_pb2

    ours = read_message(model / "saved_model.pb", saved_model_pb2.SavedModel)
    theirs = tf_saved_model_pb2.SavedModel.FromString(ours.SerializeToString(deterministic=True))
    assert str(theirs) == str(ours)
