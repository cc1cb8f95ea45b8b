"""Descriptions of SavedModels and checkpoints as plain data: what `savedmodel show`, `ops`,
`ckpt` and `diff` print, and what their `--json` output holds.

Each description is a dict of JSON types with a `schema` key naming its version; the schemas
are documented in docs/json-schemas.md and only change with a new version number. Nothing here
runs a graph or needs TensorFlow.
"""
from __future__ import annotations

import difflib
import math
import os
from collections import Counter
from pathlib import Path

import numpy as np

from savedmodel.compare import differences
from savedmodel.protos import function_pb2, meta_graph_pb2, types_pb2
from savedmodel.runtime import dtypes, native, registry, structure
from savedmodel.runtime.errors import FileFormatError
from savedmodel.runtime.file_access import file_system_ops
from savedmodel.runtime.saved_model_file import format_tags, read_saved_model, signatures, tag_set
from savedmodel.runtime.tensor_bundle import OBJECT_GRAPH_KEY, BundleReader, index_path
from savedmodel.runtime.tensor_proto import shape_from_proto
from savedmodel.views.body import Library
from savedmodel.views.values import float_json

SHOW_SCHEMA = "savedmodel.show/1"
OPS_SCHEMA = "savedmodel.ops/1"
CKPT_SCHEMA = "savedmodel.ckpt/1"
DIFF_SCHEMA = "savedmodel.diff/1"
ALWAYS_SUPPORTED = frozenset({"Placeholder"})
"""Ops the runtime handles without a kernel: placeholders are fed."""


def describe_model(export_dir: str | Path, engine: str = "numpy") -> dict:
    """Tag-sets, signatures, saved functions, variables and ops of a SavedModel."""
    export_dir = Path(export_dir)
    model = read_saved_model(export_dir)
    variables = _variables(export_dir)
    where = str(export_dir if export_dir.is_file() else export_dir / "saved_model.pb")
    return {"schema": SHOW_SCHEMA, "path": str(export_dir),
            "meta_graphs": [_meta_graph(m, variables, where, engine) for m in model.meta_graphs]}


def _meta_graph(meta_graph: meta_graph_pb2.MetaGraphDef, variables: list[dict], where: str,
                engine: str) -> dict:
    return {"tags": sorted(tag_set(meta_graph)),
            "signatures": [_signature(s) for s in signatures(meta_graph)],
            "functions": _functions(meta_graph, where),
            "variables": variables,
            "ops": op_counts(meta_graph, engine),
            "file_system_ops": file_system_ops(meta_graph)}


def _signature(info) -> dict:
    return {"name": info.name, "method_name": info.method_name,
            "inputs": [_tensor(t) for t in info.inputs], "outputs": [_tensor(t) for t in info.outputs]}


def _tensor(spec) -> dict:
    return {"key": spec.key, "dtype": spec.dtype, "shape": _shape(spec.shape), "tensor_name": spec.tensor_name}


def _shape(shape) -> list | None:
    return None if shape is None else list(shape)


def _functions(meta_graph: meta_graph_pb2.MetaGraphDef, where: str) -> list[dict]:
    """The root object's saved functions (what saved_model_cli lists as "Defined Functions")."""
    objects = meta_graph.object_graph_def
    found = []
    if not len(objects.nodes):
        return found
    order = _load_order(meta_graph.graph_def.library)
    for child in sorted(objects.nodes[0].children, key=lambda c: c.local_name):
        if not 0 <= child.node_id < len(objects.nodes):
            raise FileFormatError(f"{where}: the root object's child {child.local_name!r} is node "
                                  f"{child.node_id} of an object graph of {len(objects.nodes)} nodes")
        node = objects.nodes[child.node_id]
        if node.HasField("function"):
            names = sorted(node.function.concrete_functions, key=lambda n: order.get(n, len(order)))
            found.append({"name": child.local_name, "concrete_functions": [
                _concrete(name, objects.concrete_functions.get(name)) for name in names]})
    return found


