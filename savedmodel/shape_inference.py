"""Static shapes of op outputs in a graph being traced: one small function per op family.

A shape function takes the op's input tensors (their static shapes, and for Const inputs their
values) and its attrs (decoded) and returns one TensorShape per output. Dimensions that cannot
be known before the graph runs are None; a rank that cannot be known is an unknown shape. Ops
without a function get unknown shapes, which is always correct, only less informative; adding
one is a line in `_FUNCTIONS`. Shapes that can never work (`[2]` plus `[3]`) raise
`ShapeError`, which the op builder reports with the node, as TensorFlow does.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from savedmodel import nn_shapes
from savedmodel.runtime.kernels.array import strided_slice
from savedmodel.shapes import TensorShape, broadcast_shapes
from savedmodel.tensor import GraphTensor

Inputs = Sequence[GraphTensor]
ShapeFunction = Callable[[Inputs, dict], list[TensorShape]]
UNKNOWN = TensorShape(None)
SCALAR = TensorShape(())


class ShapeError(ValueError):
    """Input shapes an op can never accept. `computed` tells which input values the shape
    function read (TensorFlow's ` and with computed input tensors: input[2] = <0>`)."""

    def __init__(self, message: str, computed: str = ""):
        super().__init__(message)
        self.computed = computed


def infer(op_type: str, inputs: Inputs, attrs: dict, outputs: int) -> list[TensorShape]:
    function = _FUNCTIONS.get(op_type)
    if function is None:
        return [UNKNOWN] * outputs
    return function(inputs, attrs)


def constant_value(tensor: GraphTensor) -> np.ndarray | None:
    """The value of a tensor known while tracing (a Const node's output), else None."""
    return tensor.constant


def _same(inputs: Inputs, attrs: dict) -> list[TensorShape]:
    return [inputs[0].shape]


def _broadcast(inputs: Inputs, attrs: dict) -> list[TensorShape]:
    shape = inputs[0].shape
    for other in inputs[1:]:
        result = broadcast_shapes(shape, other.shape)
        if result is None:
            raise ShapeError(_mismatch(shape, other.shape))
        shape = result
    return [shape]


def _mismatch(a: TensorShape, b: TensorShape) -> str:
    x, y = a.as_tuple(), b.as_tuple()
    width = max(len(x), len(y))
    x, y = (1,) * (width - len(x)) + x, (1,) * (width - len(y)) + y
    for p, q in zip(x, y):
        if p not in (None, 1) and q not in (None, 1) and p != q:
            return f"Dimensions must be equal, but are {p} and {q}"
    return "Incompatible shapes"


def _matmul(inputs: Inputs, attrs: dict) -> list[TensorShape]:
    a, b = (TensorShape((None, None)) if t.shape.rank is None else t.shape for t in inputs[:2])
    if a.rank != 2 or b.rank != 2:
        raise ShapeError(f"Shape must be rank 2 but is rank {a.rank if a.rank != 2 else b.rank}")
    rows, inner_a = (a[1], a[0]) if attrs.get("transpose_a") else (a[0], a[1])
    inner_b, cols = (b[1], b[0]) if attrs.get("transpose_b") else (b[0], b[1])
    _check_inner(inner_a, inner_b)
    return [TensorShape((rows, cols))]


def _batch_matmul(inputs: Inputs, attrs: dict) -> list[TensorShape]:
    a, b = inputs[0].shape, inputs[1].shape
    if a.rank is None or b.rank is None:
        return [UNKNOWN]
    rows, inner_a = (a[-1], a[-2]) if attrs.get("adj_x") else (a[-2], a[-1])
    inner_b, cols = (b[-1], b[-2]) if attrs.get("adj_y") else (b[-2], b[-1])
    _check_inner(inner_a, inner_b)
    batch = broadcast_shapes(a[:-2], b[:-2])
    if batch is None:
        raise ShapeError(_mismatch(a[:-2], b[:-2]))
    return [batch.concatenate((rows, cols))]


def _check_inner(p: int | None, q: int | None) -> None:
    if p is not None and q is not None and p != q:
        raise ShapeError(f"Dimensions must be equal, but are {p} and {q}")


def _axes(tensor: GraphTensor, rank: int) -> list[int] | None:
    value = constant_value(tensor)
    if value is None:
        return None
    return sorted({int(a) % rank if rank else 0 for a in np.ravel(value)})


def _reduction(inputs: Inputs, attrs: dict) -> list[TensorShape]:
    shape, keep = inputs[0].shape, attrs.get("keep_dims", False)
    if shape.rank is None:
        return [UNKNOWN]
    axes = _axes(inputs[1], shape.rank)
    if axes is None:
        return [TensorShape([None] * shape.rank) if keep else UNKNOWN]
    if keep:
        return [TensorShape(1 if i in axes else d for i, d in enumerate(shape))]
    return [TensorShape(d for i, d in enumerate(shape) if i not in axes)]


def _arg_reduction(inputs: Inputs, attrs: dict) -> list[TensorShape]:
    shape = inputs[0].shape
    if shape.rank is None:
        return [UNKNOWN]
    axes = _axes(inputs[1], shape.rank)
    if axes is None:
        return [TensorShape([None] * (shape.rank - 1))]
    return [TensorShape(d for i, d in enumerate(shape) if i not in axes)]


def _reshape(inputs: Inputs, attrs: dict) -> list[TensorShape]:
    target = constant_value(inputs[1])
    if target is None:
        return [UNKNOWN]
    dims = [int(d) for d in np.ravel(target)]
    count = inputs[0].shape.num_elements()
    computed = (" and with input tensors computed as partial shapes: input[1] = "
                + _text(TensorShape(None if d == -1 else d for d in dims)))
    if -1 in dims:
        known = int(np.prod([d for d in dims if d != -1]))
        fill = count // known if count is not None and known else None
        if count is not None and known and count % known:
            raise ShapeError(f"Dimension size must be evenly divisible by {known} but is "
                             f"{count}", computed)
        return [TensorShape(fill if d == -1 else d for d in dims)]
    if count is not None and count != int(np.prod(dims)):
        raise ShapeError(f"Cannot reshape a tensor with {count} elements to shape "
                         f"{_text(TensorShape(dims))} ({int(np.prod(dims))} elements)", computed)
    return [TensorShape(dims)]


def _text(shape: TensorShape) -> str:
    """A shape as TensorFlow's shape functions print it: `[?,4]`, `?` for an unknown rank."""
    if shape.rank is None:
        return "?"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _merged(a: TensorShape, b: TensorShape) -> TensorShape:
    """Two shapes that must be the same, merged (TensorFlow's Merge and its messages)."""
    if a.rank is None:
        return b
    if b.rank is None:
        return a
    if a.rank != b.rank:
        raise ShapeError(f"Shapes must be equal rank, but are {a.rank} and {b.rank}")
    for i, (p, q) in enumerate(zip(a, b)):
        if p is not None and q is not None and p != q:
            raise ShapeError(f"Dimension {i} in both shapes must be equal, but are {p} and {q}. "
                             f"Shapes are {_text(a)} and {_text(b)}.")
    return a.merge_with(b)


def _concat(inputs: Inputs, attrs: dict) -> list[TensorShape]:
    """The values joined along the axis: the same rank (the first known one's), the same
    other dimensions."""
    values, axis_value = inputs[:-1], constant_value(inputs[-1])
    known = [v.shape for v in values if v.shape.rank is not None]
    if not known:
        return [UNKNOWN]
    rank = known[0].rank
    for shape in known[1:]:
        if shape.rank != rank:
            raise ShapeError(f"Shape must be rank {rank} but is rank {shape.rank}")
    if axis_value is None:
        return [TensorShape([None] * rank)]
    computed = f" and with computed input tensors: input[{len(values)}] = <{int(axis_value)}>"
    axis = int(axis_value) % rank
    rest, total = None, 0
    for shape in known:
        others = TensorShape(d for i, d in enumerate(shape) if i != axis)
        try:
            rest = others if rest is None else _merged(rest, others)
        except ShapeError as err:
            raise ShapeError(str(err), computed) from None
        total = None if total is None or shape[axis] is None else total + shape[axis]
    if len(known) < len(values):
        total = None
    dims = list(rest)
    dims.insert(axis, total)
    return [TensorShape(dims)]


def _pack(inputs: Inputs, attrs: dict) -> list[TensorShape]:
    """The values, all of one shape, stacked along a new axis."""
    shape = inputs[0].shape
    for i, value in enumerate(inputs[1:]):
        try:
            shape = _merged(shape, value.shape)
        except ShapeError as err:
            raise ShapeError(f"{err}\n\tFrom merging shape {i} with other shapes.") from None
    if shape.rank is None:
        return [UNKNOWN]
    dims = list(shape)
    axis = attrs.get("axis", 0)
    dims.insert(axis % (len(dims) + 1), len(inputs))
    return [TensorShape(dims)]


def _string_join(inputs: Inputs, attrs: dict) -> list[TensorShape]:
    """Scalars join with anything; the other inputs must have one shape (no broadcasting)."""
    shape = SCALAR if all(t.shape.rank == 0 for t in inputs) else UNKNOWN
    for tensor in inputs:
        if tensor.shape.rank != 0:
            shape = _merged(shape, tensor.shape)
    return [shape]


def _from_shape_input(index: int) -> ShapeFunction:
    def infer_shape(inputs: Inputs, attrs: dict) -> list[TensorShape]:
        value = constant_value(inputs[index])
        if value is None:
            size = inputs[index].shape[0] if inputs[index].shape.rank == 1 else None
            return [UNKNOWN if size is None else TensorShape([None] * size)]
        return [TensorShape(int(d) for d in np.ravel(value))]
    return infer_shape


def _element_shape(tensor: GraphTensor) -> TensorShape:
    """A TensorList element shape given as a tensor: -1 for an unknown rank, -1 entries for
    unknown dimensions."""
    value = constant_value(tensor)
    if value is None or value.ndim == 0:
        return UNKNOWN
    return TensorShape(None if d < 0 else int(d) for d in value)


def _list_item(inputs: Inputs, attrs: dict) -> list[TensorShape]:
    return [_element_shape(inputs[2])]


def _list_stack(inputs: Inputs, attrs: dict) -> list[TensorShape]:
    element = _element_shape(inputs[1])
    if element.rank is None:
        return [UNKNOWN]
    count = attrs.get("num_elements", -1)
    return [TensorShape([None if count < 0 else count]).concatenate(element)]


def _list_gather(inputs: Inputs, attrs: dict) -> list[TensorShape]:
    element = _element_shape(inputs[2])
    if element.rank is None:
        return [UNKNOWN]
    return [TensorShape(inputs[1].shape[:1]).concatenate(element)]


def _list_concat(inputs: Inputs, attrs: dict) -> list[TensorShape]:
    """Items joined along their first axis: its length is unknown, the rest are the element
    shape's; and one length per item."""
    element = _element_shape(inputs[1])
    joined = UNKNOWN if not element.rank else TensorShape([None]).concatenate(element[1:])
    return [joined, TensorShape([None])]


def _range(inputs: Inputs, attrs: dict) -> list[TensorShape]:
    values = [constant_value(t) for t in inputs]
    if any(v is None for v in values):
        return [TensorShape((None,))]
    start, limit, delta = (v.item() for v in values)
    return [TensorShape((len(np.arange(start, limit, delta)),))]


def _gather(inputs: Inputs, attrs: dict) -> list[TensorShape]:
    params, indices = inputs[0].shape, inputs[1].shape
    axis = constant_value(inputs[2])
    if params.rank is None or indices.rank is None or axis is None:
        return [UNKNOWN]
    axis = int(axis) % params.rank
    return [params[:axis].concatenate(indices).concatenate(params[axis + 1:])]


def _strided_slice(inputs: Inputs, attrs: dict) -> list[TensorShape]:
    shape = inputs[0].shape
    bounds = [constant_value(t) for t in inputs[1:]]
    if shape.rank is None or any(b is None for b in bounds):
        return [_partial_strided_slice(shape, inputs[1].shape, bounds[2], attrs)]
    if shape.is_fully_defined():
        return [TensorShape(_sliced_shape(shape.as_tuple(), bounds, attrs))]
    # Unknown dimensions: slice two stand-ins of different sizes there; what differs is unknown.
    try:
        first, second = (_sliced_shape(tuple(size if d is None else d for d in shape), bounds, attrs)
                         for size in _STAND_IN_SIZES)
    except ShapeError:
        return [_partial_strided_slice(shape, inputs[1].shape, bounds[2], attrs)]
    return [TensorShape(a if a == b else None for a, b in zip(first, second))]


_STAND_IN_SIZES = (1_000_003, 1_000_033)
"""Sizes standing in for unknown dimensions: larger than any constant bound in practice."""


def _sliced_shape(dims: tuple[int, ...], bounds: list, attrs: dict) -> tuple[int, ...]:
    """The kernel itself, run on a stand-in array with no memory of its own, gives the shape."""
    stand_in = np.lib.stride_tricks.as_strided(np.zeros(1, np.int8), dims, (0,) * len(dims))
    masks = {k: attrs.get(k, 0) for k in ("begin_mask", "end_mask", "ellipsis_mask",
                                          "new_axis_mask", "shrink_axis_mask")}
    try:
        (out,) = strided_slice(stand_in, *bounds, **masks)
    except Exception as err:  # the kernel's own message says what is out of bounds
        raise ShapeError(str(err)) from None
    return out.shape


def _partial_strided_slice(shape: TensorShape, spec: TensorShape, strides: np.ndarray | None,
                           attrs: dict) -> TensorShape:
    """The shape of a slice whose bounds are only known when the graph runs (`x[i]`): shrunk
    axes go, whole axes (both bounds masked, stride 1) and the axes after the spec keep their
    sizes, the rest are unknown. Ellipses and new axes are left unknown."""
    if shape.rank is None or spec.rank != 1 or spec[0] is None or \
            attrs.get("ellipsis_mask", 0) or attrs.get("new_axis_mask", 0) or spec[0] > shape.rank:
        return UNKNOWN
    whole = attrs.get("begin_mask", 0) & attrs.get("end_mask", 0)
    dims = []
    for axis in range(spec[0]):
        if attrs.get("shrink_axis_mask", 0) >> axis & 1:
            continue
        unit_stride = strides is not None and int(np.ravel(strides)[axis]) == 1
        dims.append(shape[axis] if whole >> axis & 1 and unit_stride else None)
    return TensorShape(dims + list(shape[spec[0]:]))


def _transpose(inputs: Inputs, attrs: dict) -> list[TensorShape]:
    shape, perm = inputs[0].shape, constant_value(inputs[1])
    if shape.rank is None or perm is None:
        return [UNKNOWN if shape.rank is None else TensorShape([None] * shape.rank)]
    return [TensorShape(shape[int(p)] for p in perm)]


def _expand_dims(inputs: Inputs, attrs: dict) -> list[TensorShape]:
    shape, axis = inputs[0].shape, constant_value(inputs[1])
    if shape.rank is None or axis is None:
        return [UNKNOWN]
    dims = list(shape)
    axis = int(axis)
    dims.insert(axis if axis >= 0 else len(dims) + 1 + axis, 1)
    return [TensorShape(dims)]


def _squeeze(inputs: Inputs, attrs: dict) -> list[TensorShape]:
    shape, axes = inputs[0].shape, attrs.get("squeeze_dims") or []
    if shape.rank is None:
        return [UNKNOWN]
    axes = {a % shape.rank for a in axes}
    if not axes and None in shape.as_tuple():
        return [UNKNOWN]
    return [TensorShape(d for i, d in enumerate(shape)
                        if not (i in axes or not axes and d == 1))]


def _matrix_diag(inputs: Inputs, attrs: dict) -> list[TensorShape]:
    shape = inputs[0].shape
    k, rows, cols = (constant_value(t) for t in inputs[1:4])
    if shape.rank is None or k is None or rows is None or cols is None or np.any(k != 0):
        return [UNKNOWN]
    size = shape[-1]
    rows = size if int(rows) == -1 else int(rows)
    cols = size if int(cols) == -1 else int(cols)
    return [shape[:-1].concatenate((rows, cols))]


def _where(inputs: Inputs, attrs: dict) -> list[TensorShape]:
    rank = inputs[0].shape.rank
    return [TensorShape((None, rank))]


def _shape_of(inputs: Inputs, attrs: dict) -> list[TensorShape]:
    return [TensorShape((inputs[0].shape.rank,))]


def _scalar(inputs: Inputs, attrs: dict) -> list[TensorShape]:
    return [SCALAR]


def _tile(inputs: Inputs, attrs: dict) -> list[TensorShape]:
    shape, multiples = inputs[0].shape, constant_value(inputs[1])
    if shape.rank is None or multiples is None:
        return [UNKNOWN if shape.rank is None else TensorShape([None] * shape.rank)]
    return [TensorShape(None if d is None else d * int(m) for d, m in zip(shape, multiples))]


_SAME = ("Identity", "StopGradient", "Neg", "Abs", "Sqrt", "Rsqrt", "Exp", "Log", "Square",
         "Tanh", "Sigmoid", "Sign", "Floor", "Ceil", "Round", "Reciprocal", "Sin", "Cos",
         "LogicalNot", "Cast", "ZerosLike", "OnesLike", "Relu", "Softmax", "BiasAdd",
         "MatrixSetDiagV3", "StaticRegexFullMatch")
_BROADCAST = ("Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "FloorDiv", "FloorMod", "Pow", "Maximum",
              "Minimum", "SquaredDifference", "Greater", "GreaterEqual", "Less", "LessEqual",
              "Equal", "NotEqual", "LogicalAnd", "LogicalOr", "SelectV2")

_FUNCTIONS: dict[str, ShapeFunction] = {
    **{op: _same for op in _SAME},
    **{op: _broadcast for op in _BROADCAST},
    **{op: _reduction for op in ("Mean", "Sum", "Max", "Min", "Prod", "All", "Any")},
    "ArgMax": _arg_reduction, "ArgMin": _arg_reduction,
    "MatMul": _matmul,
    "BatchMatMulV2": _batch_matmul, "BatchMatMulV3": _batch_matmul, "BatchMatMul": _batch_matmul,
    "Reshape": _reshape,
    "ConcatV2": _concat,
    "StringJoin": _string_join,
    "Pack": _pack,
    "Fill": _from_shape_input(0),
    "RandomUniform": _from_shape_input(0),
    "RandomUniformInt": _from_shape_input(0),
    "Range": _range,
    "GatherV2": _gather,
    "StridedSlice": _strided_slice,
    "Transpose": _transpose,
    "ExpandDims": _expand_dims,
    "Squeeze": _squeeze,
    "Tile": _tile,
    "MatrixDiagV3": _matrix_diag,
    "Where": _where,
    "Shape": _shape_of,
    "Size": _scalar, "Rank": _scalar, "StringFormat": _scalar,
    **{op: _scalar for op in ("TensorListReserve", "TensorListFromTensor", "TensorListSetItem",
                              "TensorListLength", "TensorListScatterIntoExistingList",
                              "TensorListSplit")},
    "TensorListGetItem": _list_item,
    "TensorListStack": _list_stack,
    "TensorListGather": _list_gather,
    "TensorListConcatV2": _list_concat,
}
_FUNCTIONS.update({op: f for op, f in nn_shapes.FUNCTIONS.items() if op not in _FUNCTIONS})
