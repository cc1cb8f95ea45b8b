"""Floating-point operations of a node, from its static shapes (savedmodel.static_shapes).

The convention is TensorFlow's profiler's (`tf.compat.v1.profiler` with
`ProfileOptionBuilder.float_operation()`), so that the two can be compared:
- a multiply-add counts as 2 FLOPs: MatMul and BatchMatMul 2*k per output element, Conv2D and
  Conv3D 2*(kernel volume)*(input channels) per output element, DepthwiseConv2dNative
  2*(kernel area) per output element, Conv2DBackpropInput 2*(kernel elements)/(output channels
  * stride area) per output element;
- element-wise ops 1 per output element (Add, AddV2, Sub, Mul, RealDiv, Maximum, Minimum, Pow,
  comparisons), SquaredDifference 2; unary ops 1 per input element (Neg, Log, Reciprocal,
  Square), Rsqrt 2, Softmax 5; BiasAdd 1 per input element; AddN (n-1) per element;
- reductions: Sum, ArgMax, ArgMin (input - output) elements, Mean input elements; MaxPool and
  AvgPool (kernel area) per output element; L2Loss 3*n-1.
TensorFlow counts nothing else (activations such as Relu, batch normalization, gathers and
copies are free). We count the same ops the same way, and also Einsum (2 per multiply-add of
its contraction), which the profiler skips. An unknown first dimension (the batch) counts as 1;
any other unknown dimension makes the node's count unknown (None).
"""
from __future__ import annotations

import math
from collections.abc import Callable

from savedmodel.static_shapes import ModelStructure, Node

Shape = tuple[int | None, ...] | None

_ELEMENTWISE = {"Add": 1, "AddV2": 1, "Sub": 1, "Mul": 1, "RealDiv": 1, "Maximum": 1,
                "Minimum": 1, "Pow": 1, "Greater": 1, "GreaterEqual": 1, "Less": 1,
                "LessEqual": 1, "Equal": 1, "NotEqual": 1, "SquaredDifference": 2}
_UNARY = {"Neg": 1, "Log": 1, "Reciprocal": 1, "Square": 1, "Rsqrt": 2, "Softmax": 5,
          "BiasAdd": 1, "AssignAdd": 1, "AssignSub": 1}
_REDUCTIONS = {"Sum": (1, 0), "ArgMax": (1, 0), "ArgMin": (1, 0), "Mean": (1, 1)}
TENSORFLOW_COUNTS = frozenset(set(_ELEMENTWISE) | set(_UNARY) | set(_REDUCTIONS) | {
    "MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "Conv2D", "Conv3D",
    "DepthwiseConv2dNative", "Conv2DBackpropInput", "MaxPool", "AvgPool", "AddN", "L2Loss"})
"""The op types TensorFlow's profiler has a FLOP count for (at inference)."""
COUNTED = TENSORFLOW_COUNTS | {"Einsum"}


def elements(shape: Shape) -> int | None:
    """Element count with an unknown first (batch) dimension taken as 1."""
    if shape is None:
        return None
    dims = [1 if d is None and i == 0 else d for i, d in enumerate(shape)]
    return None if None in dims else math.prod(dims)


def node_flops(node: Node, structure: ModelStructure) -> int | None:
    """FLOPs of one node: 0 for ops not counted, None when a shape it needs is unknown."""
    if node.op not in COUNTED:
        return 0
    inputs = [_shape(structure, ref) for ref in node.inputs]
    output = node.outputs[0].shape if node.outputs else None
    if node.op in _ELEMENTWISE:
        return _times(elements(output), _ELEMENTWISE[node.op])
    if node.op in _UNARY:
        return _times(elements(inputs[0]) if inputs else None, _UNARY[node.op])
    if node.op in _REDUCTIONS:
        reduce, finalize = _REDUCTIONS[node.op]
        size, out = (elements(inputs[0]) if inputs else None), elements(output)
        return None if size is None or out is None else size * reduce + out * (finalize - reduce)
    return _SPECIAL[node.op](node, inputs, output)