def _load_order(library: function_pb2.FunctionDefLibrary) -> dict[str, int]:
    """Each library function's position in the order TensorFlow's loader recreates them
    (function_deserialization._sort_function_defs: callees first, the last ready function
    next). saved_model_cli lists a function's concrete functions sorted by their names after
    loading, which end in ids given in this order, so listing them in it prints what
    saved_model_cli prints (while the ids have equally many digits)."""
    names = [f.signature.name for f in library.function]
    calls = Library.of(library)
    callers: dict[str, list[str]] = {name: [] for name in names}
    waiting = Counter()
    for function in library.function:
        for callee in {c for node in function.node_def for _, c in calls.callees(node) if c in callers}:
            callers[callee].append(function.signature.name)
            waiting[function.signature.name] += 1
    ready = [name for name in names if not waiting[name]]
    order: dict[str, int] = {}
    while ready:
        name = ready.pop()
        order[name] = len(order)
        for caller in callers[name]:
            waiting[caller] -= 1
            if not waiting[caller]:
                ready.append(caller)
    return order


def _concrete(name: str, saved) -> dict:
    if saved is None:
        raise FileFormatError(f"the object graph names concrete function {name!r} but does not describe it")
    where = f"concrete function {name!r}"
    decoded = structure.decode(saved.canonicalized_input_signature, where)
    args, kwargs = decoded if isinstance(decoded, tuple) and len(decoded) == 2 else ((), {})
    return {"name": name,
            "args": [_structure(a) for a in args],
            "kwargs": {k: _structure(v) for k, v in sorted(kwargs.items())},
            "outputs": _structure(structure.decode(saved.output_signature, where))}


def _structure(value):
    """A decoded structure as JSON: specs as {"tensor_spec": ...}, containers as lists/dicts."""
    if isinstance(value, structure.TensorSpec):
        return {"tensor_spec": {"name": value.name, "dtype": value.dtype.name, "shape": _shape(value.shape)}}
    if isinstance(value, dict):
        return {"dict": {k: _structure(v) for k, v in sorted(value.items())}}
    if isinstance(value, (list, tuple)):
        return {"list" if isinstance(value, list) else "tuple": [_structure(v) for v in value]}
    if isinstance(value, structure.NamedTuple):
        return {"named_tuple": {"name": value.name, "fields": {k: _structure(v) for k, v in value.fields}}}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    return {"value": repr(value)}


def _variables(export_dir: Path) -> list[dict]:
    prefix = export_dir / "variables" / "variables"
    if not os.path.lexists(index_path(prefix)):
        return []
    return describe_checkpoint(prefix)["tensors"]


def tag_set_names(export_dir: str | Path) -> list[str]:
    """The model's tag-sets as `--tag-set` takes them (`serve`, `serve,gpu`), for shell
    completion: saved_model.pb is parsed, nothing else is read."""
    return [format_tags(sorted(tag_set(m))) for m in read_saved_model(export_dir).meta_graphs]


def signature_names(export_dir: str | Path, tags: str | None = None) -> list[str]:
    """The signature keys of the MetaGraphDef tagged `tags` (comma-separated), or of every
    MetaGraphDef when `tags` is None or names none of them; sorted."""
    meta_graphs = read_saved_model(export_dir).meta_graphs
    wanted = {t.strip() for t in tags.split(",") if t.strip()} if tags else None
    chosen = [m for m in meta_graphs if wanted is not None and tag_set(m) == wanted] or meta_graphs
    return sorted({key for m in chosen for key in m.signature_def})


def op_counts(meta_graph: meta_graph_pb2.MetaGraphDef, engine: str = "numpy") -> list[dict]:
    """How often each op occurs in the graph and its functions, and whether `engine` ("numpy"
    or "native") can run it (library function names count as supported ops)."""
    has_kernel = set(native.ops()).__contains__ if engine == "native" else registry.is_supported
    graph = meta_graph.graph_def
    functions = {f.signature.name for f in graph.library.function}
    counts = Counter(node.op for node in graph.node)
    for function in graph.library.function:
        counts.update(node.op for node in function.node_def)
    return [{"op": op, "count": count,
             "supported": op in functions or op in ALWAYS_SUPPORTED or has_kernel(op),
             "function": op in functions}
            for op, count in sorted(counts.items())]


