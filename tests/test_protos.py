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


TENSORFLOW_PACKAGES = ["tensorflow.core.framework", "tensorflow.core.protobuf", "tensorflow.core.example"]
SERVING_PACKAGES = ["tensorflow_serving.apis", "tensorflow_serving.config"]
SERVING_PROTO_NAMES = [n for n in PROTO_NAMES if importlib.import_module(
    f"savedmodel.protos.{n}_pb2").DESCRIPTOR.package == "savedmodel.serving"]
CORE_PROTO_NAMES = [n for n in PROTO_NAMES if n not in SERVING_PROTO_NAMES]


def _tensorflow_file(packages: list[str], name: str):
    """The file descriptor of TensorFlow's (or TF Serving's) `name`.proto. A file that only
    re-exports another (TensorFlow's error_codes.proto, which moved to TSL) stands for the file
    it imports publicly."""
    for package in packages:
        try:
            descriptor = importlib.import_module(f"{package}.{name}_pb2").DESCRIPTOR
        except ImportError:
            continue
        while not (descriptor.message_types_by_name or descriptor.enum_types_by_name
                   or descriptor.services_by_name) and len(descriptor.public_dependencies) == 1:
            descriptor = descriptor.public_dependencies[0]
        return descriptor
    raise AssertionError(f"no {name}.proto in {packages}")


def _normalized_descriptor(file_descriptor) -> str:
    """The file descriptor as text, with package, file paths and file options taken out."""
    proto = descriptor_pb2.FileDescriptorProto()
    file_descriptor.CopyToProto(proto)
    proto.ClearField("options")
    proto.ClearField("package")
    text = str(proto).replace(".savedmodel.", ".").replace(".tensorflow.", ".")
    return re.sub(r'"(savedmodel/protos|tensorflow/core/(framework|protobuf|example)'
                  r'|tensorflow_serving/(apis|config)|xla/tsl/protobuf)/', '"', text)


def _ours(name: str):
    return importlib.import_module(f"savedmodel.protos.{name}_pb2").DESCRIPTOR


@pytest.mark.parametrize("name", CORE_PROTO_NAMES)
def test_descriptors_equal_tensorflows(tf, name):
    theirs = _tensorflow_file(TENSORFLOW_PACKAGES, name)
    assert _normalized_descriptor(_ours(name)) == _normalized_descriptor(theirs)


@pytest.mark.parametrize("name", SERVING_PROTO_NAMES)
def test_serving_descriptors_equal_tensorflow_servings(tf_serving, name):
    """Every message, field (name, number, type, label, options), enum and service of TF
    Serving's protos, so its clients and ours read each other's bytes."""
    theirs = _tensorflow_file(SERVING_PACKAGES, name)
    assert _normalized_descriptor(_ours(name)) == _normalized_descriptor(theirs)


def test_serving_protos_cover_the_services():
    assert SERVING_PROTO_NAMES
    services = {s.name: [m.name for m in s.methods] for n in SERVING_PROTO_NAMES
                for s in _ours(n).services_by_name.values()}
    assert services == {"PredictionService": ["Classify", "Regress", "Predict", "MultiInference",
                                              "GetModelMetadata"],
                        "ModelService": ["GetModelStatus", "HandleReloadConfigRequest"]}


@pytest.mark.parametrize("model", SAVEDMODELS, ids=lambda p: p.name)
def test_tensorflow_reads_our_serialization(tf, model):
    from tensorflow.core.protobuf import saved_model_pb2 as tf_saved_model_pb2

    ours = read_message(model / "saved_model.pb", saved_model_pb2.SavedModel)
    theirs = tf_saved_model_pb2.SavedModel.FromString(ours.SerializeToString(deterministic=True))
    assert str(theirs) == str(ours)


def test_the_dtype_table_names_types_protos_enum_values():
    """runtime.dtypes writes DataType's values out (so naming a dtype imports no protobuf):
    they must be types.proto's, every one."""
    from savedmodel.protos import types_pb2
    from savedmodel.runtime import dtypes

    assert dtypes.ENUM_VALUES == dict(types_pb2.DataType.items())
    assert all(dtypes.enum_name(value) == name for name, value in types_pb2.DataType.items())
    assert dtypes.enum_name(99) is None