def _shape(structure: ModelStructure, ref: tuple[str, int]) -> Shape:
    found = structure.output(ref)
    return None if found is None else found.shape


def _times(count: int | None, factor: int) -> int | None:
    return None if count is None else count * factor


def _matmul(node: Node, inputs: list[Shape], output: Shape) -> int | None:
    a = inputs[0] if inputs else None
    if a is None or len(a) < 2:
        return None
    transposed = _flag(node, "transpose_a") or _flag(node, "adj_x")
    inner = a[-2] if transposed else a[-1]
    count = elements(output)
    return None if inner is None or count is None else 2 * inner * count


def _conv(node: Node, inputs: list[Shape], output: Shape) -> int | None:
    """Per output element: 2 * the filter's spatial volume * its input channels."""
    w = inputs[1] if len(inputs) > 1 else None
    count = elements(output)
    if w is None or count is None or None in w:
        return None
    return 2 * count * math.prod(w[:-1])


def _depthwise(node: Node, inputs: list[Shape], output: Shape) -> int | None:
    w = inputs[1] if len(inputs) > 1 else None
    count = elements(output)
    if w is None or count is None or None in w[:2]:
        return None
    return 2 * count * w[0] * w[1]


def _conv_transpose(node: Node, inputs: list[Shape], output: Shape) -> int | None:
    w = inputs[1] if len(inputs) > 1 else None
    count = elements(output)
    strides = _ints(node, "strides")
    if w is None or count is None or None in w or output is None or not output[-1] or len(strides) < 3:
        return None
    return int(2 * count * math.prod(w) / (output[-1] * strides[1] * strides[2]))


def _pool(node: Node, inputs: list[Shape], output: Shape) -> int | None:
    return _times(elements(output), math.prod(_ints(node, "ksize")))


def _add_n(node: Node, inputs: list[Shape], output: Shape) -> int | None:
    if not inputs:
        return 0
    return _times(elements(inputs[0]), len(inputs) - 1)


def _l2_loss(node: Node, inputs: list[Shape], output: Shape) -> int | None:
    count = elements(inputs[0]) if inputs else None
    return None if count is None else 3 * count - 1


def _einsum(node: Node, inputs: list[Shape], output: Shape) -> int | None:
    """2 FLOPs per multiply-add: the product of every label's size, once per operand pair."""
    equation = node.attrs.attr["equation"].s.decode("utf-8", "replace") if "equation" in node.attrs.attr else ""
    left = equation.replace(" ", "").split("->")[0].split(",")
    if len(left) != len(inputs) or len(inputs) != 2 or "..." in equation:
        return None
    sizes: dict[str, int | None] = {}
    for labels, shape in zip(left, inputs):
        if shape is None or len(shape) != len(labels):
            return None
        for position, (label, size) in enumerate(zip(labels, shape)):
            if size is None and position == 0:
                size = 1
            if sizes.get(label) in (None, 1):
                sizes[label] = size
    if None in sizes.values():
        return None
    return 2 * math.prod(sizes.values())


def _flag(node: Node, name: str) -> bool:
    return name in node.attrs.attr and node.attrs.attr[name].b


def _ints(node: Node, name: str) -> list[int]:
    return list(node.attrs.attr[name].list.i) if name in node.attrs.attr else []


_SPECIAL: dict[str, Callable[[Node, list[Shape], Shape], int | None]] = {
    "MatMul": _matmul, "BatchMatMul": _matmul, "BatchMatMulV2": _matmul, "BatchMatMulV3": _matmul,
    "Conv2D": _conv, "Conv3D": _conv, "DepthwiseConv2dNative": _depthwise,
    "Conv2DBackpropInput": _conv_transpose, "MaxPool": _pool, "AvgPool": _pool,
    "AddN": _add_n, "L2Loss": _l2_loss, "Einsum": _einsum,
}
