"""A Keras-style summary of a model: its layers with output shapes, parameters and FLOPs, and
totals in Keras's wording. What `savedmodel summary` prints; `--json` prints the dict
(schema savedmodel.summary/1, docs/json-schemas.md).

Built on savedmodel.static_shapes (layers, shapes, variables) and savedmodel.flops (the
counting convention: TensorFlow's profiler's, a multiply-add is 2 FLOPs, batch of 1).
Parameters are the elements of the variables the signature reads; trainable or not as the
SavedObjectGraph's variables say (TensorFlow 1: the `trainable_variables` collection).
Nodes in no layer (the signature's own plumbing) are summed in a last row, `(other)`, when
they have parameters or FLOPs.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from savedmodel.flops import node_flops
from savedmodel.static_shapes import ModelStructure, Variable, analyze

SCHEMA = "savedmodel.summary/1"
OTHER = "(other)"
FLOPS_CONVENTION = ("TensorFlow profiler's float_operation counts; a multiply-add is 2 FLOPs; "
                    "an unknown batch dimension counts as 1")
_PLUMBING = frozenset({"Const", "Identity", "ReadVariableOp", "VarHandleOp", "NoOp", "Reshape",
                       "Squeeze", "ExpandDims", "Shape", "StridedSlice", "Pack", "Cast",
                       "StatefulPartitionedCall", "PartitionedCall", "Placeholder"})


def summarize(path: str | Path, signature: str | None = None,
              tags: set[str] | None = None) -> dict:
    """The summary of the SavedModel directory or GraphDef file at `path`."""
    structure = analyze(path, signature=signature, tags=tags)
    return summarize_structure(structure, str(path))


def summarize_structure(structure: ModelStructure, path: str = "") -> dict:
    flops = {p: node_flops(n, structure) for p, n in structure.nodes.items()}
    layers = [_layer(structure, layer, flops) for layer in structure.layers.values()]
    other = _other(structure, flops)
    if other["params"] or other["flops"]:
        layers.append(other)
    read = _read_variables(structure)
    total = sum(v.elements or 0 for v in read)
    trainable = sum(v.elements or 0 for v in read if v.trainable is not False)
    return {"schema": SCHEMA, "path": path, "signature": structure.name,
            "inputs": [_port(p) for p in structure.inputs],
            "outputs": [_port(p) for p in structure.outputs],
            "layers": layers,
            "total_params": total, "trainable_params": trainable,
            "non_trainable_params": total - trainable,
            "flops": sum(f for f in flops.values() if f is not None),
            "flops_unknown_nodes": sorted(p for p, f in flops.items() if f is None),
            "flops_convention": FLOPS_CONVENTION,
            "weights": _weights(read)}


def _port(port) -> dict:
    return {"key": port.key, "dtype": port.output.dtype, "shape": _shape(port.output.shape)}


def _shape(shape) -> list | None:
    return None if shape is None else list(shape)


def _read_variables(structure: ModelStructure) -> list[Variable]:
    keys = dict.fromkeys(k for n in structure.nodes.values() for k in n.variables)
    return [structure.variables[k] for k in keys]


def _layer(structure: ModelStructure, layer, flops: dict) -> dict:
    variables = [structure.variables[k] for k in layer.variables]
    counted = {p: flops[p] for p in layer.nodes}
    return {"name": layer.name, "type": _layer_type(structure, layer.nodes, counted),
            "scope": layer.scope,
            "output_shapes": [_shape(structure.output(ref).shape) for ref in layer.outputs],
            "params": sum(v.elements or 0 for v in variables),
            "trainable_params": sum(v.elements or 0 for v in variables if v.trainable is not False),
            "flops": sum(f for f in counted.values() if f is not None),
            "flops_known": all(f is not None for f in counted.values()),
            "variables": [v.name for v in variables]}


def _layer_type(structure: ModelStructure, paths: list[str], flops: dict) -> str:
    """The op that does the layer's work: of the contractions, pools and gathers the one with
    most FLOPs; else the op with most FLOPs; else the first op that is not plumbing."""
    ops = Counter()
    for path in paths:
        ops[structure.nodes[path].op] += flops.get(path) or 0
    work = [op for op in ops if op in _WORK]
    if work:
        return max(work, key=ops.__getitem__)
    busiest = max(ops, key=ops.__getitem__, default=None)
    if busiest is not None and ops[busiest]:
        return busiest
    for path in paths:
        if structure.nodes[path].op not in _PLUMBING:
            return structure.nodes[path].op
    return structure.nodes[paths[0]].op if paths else ""


_WORK = frozenset({"MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "Conv2D", "Conv3D",
                   "DepthwiseConv2dNative", "Conv2DBackpropInput", "Conv3DBackpropInputV2",
                   "MaxPool", "AvgPool", "MaxPool3D", "AvgPool3D", "Einsum", "GatherV2",
                   "ResourceGather", "FusedBatchNormV3", "While", "StatelessWhile"})


def _other(structure: ModelStructure, flops: dict) -> dict:
    paths = [p for p, n in structure.nodes.items() if n.layer is None]
    keys = dict.fromkeys(k for p in paths for k in structure.nodes[p].variables
                         if not _in_layer(structure, k))
    variables = [structure.variables[k] for k in keys]
    return {"name": OTHER, "type": "", "scope": "", "output_shapes": [],
            "params": sum(v.elements or 0 for v in variables),
            "trainable_params": sum(v.elements or 0 for v in variables if v.trainable is not False),
            "flops": sum(flops[p] or 0 for p in paths),
            "flops_known": all(flops[p] is not None for p in paths),
            "variables": [v.name for v in variables]}


def _in_layer(structure: ModelStructure, key: str) -> bool:
    return any(key in layer.variables for layer in structure.layers.values())


def _weights(variables: list[Variable]) -> list[dict]:
    by_dtype: dict[str, dict] = {}
    for variable in variables:
        entry = by_dtype.setdefault(variable.dtype, {"dtype": variable.dtype, "variables": 0,
                                                     "elements": 0, "bytes": 0})
        entry["variables"] += 1
        entry["elements"] += variable.elements or 0
        entry["bytes"] += variable.bytes or 0
    return sorted(by_dtype.values(), key=lambda e: -e["bytes"])


def summary_text(summary: dict, width: int = 100) -> str:
    """The summary as Keras prints one: a table of layers, then the totals."""
    rows = [("Layer (type)", "Output Shape", "Param #", "FLOPs")]
    for layer in summary["layers"]:
        name = f"{layer['name']} ({layer['type']})" if layer["type"] else layer["name"]
        shapes = ", ".join(shape_text(s) for s in layer["output_shapes"])
        flops = _number(layer["flops"]) + ("" if layer["flops_known"] else "+?")
        rows.append((name, shapes, _number(layer["params"]), flops))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    widths[0] = max(widths[0], min(40, width - sum(widths[1:]) - 6))
    line = "─" * (sum(widths) + 6)
    out = [f'Model: "{summary["signature"]}"', line, _row(rows[0], widths), "━" * len(line)]
    for row in rows[1:]:
        out.append(_row(row, widths))
    out.append(line)
    out += _totals(summary)
    return "\n".join(out) + "\n"


def _row(row: tuple, widths: list[int]) -> str:
    return (f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:>{widths[2]}}  "
            f"{row[3]:>{widths[3]}}").rstrip()


def _totals(summary: dict) -> list[str]:
    size = {w["dtype"]: w["bytes"] for w in summary["weights"]}
    total_bytes = sum(size.values())
    lines = [f"Total params: {_number(summary['total_params'])} ({size_text(total_bytes)})",
             f"Trainable params: {_number(summary['trainable_params'])}",
             f"Non-trainable params: {_number(summary['non_trainable_params'])}",
             f"Total FLOPs: {_number(summary['flops'])}"
             + (f" (+ {len(summary['flops_unknown_nodes'])} nodes with unknown shapes)"
                if summary["flops_unknown_nodes"] else "")
             + " (a multiply-add is 2 FLOPs; batch of 1)"]
    for weight in summary["weights"]:
        lines.append(f"Weights {weight['dtype']}: {_number(weight['elements'])} values in "
                     f"{weight['variables']} variables, {size_text(weight['bytes'])}")
    return lines


def shape_text(shape: list | None) -> str:
    """Keras's spelling: `(None, 28, 28, 1)`; `?` for an unknown rank."""
    if shape is None:
        return "?"
    if len(shape) == 1:
        return f"({'None' if shape[0] is None else shape[0]},)"
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + ")"


def _number(value: int) -> str:
    return f"{value:,}"


def size_text(count: int) -> str:
    """Keras's byte sizes: `312 B`, `4.82 KB` (units of 1024)."""
    if count < 1024:
        return f"{count} B"
    value, unit = float(count), "B"
    for unit in ("KB", "MB", "GB"):
        value /= 1024
        if value < 1024:
            break
    return f"{value:.2f} {unit}"