def describe_ops(export_dir: str | Path) -> dict:
    model = read_saved_model(export_dir)
    return {"schema": OPS_SCHEMA, "path": str(export_dir),
            "meta_graphs": [{"tags": sorted(tag_set(m)), "ops": op_counts(m)} for m in model.meta_graphs]}


def checkpoint_prefix(path: str | Path) -> Path:
    """The checkpoint prefix a user means by `path`: a prefix, an `.index` file, a SavedModel
    directory (its variables), or a directory with a `checkpoint` state file (the latest).
    An index that is there but is no regular file (a FIFO, a device) still names the prefix, so
    that the reader says what is wrong with it."""
    path = Path(path)
    if path.suffix == ".index" and os.path.lexists(path) and not path.is_dir():
        return path.with_suffix("")
    if path.is_dir():
        if os.path.lexists(path / "variables" / "variables.index"):
            return path / "variables" / "variables"
        latest = _latest_from_state_file(path)
        if latest is not None:
            return latest
        raise FileFormatError(f"{path}: a directory without a SavedModel's variables or a "
                              f"`checkpoint` state file{_prefixes_hint(path)}")
    if os.path.lexists(index_path(path)):
        return path
    raise FileFormatError(f"{path}: no checkpoint here (no {index_path(path).name})")


def _prefixes_hint(directory: Path) -> str:
    """`; did you mean DIR/ckpt?` when the directory holds checkpoints (their `.index` files)
    without a state file naming one, as a SavedModel's `variables/` directory does."""
    prefixes = sorted(str(p.with_suffix("")) for p in directory.glob("*.index") if not p.is_dir())
    if not prefixes:
        return ""
    if len(prefixes) == 1:
        return f"; did you mean {prefixes[0]}?"
    return f"; it holds the checkpoints {', '.join(prefixes)}: name one"


def checkpoint_tensor(path: str | Path, key: str) -> np.ndarray:
    """The value of one tensor of the checkpoint at `path` (as for checkpoint_prefix); an
    unknown key names the keys it abbreviates (`model/big` for
    `model/big/.ATTRIBUTES/VARIABLE_VALUE`) or resembles."""
    reader = BundleReader(checkpoint_prefix(path))
    if key not in reader.entries:
        raise KeyError(f"{index_path(reader.prefix)}: no tensor named {key!r}{_keys_hint(key, reader.keys())}")
    return reader.read(key)


def _keys_hint(key: str, keys: list[str]) -> str:
    below = [k for k in keys if k.startswith(key.rstrip("/") + "/")]
    candidates = below[:5] if below else difflib.get_close_matches(key, keys, n=3)
    if not candidates:
        return ""
    more = f" (and {len(below) - 5} more)" if len(below) > 5 else ""
    return f"; did you mean {' or '.join(repr(k) for k in candidates)}{more}?"


def _latest_from_state_file(directory: Path) -> Path | None:
    state = directory / "checkpoint"
    if not state.is_file():
        return None
    for line in state.read_text(errors="replace").splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model_checkpoint_path":
            name = value.strip().strip('"')
            return Path(name) if Path(name).is_absolute() else directory / name
    raise FileFormatError(f"{state}: no model_checkpoint_path line")


def describe_checkpoint(path: str | Path) -> dict:
    """Every tensor of a checkpoint with dtype, shape and stored size in bytes."""
    prefix = checkpoint_prefix(path)
    reader = BundleReader(prefix)
    tensors = []
    for key in reader.keys():
        if key == OBJECT_GRAPH_KEY:
            continue
        entry = reader.entry(key)
        shape = shape_from_proto(entry.shape)
        elements = math.prod(shape) if shape is not None and None not in shape else None
        tensors.append({"key": key, "dtype": _dtype_name(entry.dtype), "shape": _shape(shape),
                        "elements": elements, "bytes": _stored_bytes(entry, elements)})
    return {"schema": CKPT_SCHEMA, "path": str(prefix), "num_shards": reader.header.num_shards,
            "tensors": tensors}


def _stored_bytes(entry, elements: int | None) -> int | None:
    """Bytes in the data shards: the entry's extent, or for a tensor stored in slices its
    element count times the item size (None for sliced strings, whose size varies)."""
    if not entry.slices:
        return entry.size
    try:
        itemsize = dtypes.from_enum(entry.dtype).itemsize
    except dtypes.UnknownDTypeError:
        return None
    return elements * itemsize if itemsize and elements is not None else None


