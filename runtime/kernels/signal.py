"""Fourier transforms over the innermost 1, 2 or 3 dimensions, and the complex-number ops.

numpy.fft computes in double precision; results are rounded once to TensorFlow's output type
(complex64 for complex64 or float32 inputs), which is at least as accurate as TensorFlow's own
single-precision transform. The real transforms crop each transformed dimension to `fft_length` (the inverse one its
innermost dimension to fft_length / 2 + 1), as TensorFlow does, and ignore the imaginary parts a real signal's spectrum cannot have.
"""
from __future__ import annotations

import numpy as np

from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.kernels.math import shape_text
from savedmodel.runtime.registry import kernel

Array = np.ndarray

_COMPLEX_OF = {np.dtype(np.float32): np.dtype(np.complex64),
               np.dtype(np.float64): np.dtype(np.complex128)}
_REAL_OF = {complex_type: real for real, complex_type in _COMPLEX_OF.items()}


def _require_rank(x: Array, rank: int, op: str) -> None:
    if x.ndim < rank:
        raise KernelError(f"{op}: input must be at least rank {rank} but got: {shape_text(x)}")


def _complex_type(x: Array, op: str) -> np.dtype:
    if x.dtype.kind != "c":
        raise KernelError(f"{op}: input must be complex64 or complex128, got {x.dtype}")
    return x.dtype


def _fft(x: Array, rank: int, inverse: bool, op: str) -> tuple[Array]:
    dtype = _complex_type(x, op)
    _require_rank(x, rank, op)
    axes = tuple(range(-rank, 0))
    if x.size == 0:
        return (np.zeros(x.shape, dtype),)
    transform = np.fft.ifftn if inverse else np.fft.fftn
    return (transform(x, axes=axes).astype(dtype),)


def _complex_kernel(op: str, rank: int, inverse: bool) -> None:
    def fft(input: Array, **_) -> tuple[Array]:
        return _fft(np.asarray(input), rank, inverse, op)
    fft.__name__ = fft.__qualname__ = op.lower()
    kernel(op)(fft)


for _op, _rank in (("FFT", 1), ("FFT2D", 2), ("FFT3D", 3)):
    _complex_kernel(_op, _rank, inverse=False)
    _complex_kernel("I" + _op, _rank, inverse=True)


def _lengths(fft_length, rank: int, op: str) -> tuple[int, ...]:
    lengths = np.asarray(fft_length)
    if lengths.shape != (rank,) or lengths.dtype.kind not in "iu":
        raise KernelError(f"{op}: fft_length must be an int32 vector of {rank} elements, got "
                          f"shape {shape_text(lengths)} of {lengths.dtype}")
    if np.any(lengths < 0):
        raise KernelError(f"{op}: fft_length must be non-negative, got {lengths.tolist()}")
    return tuple(int(n) for n in lengths)


def _cropped(x: Array, sizes: tuple[int, ...], op: str) -> Array:
    """`x` with its innermost len(sizes) dimensions cropped to `sizes`; TensorFlow's kernels
    crop but do not pad (tf.signal pads before calling them), so a shorter one is an error."""
    first = x.ndim - len(sizes)
    for axis, size in enumerate(sizes, first):
        if x.shape[axis] < size:
            raise KernelError(f"{op}: Input dimension {axis} must have length of at least {size} "
                              f"but got: {x.shape[axis]}")
    return x[(Ellipsis,) + tuple(slice(0, n) for n in sizes)]


