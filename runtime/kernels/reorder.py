"""Ops that move elements or reinterpret their bytes: Roll, ReverseSequence and Bitcast.
Values are never computed on, so every dtype the ops take works."""
from __future__ import annotations

import numpy as np

from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.kernels.util import check, normalize_axis
from savedmodel.runtime.registry import kernel


@kernel("Roll")
def roll(input, shift, axis, **_) -> tuple[np.ndarray]:
    """Elements shifted along each axis, wrapping around; shifts of a repeated axis add up."""
    x = np.asarray(input)
    check(x.ndim >= 1, "Roll: input must be 1-D or higher")
    shifts, axes = np.asarray(shift), np.asarray(axis)
    check(shifts.ndim <= 1 and shifts.dtype.kind in "iu", f"Roll: shift must be an integer "
          f"scalar or 1-D vector, got shape {list(shifts.shape)} of {shifts.dtype}")
    check(axes.ndim <= 1 and axes.dtype.kind in "iu", f"Roll: axis must be an integer scalar "
          f"or 1-D vector, got shape {list(axes.shape)} of {axes.dtype}")
    check(shifts.shape == axes.shape, f"Roll: shift and axis must have the same size, got "
          f"{list(shifts.shape)} and {list(axes.shape)}")
    axes_list = [normalize_axis(int(a), x.ndim, "Roll: axis") for a in axes.reshape(-1)]
    if x.size == 0 or not axes_list:
        return (x.copy(),)
    return (np.roll(x, [int(s) for s in shifts.reshape(-1)], axes_list),)


@kernel("ReverseSequence")
def reverse_sequence(input, seq_lengths, *, seq_dim: int, batch_dim: int = 0,
                     **_) -> tuple[np.ndarray]:
    """For each batch entry b (along batch_dim), its first seq_lengths[b] elements along seq_dim
    reversed and the rest left in place: one gather along seq_dim."""
    x, lengths = np.asarray(input), np.asarray(seq_lengths)
    op = "ReverseSequence"
    check(0 <= batch_dim < x.ndim, f"{op}: Invalid batch_dim {batch_dim} for an input of rank "
          f"{x.ndim}")
    check(0 <= seq_dim < x.ndim, f"{op}: Invalid seq_dim {seq_dim} for an input of rank {x.ndim}")
    check(seq_dim != batch_dim, f"{op}: seq_dim == batch_dim == {seq_dim}")
    check(lengths.ndim == 1, f"{op}: seq_lengths must be 1-dim, not {lengths.ndim}")
    check(lengths.size == x.shape[batch_dim], f"{op}: Length of seq_lengths != "
          f"input.dims({batch_dim}), ({lengths.size} vs. {x.shape[batch_dim]})")
    if (lengths < 0).any():
        raise KernelError(f"{op}: seq_lengths must be non-negative, got {lengths.tolist()}")
    if (lengths > x.shape[seq_dim]).any():
        at = int(np.argmax(lengths > x.shape[seq_dim]))
        raise KernelError(f"{op}: seq_lens({at}) > input.dims({seq_dim}), "
                          f"({int(lengths[at])} vs. {x.shape[seq_dim]})")
    steps = np.arange(x.shape[seq_dim])[None, :]
    limit = lengths.astype(np.int64)[:, None]
    source = np.where(steps < limit, limit - 1 - steps, steps)  # (batch, seq)
    shape = [1] * x.ndim
    shape[batch_dim], shape[seq_dim] = source.shape
    if batch_dim > seq_dim:
        source = source.T  # in axis order, so that the reshape below keeps each value in place
    index = np.broadcast_to(source.reshape(shape), x.shape)
    return (np.take_along_axis(x, index, axis=seq_dim),)


@kernel("Bitcast")
def bitcast(input, *, type, **_) -> tuple[np.ndarray]:
    """The same bytes as another type: a wider input gains a last dimension of the size ratio,
    a narrower one loses its last dimension, which must be that ratio."""
    x = np.ascontiguousarray(input)
    target = type.numpy
    check(x.dtype.kind not in "OUSb" and target.kind not in "OUSb",
          f"Bitcast: cannot bitcast from {x.dtype} to {target}")
    wide, narrow = x.dtype.itemsize, target.itemsize
    if wide == narrow:
        return (x.view(target),)
    if wide > narrow:
        return (x.reshape(-1).view(target).reshape(x.shape + (wide // narrow,)),)
    ratio = narrow // wide
    check(x.ndim >= 1 and x.shape[-1] == ratio, f"Bitcast: Cannot bitcast from {x.dtype} to "
          f"{target}: shape {list(x.shape)}")
    return (x.reshape(-1).view(target).reshape(x.shape[:-1]),)
