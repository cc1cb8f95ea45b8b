"""A SavedModel's `fingerprint.pb`, computed as TensorFlow 2.21 computes it.

TensorFlow writes `fingerprint.pb` right after `saved_model.pb` and `variables/` (C++
`CreateFingerprintDef`, tensorflow/cc/saved_model/fingerprinting.cc). Every hash is FarmHash's
Fingerprint64 (`farmhash.fingerprint64`) of protobuf bytes as C++ serializes them with
deterministic serialization on (`deterministic_proto.cpp_deterministic_bytes`: Python's own
`deterministic=True` orders map entries differently), and several are folded together with
FingerprintCat64:

- `saved_model_checksum`: the whole SavedModel message parsed from `saved_model.pb` and
  re-serialized. Not the file's bytes: Python (TensorFlow's saver and ours) writes map entries
  in another order than C++ re-serializes them.
- `graph_def_program_hash`: `meta_graphs[0].graph_def` "regularized": in (Stateful)PartitionedCall
  nodes the numeric suffix of the called function's name is stripped (`__inference_f_123` ->
  `__inference_f_`) and the `config_proto` attr's bytes emptied; string `Const` nodes lose their
  value (the attr stays, as an empty AttrValue); the function library and the versions are
  cleared but stay present as empty messages.
- `signature_def_hash`: over signatures sorted by key, fold in Fingerprint64(key), then
  Fingerprint64(SignatureDef).
- `saved_object_graph_hash`: over `object_graph_def.concrete_functions` sorted by the integer
  after the name's last `_` (every name must end in one, or TensorFlow refuses to save), fold in
  Fingerprint64(name without that integer), then Fingerprint64(SavedConcreteFunction). The
  object graph's nodes are not hashed (TensorFlow leaves that as a TODO), so this is 0 without
  concrete functions.
- `checkpoint_hash`: Fingerprint64 of `variables/variables.index`'s bytes, 0 if it cannot be read.
- `version.producer`: 4 in TensorFlow 2.21 (older public sources say 1); no `min_consumer`.
- `uuid`: a random 128-bit number in decimal, zero-padded to 20 digits; nobody can reproduce it
  (TensorFlow draws a new one each save), so tests compare only its form.

Every field but `uuid` is reproduced exactly. Where TensorFlow's result cannot be matched we
raise instead: two concrete functions with the same numeric suffix (TensorFlow keeps whichever
its hash map yields first), no `saved_model.pb` (TensorFlow then writes a "reduced" fingerprint
of uuid and producer 5 only, or reads a chunked `saved_model.cpb`, which we do not write). Like
TensorFlow we also refuse a SavedModel without a MetaGraphDef or a function name without uid.

TensorFlow's loader does not verify any of this: `tf.saved_model.load` reads `fingerprint.pb` only
to report metrics (a missing or broken file is logged and loading goes on), and
`is_tf2_saved_model` takes a non-zero `saved_object_graph_hash` as the mark of a TF2 SavedModel.
"""
from __future__ import annotations

import re
import secrets
from pathlib import Path

from savedmodel.protos import fingerprint_pb2, graph_pb2, saved_model_pb2, types_pb2
from savedmodel.runtime.atomic_files import AtomicFiles
from savedmodel.runtime.deterministic_proto import cpp_deterministic_bytes
from savedmodel.runtime.errors import FileFormatError
from savedmodel.runtime.farmhash import fingerprint64, fingerprint_cat64
from savedmodel.runtime.protofiles import read_message

FINGERPRINT_PB = "fingerprint.pb"
FINGERPRINT_PRODUCER = 4
"""The `version.producer` TensorFlow 2.21 stamps into fingerprint.pb."""
_CALL_OPS = ("PartitionedCall", "StatefulPartitionedCall")
_SUFFIX_UID = re.compile(r"[ \t\n\v\f\r]*([+-]?[0-9]+)[ \t\n\v\f\r]*")
"""A function name's last `_`-separated part as TensorFlow parses it (absl::SimpleAtoi)."""
_INT64 = range(-(1 << 63), 1 << 63)


