"""Rearrangements between space, batch and depth: SpaceToBatchND and BatchToSpaceND (which
TensorFlow 2 wraps around a convolution to dilate it: Keras's dilated Conv1D and Conv2D export
as SpaceToBatchND -> Conv2D -> BatchToSpaceND), their 4-D ancestors SpaceToBatch and
BatchToSpace, and DepthToSpace / SpaceToDepth.

Each is a pad or crop plus one reshape-transpose-reshape, the way TensorFlow's op definitions
describe them, so the copies are numpy's. Values are never computed on, so every dtype works.
TensorFlow's CPU kernels of DepthToSpace and SpaceToDepth only take NHWC; NCHW (a GPU layout) is
refused with TensorFlow's message.
"""
from __future__ import annotations

import math

import numpy as np

from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.kernels.util import check
from savedmodel.runtime.registry import kernel


def _int_array(value, what: str, op: str) -> np.ndarray:
    array = np.asarray(value)
    check(array.dtype.kind in "iu", f"{op}: {what} must be an integer tensor, got {array.dtype}")
    return array.astype(np.int64, copy=False)


def _block_and_pairs(input: np.ndarray, block_shape, pairs, what: str,
                     op: str) -> tuple[list[int], list[tuple[int, int]]]:
    """block_shape (M,) and paddings or crops (M, 2), validated against the input's rank."""
    block = _int_array(block_shape, "block_shape", op)
    pairs = _int_array(pairs, what, op)
    check(block.ndim == 1, f"{op}: block_shape must be one-dimensional, got shape "
          f"{list(block.shape)}")
    dims = block.size
    check(pairs.shape == (dims, 2), f"{op}: {what} should have shape [{dims}, 2] instead of "
          f"{list(pairs.shape)}")
    check(input.ndim >= 1 + dims, f"{op}: input rank should be >= {1 + dims} instead of "
          f"{input.ndim}")
    check(bool((block >= 1).all()), f"{op}: All values in block_shape must be positive, got "
          f"{block.tolist()}")
    check(bool((pairs >= 0).all()), f"{op}: All values in {what} must be non-negative, got "
          f"{pairs.tolist()}")
    return block.tolist(), [tuple(p) for p in pairs.tolist()]


