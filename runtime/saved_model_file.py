"""Reading a SavedModel directory's `saved_model.pb` and describing its signatures.

This is the part of loading that needs no execution: the command line's `show` and the
runtime's loader both start here, so errors about missing or damaged files read the same.
"""
from __future__ import annotations

from pathlib import Path

from google.protobuf import text_format

from savedmodel.protos import meta_graph_pb2, saved_model_pb2
from savedmodel.runtime.errors import FileFormatError
from savedmodel.runtime.graph_file import as_saved_model, is_graph_file
from savedmodel.runtime.limits import DEFAULT, Limits
from savedmodel.runtime.protofiles import read_file, read_message
from savedmodel.runtime.specs import SignatureInfo, TensorSpecInfo

SAVED_MODEL_PB = "saved_model.pb"
SAVED_MODEL_PBTXT = "saved_model.pbtxt"


def read_saved_model(export_dir: str | Path, limits: Limits = DEFAULT) -> saved_model_pb2.SavedModel:
    """The SavedModel message of `export_dir` (binary `saved_model.pb`, else `.pbtxt`).

    Whatever stands at either name is read (and must be a regular file within `limits`), so
    that a FIFO or device there is an error rather than "not a SavedModel directory". A GraphDef
    file (`.pb`, `.pbtxt`) reads as a SavedModel of its one MetaGraphDef tagged `serve`, with
    the `serving_default` signature runtime.graph_file gives it."""
    export_dir = Path(export_dir)
    if is_graph_file(export_dir):
        return as_saved_model(export_dir, limits)
    if not export_dir.is_dir():
        raise FileFormatError(f"{export_dir}: not a directory")
    binary, text = export_dir / SAVED_MODEL_PB, export_dir / SAVED_MODEL_PBTXT
    if binary.exists():
        return read_message(binary, saved_model_pb2.SavedModel, limits)
    if text.exists():
        try:
            return text_format.Parse(read_file(text, limits).decode("utf-8"), saved_model_pb2.SavedModel())
        except (text_format.ParseError, UnicodeDecodeError) as err:
            raise FileFormatError(f"{text}: not a valid SavedModel text file ({err})") from None
        except RecursionError:  # the text parser recurses once per nested message
            raise FileFormatError(f"{text}: not a valid SavedModel text file (messages nested "
                                  "too deeply)") from None
    raise FileFormatError(f"{export_dir}: no {SAVED_MODEL_PB} or {SAVED_MODEL_PBTXT}; "
                          "not a SavedModel directory")


def tag_set(meta_graph: meta_graph_pb2.MetaGraphDef) -> frozenset[str]:
    return frozenset(meta_graph.meta_info_def.tags)


def find_meta_graph(model: saved_model_pb2.SavedModel, tags: set[str] | frozenset[str],
                    where: str) -> meta_graph_pb2.MetaGraphDef:
    """The MetaGraphDef whose tag-set is exactly `tags`."""
    for meta_graph in model.meta_graphs:
        if tag_set(meta_graph) == frozenset(tags):
            return meta_graph
    known = "; ".join(format_tags(tag_set(m)) for m in model.meta_graphs) or "none"
    raise FileFormatError(f"{where}: no MetaGraphDef with tag-set '{format_tags(tags)}' "
                          f"(tag-sets present: {known})")


def format_tags(tags) -> str:
    return ",".join(sorted(tags))


def signatures(meta_graph: meta_graph_pb2.MetaGraphDef) -> list[SignatureInfo]:
    """The SignatureDefs of a MetaGraphDef, sorted by key, inputs and outputs sorted by key."""
    return [SignatureInfo(key, sig.method_name,
                          tuple(TensorSpecInfo.from_proto(k, sig.inputs[k]) for k in sorted(sig.inputs)),
                          tuple(TensorSpecInfo.from_proto(k, sig.outputs[k]) for k in sorted(sig.outputs)))
            for key, sig in sorted(meta_graph.signature_def.items())]


def needed_nodes(by_name: dict, roots: list[str]) -> set[str]:
    """The names of `roots` and of every node they depend on (data or control inputs) in a
    GraphDef's nodes by name; names the graph lacks are skipped."""
    needed: set[str] = set()
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name in needed or name not in by_name:
            continue
        needed.add(name)
        stack += [text.lstrip("^").split(":")[0] for text in by_name[name].input]
    return needed


def _tensor_names(info: meta_graph_pb2.TensorInfo) -> list[str]:
    """The tensors a signature input or output stands for (a composite one's components)."""
    coo = info.coo_sparse
    return [name for name in (info.name, coo.indices_tensor_name, coo.values_tensor_name,
                              coo.dense_shape_tensor_name,
                              *(c.name for c in info.composite_tensor.components)) if name]