def fingerprint_def(export_dir: str | Path, model: saved_model_pb2.SavedModel | None = None
                    ) -> fingerprint_pb2.FingerprintDef:
    """The FingerprintDef TensorFlow would write for the SavedModel in `export_dir`.

    Reads `variables/variables.index`, and `saved_model.pb` unless the writer passes the
    `model` it has just written there; the uuid is drawn afresh."""
    export_dir = Path(export_dir)
    pb_path = export_dir / "saved_model.pb"
    if model is None:
        model = read_message(pb_path, saved_model_pb2.SavedModel)
    if not model.meta_graphs:
        raise FileFormatError(f"{pb_path}: the SavedModel has no MetaGraphDef to fingerprint")
    meta_graph = model.meta_graphs[0]
    result = fingerprint_pb2.FingerprintDef(
        saved_model_checksum=_hash(model),
        graph_def_program_hash=_hash(_regularized_graph_def(meta_graph.graph_def)),
        signature_def_hash=_signature_def_hash(meta_graph.signature_def),
        saved_object_graph_hash=_object_graph_hash(meta_graph.object_graph_def, pb_path),
        checkpoint_hash=_checkpoint_hash(export_dir),
        uuid=f"{secrets.randbits(128):020d}")
    result.version.producer = FINGERPRINT_PRODUCER
    return result


def write_fingerprint(export_dir: str | Path, model: saved_model_pb2.SavedModel | None = None
                      ) -> fingerprint_pb2.FingerprintDef:
    """Compute (see `fingerprint_def`) and write `export_dir/fingerprint.pb` atomically;
    returns what was written."""
    fingerprint = fingerprint_def(export_dir, model)
    data = fingerprint.SerializeToString(deterministic=True)
    with AtomicFiles() as files:
        files.write(Path(export_dir) / FINGERPRINT_PB, lambda out: out.write(data))
        files.commit()
    return fingerprint


def _hash(message) -> int:
    return fingerprint64(cpp_deterministic_bytes(message))


def _regularized_graph_def(graph_def: graph_pb2.GraphDef) -> graph_pb2.GraphDef:
    """A copy of `graph_def` without what varies between saves of the same program."""
    graph = graph_pb2.GraphDef()
    graph.CopyFrom(graph_def)
    for node in graph.node:
        if node.op in _CALL_OPS:
            if "f" in node.attr:
                function = node.attr["f"].func
                stripped = _strip_suffix_uid(function.name)
                if stripped is not None:
                    function.name = stripped[0]
            if "config_proto" in node.attr:
                node.attr["config_proto"].s = b""
        if (node.op == "Const" and "value" in node.attr and "dtype" in node.attr
                and node.attr["dtype"].type == types_pb2.DT_STRING):
            node.attr["value"].Clear()
    for field in ("library", "versions"):
        graph.ClearField(field)
        getattr(graph, field).SetInParent()
    return graph


def _strip_suffix_uid(name: str) -> tuple[str, int] | None:
    """(`name` without its numeric suffix, the suffix), or None when it has none.

    As TensorFlow does it: the number is parsed from the last `_`-separated part, then its
    canonical decimal form is removed from the end of the name if it is there."""
    match = _SUFFIX_UID.fullmatch(name.rsplit("_", 1)[-1])
    if match is None or int(match.group(1)) not in _INT64:
        return None
    uid = int(match.group(1))
    return name.removesuffix(str(uid)), uid


def _signature_def_hash(signature_defs) -> int:
    result = 0
    for key in sorted(signature_defs, key=lambda k: k.encode()):
        result = fingerprint_cat64(result, fingerprint64(key.encode()))
        result = fingerprint_cat64(result, _hash(signature_defs[key]))
    return result


def _object_graph_hash(object_graph, pb_path: Path) -> int:
    by_uid: dict[int, str] = {}
    for name in object_graph.concrete_functions:
        stripped = _strip_suffix_uid(name)
        if stripped is None:
            raise FileFormatError(f"{pb_path}: concrete function {name!r} does not end in an "
                                  "integer uid, which TensorFlow's fingerprint requires")
        if stripped[1] in by_uid:
            raise FileFormatError(f"{pb_path}: concrete functions {by_uid[stripped[1]]!r} and "
                                  f"{name!r} share the uid {stripped[1]}")
        by_uid[stripped[1]] = name
    result = 0
    for uid in sorted(by_uid):
        name = by_uid[uid]
        result = fingerprint_cat64(result, fingerprint64(name.removesuffix(str(uid)).encode()))
        result = fingerprint_cat64(result, _hash(object_graph.concrete_functions[name]))
    return result


def _checkpoint_hash(export_dir: Path) -> int:
    try:
        return fingerprint64((export_dir / "variables" / "variables.index").read_bytes())
    except OSError:
        return 0