def _space_to_batch(op: str, input, block_shape, paddings) -> np.ndarray:
    input = np.asarray(input)
    block, pads = _block_and_pairs(input, block_shape, paddings, "paddings", op)
    dims = len(block)
    widths = [(0, 0)] + pads + [(0, 0)] * (input.ndim - 1 - dims)
    padded = np.pad(input, widths) if any(map(any, pads)) else input
    batch, rest = padded.shape[0], padded.shape[1 + dims:]
    split = []
    for i, (size, b) in enumerate(zip(padded.shape[1:1 + dims], block)):
        if size % b:
            raise KernelError(f"{op}: padded_shape[{i}]={size} is not divisible by "
                              f"block_shape[{i}]={b}")
        split += [size // b, b]
    grid = padded.reshape((batch, *split, *rest))
    order = ([2 + 2 * i for i in range(dims)] + [0] + [1 + 2 * i for i in range(dims)]
             + list(range(1 + 2 * dims, grid.ndim)))
    out_shape = (batch * math.prod(block), *split[::2], *rest)
    return np.ascontiguousarray(grid.transpose(order)).reshape(out_shape)


def _batch_to_space(op: str, input, block_shape, crops) -> np.ndarray:
    input = np.asarray(input)
    block, cuts = _block_and_pairs(input, block_shape, crops, "crops", op)
    dims = len(block)
    blocks = math.prod(block)
    batch = input.shape[0]
    check(batch % blocks == 0, f"{op}: Input batch dimension ({batch}) is not divisible by "
          f"product of block sizes ({blocks})")
    spatial, rest = input.shape[1:1 + dims], input.shape[1 + dims:]
    grid = input.reshape((*block, batch // blocks, *spatial, *rest))
    order = [dims] + [i for d in range(dims) for i in (dims + 1 + d, d)] + \
        list(range(1 + 2 * dims, grid.ndim))
    full = [s * b for s, b in zip(spatial, block)]
    out = np.ascontiguousarray(grid.transpose(order)).reshape((batch // blocks, *full, *rest))
    index = [slice(None)]
    for i, (size, (start, end)) in enumerate(zip(full, cuts)):
        check(start + end <= size, f"{op}: Cropped size must be non-negative: crop_start[{i}] "
              f"= {start}, crop_end[{i}] = {end}, size {size}")
        index.append(slice(start, size - end))
    return np.ascontiguousarray(out[tuple(index)])


@kernel("SpaceToBatchND")
def space_to_batch_nd(input, block_shape, paddings, **_) -> tuple[np.ndarray]:
    return (_space_to_batch("SpaceToBatchND", input, block_shape, paddings),)


@kernel("BatchToSpaceND")
def batch_to_space_nd(input, block_shape, crops, **_) -> tuple[np.ndarray]:
    return (_batch_to_space("BatchToSpaceND", input, block_shape, crops),)


def _check_4d(input: np.ndarray, op: str) -> None:
    check(input.ndim == 4, f"{op}: input should be 4-dimensional, got shape "
          f"{list(input.shape)}")


@kernel("SpaceToBatch")
def space_to_batch(input, paddings, *, block_size: int, **_) -> tuple[np.ndarray]:
    input = np.asarray(input)
    _check_4d(input, "SpaceToBatch")
    check(block_size > 1, f"SpaceToBatch: block_size should be > 1, got {block_size}")
    return (_space_to_batch("SpaceToBatch", input, np.array([block_size] * 2), paddings),)


@kernel("BatchToSpace")
def batch_to_space(input, crops, *, block_size: int, **_) -> tuple[np.ndarray]:
    input = np.asarray(input)
    _check_4d(input, "BatchToSpace")
    check(block_size > 1, f"BatchToSpace: block_size should be > 1, got {block_size}")
    return (_batch_to_space("BatchToSpace", input, np.array([block_size] * 2), crops),)


def _depth_checks(input: np.ndarray, block_size: int, data_format: str, op: str) -> None:
    if data_format != "NHWC":
        raise KernelError(f"{op}: Only NHWC data_format supported on CPU. Got {data_format}")
    _check_4d(input, op)
    check(block_size >= 2, f"{op}: block_size must be at least 2, got {block_size}")


@kernel("DepthToSpace")
def depth_to_space(input, *, block_size: int, data_format: str = "NHWC",
                   **_) -> tuple[np.ndarray]:
    input = np.asarray(input)
    _depth_checks(input, block_size, data_format, "DepthToSpace")
    n, h, w, c = input.shape
    square = block_size * block_size
    check(c % square == 0, f"DepthToSpace: Input depth dimension {c} should be divisible by: "
          f"{square}")
    grid = input.reshape(n, h, w, block_size, block_size, c // square)
    out = np.ascontiguousarray(grid.transpose(0, 1, 3, 2, 4, 5))
    return (out.reshape(n, h * block_size, w * block_size, c // square),)


@kernel("SpaceToDepth")
def space_to_depth(input, *, block_size: int, data_format: str = "NHWC",
                   **_) -> tuple[np.ndarray]:
    input = np.asarray(input)
    _depth_checks(input, block_size, data_format, "SpaceToDepth")
    n, h, w, c = input.shape
    check(h % block_size == 0 and w % block_size == 0, f"SpaceToDepth: Image width {w} and "
          f"height {h} should be divisible by block_size: {block_size}")
    grid = input.reshape(n, h // block_size, block_size, w // block_size, block_size, c)
    out = np.ascontiguousarray(grid.transpose(0, 1, 3, 2, 4, 5))
    return (out.reshape(n, h // block_size, w // block_size, c * block_size * block_size),)