def _dtype_name(enum: int) -> str:
    try:
        return types_pb2.DataType.Name(enum)
    except ValueError:
        return f"DataType({enum})"


def diff_models(a: str | Path, b: str | Path, values: bool = False) -> dict:
    """Differences between two SavedModels in signatures, ops and variables; with `values`,
    also in the variables' values (`diff_values`)."""
    result = _diff_structure(a, b)
    if values:
        result["values"] = diff_values(a, b)
        result["identical"] = result["identical"] and all(v["equal"] for v in result["values"])
    return result


def diff_values(a: str | Path, b: str | Path) -> list[dict]:
    """Every variable both models store with the same dtype and shape, by checkpoint key,
    with the largest absolute and relative (to B) difference of its elements, as `compare`
    measures outputs (NaN matches NaN). Variables that are only in one model, or that changed
    dtype or shape, are what `diff_models` reports under `variables`. One variable at a time is
    read, so two large models need no more memory than their largest variable twice."""
    readers = [_variables_reader(Path(p)) for p in (a, b)]
    if readers[0] is None or readers[1] is None:
        return []
    found = []
    for key in readers[0].keys():
        if key == OBJECT_GRAPH_KEY or key not in readers[1].entries:
            continue
        first, second = readers[0].entry(key), readers[1].entry(key)
        if first.dtype != second.dtype or shape_from_proto(first.shape) != shape_from_proto(second.shape):
            continue
        (difference,) = differences({key: readers[0].read(key)}, {key: readers[1].read(key)}, 0.0, 0.0)
        found.append({"key": key, "dtype": _dtype_name(first.dtype),
                      "shape": _shape(shape_from_proto(first.shape)),
                      "max_abs": float_json(difference.max_abs),
                      "max_rel": float_json(difference.max_rel), "equal": difference.within})
    return found


def _variables_reader(path: Path) -> BundleReader | None:
    """The variables of a SavedModel directory; None for one without (and a GraphDef file)."""
    prefix = path / "variables" / "variables"
    if not path.is_dir() or not os.path.lexists(index_path(prefix)):
        return None
    return BundleReader(prefix)


def _diff_structure(a: str | Path, b: str | Path) -> dict:
    left, right = describe_model(a), describe_model(b)
    first = {format_tags(m["tags"]): m for m in left["meta_graphs"]}
    second = {format_tags(m["tags"]): m for m in right["meta_graphs"]}
    meta_graphs = []
    for tags in sorted(first.keys() | second.keys()):
        if tags not in first or tags not in second:
            meta_graphs.append({"tags": tags.split(","), "only_in": "a" if tags in first else "b"})
            continue
        meta_graphs.append({"tags": tags.split(","), **_diff_meta_graph(first[tags], second[tags])})
    return {"schema": DIFF_SCHEMA, "a": str(a), "b": str(b), "meta_graphs": meta_graphs,
            "identical": all(_is_empty(m) for m in meta_graphs)}


def _is_empty(meta_graph_diff: dict) -> bool:
    return "only_in" not in meta_graph_diff and not any(
        meta_graph_diff[k][side] for k in ("signatures", "ops", "variables") for side in meta_graph_diff[k])


def _diff_meta_graph(a: dict, b: dict) -> dict:
    return {"signatures": _diff_keyed({s["name"]: s for s in a["signatures"]},
                                      {s["name"]: s for s in b["signatures"]}),
            "ops": _diff_keyed({o["op"]: o["count"] for o in a["ops"]}, {o["op"]: o["count"] for o in b["ops"]}),
            "variables": _diff_keyed({v["key"]: {k: v[k] for k in ("dtype", "shape")} for v in a["variables"]},
                                     {v["key"]: {k: v[k] for k in ("dtype", "shape")} for v in b["variables"]})}


def _diff_keyed(a: dict, b: dict) -> dict:
    return {"removed": sorted(a.keys() - b.keys()), "added": sorted(b.keys() - a.keys()),
            "changed": [{"name": k, "a": a[k], "b": b[k]} for k in sorted(a.keys() & b.keys()) if a[k] != b[k]]}
