"""Shape functions of the neural-network ops Keras models are made of: convolutions, pooling,
batch normalization, einsum, padding, resizing, slicing and splitting.

Same contract as savedmodel.shape_inference (which registers these): inputs carry `shape`
(a TensorShape) and `constant` (a numpy array or None), attrs are decoded, and the result is
one TensorShape per output, None dimensions where the size is only known at run time. The
arithmetic is TensorFlow's (tensorflow/core/framework/common_shape_fns.cc): VALID gives
ceil((in - (k - 1) * dilation) / stride), SAME ceil(in / stride), EXPLICIT adds the paddings.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from savedmodel.shapes import TensorShape, broadcast_shapes

UNKNOWN = TensorShape(None)


def _layout(attrs: dict, rank: int) -> tuple[int, list[int]]:
    """(channel axis, spatial axes) of a `data_format` attr (NHWC, NCHW, NDHWC, NCDHW)."""
    text = attrs.get("data_format", "NHWC" if rank == 4 else "NDHWC")
    if isinstance(text, bytes):
        text = text.decode()
    if text.startswith("NC"):
        return 1, list(range(2, rank))
    return rank - 1, list(range(1, rank - 1))


def _window(size: int | None, kernel: int | None, stride: int, dilation: int, padding: str,
            explicit: tuple[int, int] = (0, 0)) -> int | None:
    if size is None or kernel is None:
        return None
    effective = (kernel - 1) * dilation + 1
    if padding == "SAME":
        return -(-size // stride)
    if padding == "EXPLICIT":
        size += explicit[0] + explicit[1]
    return max(0, -(-(size - effective + 1) // stride))


def _padding(attrs: dict) -> str:
    text = attrs.get("padding", "VALID")
    return text.decode() if isinstance(text, bytes) else text


def _explicit(attrs: dict, axis: int) -> tuple[int, int]:
    pads = attrs.get("explicit_paddings") or []
    return (pads[2 * axis], pads[2 * axis + 1]) if len(pads) > 2 * axis + 1 else (0, 0)


def conv(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    """Conv2D and Conv3D: filter [spatial..., in, out]."""
    x, w = inputs[0].shape, inputs[1].shape
    if x.rank is None:
        return [UNKNOWN]
    channel, spatial = _layout(attrs, x.rank)
    strides = attrs.get("strides") or [1] * x.rank
    dilations = attrs.get("dilations") or [1] * x.rank
    dims = list(x.as_tuple())
    kernel = list(w.as_tuple()[:-2]) if w.rank == x.rank else [None] * len(spatial)
    for i, axis in enumerate(spatial):
        dims[axis] = _window(dims[axis], kernel[i], strides[axis], dilations[axis],
                             _padding(attrs), _explicit(attrs, axis))
    dims[channel] = w[-1] if w.rank == x.rank else None
    return [TensorShape(dims)]


def depthwise_conv(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    """DepthwiseConv2dNative: filter [h, w, in, multiplier] gives in * multiplier channels."""
    (shape,) = conv(inputs, attrs)
    w = inputs[1].shape
    if shape.rank is None:
        return [shape]
    channel, _ = _layout(attrs, shape.rank)
    dims = list(shape.as_tuple())
    known = w.rank == 4 and w[2] is not None and w[3] is not None
    dims[channel] = w[2] * w[3] if known else None
    return [TensorShape(dims)]


def pool(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    """MaxPool, AvgPool and their 3-D forms: `ksize` and `strides` per axis."""
    x = inputs[0].shape
    if x.rank is None:
        return [UNKNOWN]
    _, spatial = _layout(attrs, x.rank)
    ksize = attrs.get("ksize") or [1] * x.rank
    strides = attrs.get("strides") or [1] * x.rank
    dims = list(x.as_tuple())
    for axis in spatial:
        dims[axis] = _window(dims[axis], ksize[axis], strides[axis], 1, _padding(attrs),
                             _explicit(attrs, axis))
    return [TensorShape(dims)]


def fused_batch_norm(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    """y like x; batch mean, variance and the reserve spaces per channel (the last reserve
    space of V3 has a size of TensorFlow's choosing)."""
    x = inputs[0].shape
    channels = None
    if x.rank is not None:
        channels = x[_layout(attrs, x.rank)[0]]
    per_channel = TensorShape((channels,))
    return [x, per_channel, per_channel, per_channel, per_channel, UNKNOWN]


def einsum(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    """Output labels take the sizes their labels have in the operands; `...` broadcasts."""
    equation = attrs.get("equation", "")
    equation = equation.decode() if isinstance(equation, bytes) else equation
    if "->" not in equation:
        return [UNKNOWN]
    left, output = equation.replace(" ", "").split("->")
    operands = left.split(",")
    if len(operands) != len(inputs) or any(t.shape.rank is None for t in inputs):
        return [UNKNOWN]
    sizes: dict[str, int | None] = {}
    ellipsis: TensorShape | None = None
    for labels, tensor in zip(operands, inputs):
        dims = tensor.shape.as_tuple()
        head, dots, tail = labels.partition("...")
        if dots:
            middle = TensorShape(dims[len(head):len(dims) - len(tail)])
            ellipsis = middle if ellipsis is None else _broadcast(ellipsis, middle)
            dims = dims[:len(head)] + dims[len(dims) - len(tail):]
            labels = head + tail
        if len(labels) != len(dims):
            return [UNKNOWN]
        for label, size in zip(labels, dims):
            if sizes.get(label) in (None, 1):
                sizes[label] = size if sizes.get(label) is None or size != 1 else sizes[label]
    head, dots, tail = output.partition("...")
    middle = list(ellipsis.as_tuple()) if dots and ellipsis is not None else []
    if dots and ellipsis is None:
        return [UNKNOWN]
    return [TensorShape([sizes.get(c) for c in head] + middle + [sizes.get(c) for c in tail])]


def _broadcast(a: TensorShape, b: TensorShape) -> TensorShape:
    return broadcast_shapes(a, b) or UNKNOWN


def pad(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    """Pad, PadV2, MirrorPad: paddings [rank, 2] added to each axis."""
    x, paddings = inputs[0].shape, inputs[1].constant
    if paddings is None:
        rank = x.rank if x.rank is not None else inputs[1].shape[0] if inputs[1].shape.rank else None
        return [UNKNOWN if rank is None else TensorShape([None] * rank)]
    paddings = np.asarray(paddings).reshape(-1, 2)
    if x.rank is not None and x.rank != len(paddings):
        raise ValueError(f"paddings for rank {len(paddings)}, input of rank {x.rank}")
    dims = x.as_tuple() or (None,) * len(paddings)
    return [TensorShape(None if d is None else d + int(p[0]) + int(p[1])
                        for d, p in zip(dims, paddings))]


def resize(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    """ResizeBilinear and friends: NHWC with (height, width) from the size input."""
    x, size = inputs[0].shape, inputs[1].constant
    batch = x[0] if x.rank == 4 else None
    channels = x[3] if x.rank == 4 else None
    height, width = (int(size[0]), int(size[1])) if size is not None and np.size(size) == 2 else (None, None)
    return [TensorShape((batch, height, width, channels))]


def slice_(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    """Slice: size -1 takes the rest of the axis."""
    x, begin, size = inputs[0].shape, inputs[1].constant, inputs[2].constant
    if size is None:
        rank = x.rank if x.rank is not None else inputs[2].shape[0] if inputs[2].shape.rank else None
        return [UNKNOWN if rank is None else TensorShape([None] * rank)]
    dims = []
    for axis, length in enumerate(np.ravel(size)):
        length = int(length)
        if length != -1:
            dims.append(length)
        elif x.rank is not None and x[axis] is not None and begin is not None:
            dims.append(x[axis] - int(np.ravel(begin)[axis]))
        else:
            dims.append(None)
    return [TensorShape(dims)]


def split(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    """Split(axis, value): num_split equal parts."""
    count = attrs.get("num_split", 1)
    axis, x = inputs[0].constant, inputs[1].shape
    if axis is None or x.rank is None:
        return [UNKNOWN if x.rank is None else TensorShape([None] * x.rank)] * count
    axis = int(axis) % x.rank
    dims = list(x.as_tuple())
    dims[axis] = None if dims[axis] is None else dims[axis] // count
    return [TensorShape(dims)] * count


def split_v(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    """SplitV(value, size_splits, axis): one size may be -1 (the rest)."""
    count = attrs.get("num_split", 1)
    x, sizes, axis = inputs[0].shape, inputs[1].constant, inputs[2].constant
    if sizes is None or axis is None or x.rank is None:
        return [UNKNOWN if x.rank is None else TensorShape([None] * x.rank)] * count
    axis = int(axis) % x.rank
    sizes = [int(s) for s in np.ravel(sizes)]
    if -1 in sizes:
        rest = x[axis] - sum(s for s in sizes if s != -1) if x[axis] is not None else None
        sizes = [rest if s == -1 else s for s in sizes]
    shapes = []
    for size in sizes:
        dims = list(x.as_tuple())
        dims[axis] = size
        shapes.append(TensorShape(dims))
    return shapes


def unpack(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    count = attrs.get("num", 1)
    x = inputs[0].shape
    if x.rank is None:
        return [UNKNOWN] * count
    axis = attrs.get("axis", 0) % x.rank
    return [TensorShape(d for i, d in enumerate(x) if i != axis)] * count


def broadcast_to(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    shape = inputs[1].constant
    if shape is None:
        size = inputs[1].shape[0] if inputs[1].shape.rank == 1 else None
        return [UNKNOWN if size is None else TensorShape([None] * size)]
    return [TensorShape(int(d) for d in np.ravel(shape))]


def identity_n(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    return [t.shape for t in inputs]


def add_n(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    known = [t.shape for t in inputs if t.shape.rank is not None]
    if not known:
        return [UNKNOWN]
    shape = known[0]
    for other in known[1:]:
        shape = shape.merge_with(other) if shape.is_compatible_with(other) else shape
    return [shape]


def select_v1(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    return [inputs[1].shape if inputs[1].shape.rank is not None else inputs[2].shape]


def one_hot(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    indices, depth = inputs[0].shape, inputs[1].constant
    if indices.rank is None:
        return [UNKNOWN]
    dims = list(indices.as_tuple())
    axis = attrs.get("axis", -1)
    dims.insert(len(dims) if axis == -1 else axis, None if depth is None else int(depth))
    return [TensorShape(dims)]


def top_k(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    x, k = inputs[0].shape, inputs[1].constant if len(inputs) > 1 else attrs.get("k")
    if x.rank is None:
        return [UNKNOWN, UNKNOWN]
    shape = x[:-1].concatenate((None if k is None else int(k),))
    return [shape, shape]


def conv_transpose(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    """Conv2DBackpropInput / Conv3DBackpropInputV2: the output shape is the first input."""
    return broadcast_to([inputs[1], inputs[0]], attrs)


def depth_to_space(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    """DepthToSpace / SpaceToDepth (NHWC): spatial dims scaled by block_size."""
    x, block = inputs[0].shape, attrs.get("block_size", 1)
    if x.rank != 4:
        return [UNKNOWN]
    n, h, w, c = x.as_tuple()
    return [TensorShape((n, _scaled(h, block), _scaled(w, block),
                         None if c is None else c // (block * block)))]


def _scaled(size: int | None, factor: int) -> int | None:
    return None if size is None else size * factor


def space_to_depth(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    x, block = inputs[0].shape, attrs.get("block_size", 1)
    if x.rank != 4:
        return [UNKNOWN]
    n, h, w, c = x.as_tuple()
    return [TensorShape((n, None if h is None else h // block, None if w is None else w // block,
                         None if c is None else c * block * block))]


def space_to_batch(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    """SpaceToBatchND(input, block_shape, paddings): padded spatial axes divided by the
    blocks, the batch multiplied by their product."""
    return _batch_blocks(inputs, 1)


def batch_to_space(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    """BatchToSpaceND(input, block_shape, crops): the inverse."""
    return _batch_blocks(inputs, -1)


def _batch_blocks(inputs: Sequence, direction: int) -> list[TensorShape]:
    x, blocks, pads = inputs[0].shape, inputs[1].constant, inputs[2].constant
    if x.rank is None or blocks is None or pads is None:
        return [UNKNOWN if x.rank is None else TensorShape([None] * x.rank)]
    blocks = [int(b) for b in np.ravel(blocks)]
    pads = np.asarray(pads).reshape(-1, 2)
    dims = list(x.as_tuple())
    product = int(np.prod(blocks))
    if direction > 0:
        dims[0] = None if dims[0] is None else dims[0] * product
    else:
        dims[0] = None if dims[0] is None else dims[0] // product
    for i, (block, (low, high)) in enumerate(zip(blocks, pads)):
        size = dims[i + 1]
        if size is None:
            continue
        dims[i + 1] = (size + low + high) // block if direction > 0 else size * block - low - high
    return [TensorShape(dims)]


def gather_nd(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    params, indices = inputs[0].shape, inputs[1].shape
    if params.rank is None or indices.rank is None or indices[-1] is None:
        return [UNKNOWN]
    return [indices[:-1].concatenate(params[indices[-1]:])]


def cumulative(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    return [inputs[0].shape]


def switch(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    """Switch: the data goes out of one of two outputs, unchanged."""
    return [inputs[0].shape, inputs[0].shape]


def merge(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    """Merge: what all its inputs agree on (so a loop's back edge, not known when the loop is
    entered, makes it unknown, as in TensorFlow), and the index of the input that arrived."""
    shape = inputs[0].shape if inputs else UNKNOWN
    for other in inputs[1:]:
        if other.shape.rank is None:
            shape = UNKNOWN
        shape = shape.most_specific_compatible_shape(other.shape)
    return [shape, TensorShape(())]


def scalar(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    return [TensorShape(())]


def enter(inputs: Sequence, attrs: dict) -> list[TensorShape]:
    """Enter: a loop invariant (`is_constant`) keeps its shape; a loop variable's is unknown."""
    return [inputs[0].shape if attrs.get("is_constant") else UNKNOWN]


_SAME = ("Relu6", "Elu", "Selu", "LeakyRelu", "Softplus", "Softsign", "Erf", "Erfc",
         "LogSoftmax", "Log1p", "Expm1", "IsNan", "IsInf", "IsFinite", "Atan", "Asin", "Acos",
         "Tan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Gelu", "Snapshot",
         "EnsureShape", "PreventGradient", "CheckNumerics", "Invert", "Cumsum", "Cumprod",
         "ReverseV2", "L2Loss", "LRN", "ClipByValue", "Inv", "Digamma", "Lgamma",
         "Exit", "NextIteration", "RefExit",
         "RefNextIteration", "Conj", "Real", "Imag", "BitwiseAnd", "QuantizeAndDequantizeV2")

FUNCTIONS = {
    "Conv2D": conv, "Conv3D": conv,
    "DepthwiseConv2dNative": depthwise_conv,
    "MaxPool": pool, "AvgPool": pool, "MaxPool3D": pool, "AvgPool3D": pool,
    "FusedBatchNorm": fused_batch_norm, "FusedBatchNormV2": fused_batch_norm,
    "FusedBatchNormV3": fused_batch_norm,
    "Einsum": einsum,
    "Pad": pad, "PadV2": pad, "MirrorPad": pad,
    "ResizeBilinear": resize, "ResizeNearestNeighbor": resize, "ResizeBicubic": resize,
    "ResizeArea": resize,
    "Slice": slice_, "Split": split, "SplitV": split_v, "Unpack": unpack,
    "BroadcastTo": broadcast_to, "IdentityN": identity_n, "AddN": add_n, "Select": select_v1,
    "OneHot": one_hot, "TopKV2": top_k,
    "Conv2DBackpropInput": conv_transpose, "Conv3DBackpropInputV2": conv_transpose,
    "DepthToSpace": depth_to_space, "SpaceToDepth": space_to_depth,
    "GatherNd": gather_nd,
    "LoopCond": scalar, "Enter": enter, "RefEnter": enter, "Switch": switch, "RefSwitch": switch, "Merge": merge, "RefMerge": merge,
    "SpaceToBatchND": space_to_batch, "BatchToSpaceND": batch_to_space,
    **{op: cumulative for op in _SAME},
}
"""Registered into savedmodel.shape_inference's table (which keeps its own entries)."""