def _rfft(x: Array, fft_length, rank: int, Tcomplex, op: str) -> tuple[Array]:
    _require_rank(x, rank, op)
    sizes = _lengths(fft_length, rank, op)
    out_type = Tcomplex.numpy if Tcomplex is not None else _COMPLEX_OF[x.dtype]
    out_shape = x.shape[:x.ndim - rank] + sizes[:-1] + (sizes[-1] // 2 + 1 if sizes[-1] else 0,)
    signal = _cropped(x, sizes, op)
    if signal.size == 0:
        return (np.zeros(out_shape, out_type),)
    return (np.fft.rfftn(signal, axes=tuple(range(-rank, 0))).astype(out_type),)


def _irfft(x: Array, fft_length, rank: int, Treal, op: str) -> tuple[Array]:
    _complex_type(x, op)
    _require_rank(x, rank, op)
    sizes = _lengths(fft_length, rank, op)
    out_type = Treal.numpy if Treal is not None else _REAL_OF[x.dtype]
    out_shape = x.shape[:x.ndim - rank] + sizes
    if sizes[-1] == 0 or 0 in out_shape:
        return (np.zeros(out_shape, out_type),)
    spectrum = _cropped(x, sizes[:-1] + (sizes[-1] // 2 + 1,), op)
    if spectrum.size == 0:
        return (np.zeros(out_shape, out_type),)
    return (np.fft.irfftn(spectrum, s=sizes, axes=tuple(range(-rank, 0))).astype(out_type),)


def _real_kernels(op: str, rank: int) -> None:
    def rfft(input: Array, fft_length: Array, *, Tcomplex=None, **_) -> tuple[Array]:
        return _rfft(np.asarray(input), fft_length, rank, Tcomplex, op)

    def irfft(input: Array, fft_length: Array, *, Treal=None, **_) -> tuple[Array]:
        return _irfft(np.asarray(input), fft_length, rank, Treal, "I" + op)
    for fn, name in ((rfft, op), (irfft, "I" + op)):
        fn.__name__ = fn.__qualname__ = name.lower()
        kernel(name)(fn)


for _op, _rank in (("RFFT", 1), ("RFFT2D", 2), ("RFFT3D", 3)):
    _real_kernels(_op, _rank)


# --- Complex numbers --------------------------------------------------------------------------

@kernel("Complex")
def complex_(real: Array, imag: Array, *, Tout=None, **_) -> tuple[Array]:
    """real + i imag, broadcasting the two parts."""
    out_type = Tout.numpy if Tout is not None else _COMPLEX_OF[np.asarray(real).dtype]
    try:
        shape = np.broadcast_shapes(np.shape(real), np.shape(imag))
    except ValueError:
        raise KernelError(f"Incompatible shapes: {shape_text(real)} vs. {shape_text(imag)}") from None
    out = np.empty(shape, out_type)
    out.real = real
    out.imag = imag
    return (out,)


def _part_type(x: Array, Tout) -> np.dtype:
    return Tout.numpy if Tout is not None else _REAL_OF.get(x.dtype, x.dtype)


@kernel("Real")
def real(input: Array, *, Tout=None, **_) -> tuple[Array]:
    input = np.asarray(input)
    return (np.real(input).astype(_part_type(input, Tout)),)


@kernel("Imag")
def imag(input: Array, *, Tout=None, **_) -> tuple[Array]:
    input = np.asarray(input)
    return (np.imag(input).astype(_part_type(input, Tout)),)


@kernel("ComplexAbs")
def complex_abs(x: Array, *, Tout=None, **_) -> tuple[Array]:
    """|x| as hypot(re, im), which neither overflows nor underflows in between."""
    x = np.asarray(x)
    return (np.abs(x).astype(_part_type(x, Tout)),)


@kernel("Angle")
def angle(input: Array, *, Tout=None, **_) -> tuple[Array]:
    """atan2(im, re); for real inputs, 0 or pi by sign, as atan2(0, x) gives."""
    input = np.asarray(input)
    return (np.asarray(np.arctan2(np.imag(input), np.real(input))).astype(_part_type(input, Tout)),)


@kernel("Conj")
def conj(input: Array, **_) -> tuple[Array]:
    input = np.asarray(input)
    return (np.conj(input) if input.dtype.kind == "c" else input.copy(),)
