"""The variables a SavedModel's graph reads, by the top-level `VarHandleOp` that names each,
with statistics of their values from the model's checkpoint.

TensorFlow 2 binds variables to the graph through the object graph: a call node's last inputs
are the handles its concrete function captures (`bound_inputs`, object ids), and the
checkpoint's own object graph (same ids) gives each variable's checkpoint key. This is how the
loader restores them (runtime/loader.py); here only the values' statistics are kept.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from savedmodel.protos import meta_graph_pb2, trackable_object_graph_pb2
from savedmodel.runtime.errors import SavedModelError
from savedmodel.runtime.protofiles import parse_message
from savedmodel.runtime.tensor_bundle import OBJECT_GRAPH_KEY, BundleReader, index_path
from savedmodel.runtime.tensor_proto import shape_from_proto
from savedmodel.views.values import Shape, dtype_name

VALUE_ATTRIBUTE = "VARIABLE_VALUE"
CALL_OPS = ("StatefulPartitionedCall", "PartitionedCall")


@dataclass(frozen=True)
class WeightInfo:
    """A variable as the viewer shows it: its object-graph name, dtype, shape, and min, max,
    mean and standard deviation of its values (None, with `error` saying why, when they
    cannot be computed: no checkpoint, a non-numeric dtype)."""

    name: str
    dtype: str
    shape: Shape | None
    stats: dict[str, float] | None = None
    error: str | None = None


def model_weights(export_dir: Path | None, meta_graph: meta_graph_pb2.MetaGraphDef) -> dict[str, WeightInfo]:
    """WeightInfo by top-level VarHandleOp node name, for every handle a call node binds to a
    variable of the object graph. A GraphDef file (no directory) has none."""
    objects = meta_graph.object_graph_def
    if export_dir is None or not objects.nodes:
        return {}
    handles = _bound_handles(meta_graph)
    if not handles:
        return {}
    keys, error = _checkpoint_keys(export_dir)
    reader = _reader(export_dir) if error is None else None
    found = {}
    for handle, node_id in handles.items():
        saved = objects.nodes[node_id].variable
        info = WeightInfo(saved.name, dtype_name(saved.dtype), shape_from_proto(saved.shape), error=error)
        if reader is not None:
            info = _with_stats(info, reader, keys.get(node_id))
        found[handle] = info
    return found


def _bound_handles(meta_graph: meta_graph_pb2.MetaGraphDef) -> dict[str, int]:
    objects = meta_graph.object_graph_def
    nodes = {node.name: node for node in meta_graph.graph_def.node}
    handles = {}
    for node in meta_graph.graph_def.node:
        if node.op not in CALL_OPS:
            continue
        concrete = objects.concrete_functions.get(node.attr["f"].func.name)
        if concrete is None:
            continue
        data = [name for name in node.input if not name.startswith("^")]
        bound = list(concrete.bound_inputs)
        for name, node_id in zip(data[len(data) - len(bound):], bound):
            producer = nodes.get(name.split(":")[0])
            if (producer is not None and producer.op == "VarHandleOp" and 0 <= node_id < len(objects.nodes)
                    and objects.nodes[node_id].HasField("variable")):
                handles[producer.name] = node_id
    return handles


def _reader(export_dir: Path) -> BundleReader:
    return BundleReader(export_dir / "variables" / "variables")


def _checkpoint_keys(export_dir: Path) -> tuple[dict[int, str], str | None]:
    """Checkpoint key of each object's value, or why there are none."""
    prefix = export_dir / "variables" / "variables"
    if not index_path(prefix).is_file():
        return {}, "no checkpoint (variables/variables.index)"
    try:
        graph = parse_message(_reader(export_dir).read(OBJECT_GRAPH_KEY)[()],
                              trackable_object_graph_pb2.TrackableObjectGraph,
                              f"{index_path(prefix)}: {OBJECT_GRAPH_KEY}")
    except SavedModelError as err:
        return {}, str(err)
    keys = {}
    for node_id, node in enumerate(graph.nodes):
        for attribute in node.attributes:
            if attribute.name == VALUE_ATTRIBUTE:
                keys[node_id] = attribute.checkpoint_key
    return keys, None


def _with_stats(info: WeightInfo, reader: BundleReader, key: str | None) -> WeightInfo:
    if key is None:
        return WeightInfo(info.name, info.dtype, info.shape, error="not in the checkpoint")
    try:
        value = reader.read(key)
    except SavedModelError as err:
        return WeightInfo(info.name, info.dtype, info.shape, error=str(err))
    return WeightInfo(info.name, info.dtype, info.shape, *_stats(value))


def _stats(value: np.ndarray) -> tuple[dict[str, float] | None, str | None]:
    if value.dtype.kind not in "biuf" and value.dtype.name != "bfloat16":
        return None, f"no statistics for {value.dtype.name} values"
    if value.size == 0:
        return None, "empty"
    data = value.astype(np.float64)
    stats = {"min": data.min(), "max": data.max(), "mean": data.mean(), "std": data.std()}
    return {k: float(v) if math.isfinite(v) else str(v) for k, v in stats.items()}, None
