"""Elementwise math, comparisons, logical and bitwise ops, casts, selection and matrix products.

Every kernel returns exactly TensorFlow's dtype. Inputs of one op share a dtype, and numpy
keeps it for same-dtype operands, so results are only wrapped into 0-d arrays where ufuncs
return numpy scalars. float16 and bfloat16 are computed in float32 where TensorFlow's result
does not depend on per-step half-precision rounding (matrix products, erf), since numpy and
ml_dtypes lack some of those loops. TensorFlow returns inf and NaN without complaint; the run
loop silences numpy's floating-point warnings once per run, so these kernels do not.

Where TensorFlow's CPU results are set by the x86-64 instructions it compiles to rather than by
its documentation (float to integer casts of NaN and out-of-range values), the kernels
reproduce them explicitly, so that the runtime gives the same numbers on every platform.
"""
from __future__ import annotations

import functools
import operator
from collections.abc import Callable

import ml_dtypes
import numpy as np

from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.kernels.util import check
from savedmodel.runtime.registry import fast_path, kernel

Array = np.ndarray

HALF_TYPES = frozenset({np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)})
"""The half-precision types, which several kernels compute in float32 (shared with the
reduction and activation kernels)."""
_FLOAT_TYPES = HALF_TYPES | {np.dtype(np.float32), np.dtype(np.float64)}
_MANTISSA_BITS = {np.dtype(np.float16): 10, np.dtype(ml_dtypes.bfloat16): 7,
                  np.dtype(np.float32): 23, np.dtype(np.float64): 52}
_COMPONENT_OF_COMPLEX = {np.dtype(np.complex64): np.dtype(np.float32),
                         np.dtype(np.complex128): np.dtype(np.float64)}
_UNSIGNED_OF_WIDTH = {2: np.dtype(np.uint16), 4: np.dtype(np.uint32), 8: np.dtype(np.uint64)}


def shape_text(value) -> str:
    """A shape as TensorFlow prints it in messages, e.g. `[2,3]`."""
    return "[" + ",".join(str(d) for d in np.shape(value)) + "]"


def widened(x: Array) -> Array:
    """float16 and bfloat16 widened to float32; other types unchanged."""
    return x.astype(np.float32) if x.dtype in HALF_TYPES else x


def _is_integer(dtype: np.dtype) -> bool:
    return dtype.kind in "iu"


def _incompatible(*operands) -> KernelError:
    return KernelError("Incompatible shapes: " + " vs. ".join(shape_text(o) for o in operands))


def _broadcast(fn: Callable, *operands: Array):
    """`fn(*operands)` with broadcasting; numpy's shape ValueError becomes TensorFlow's
    InvalidArgument. Floating-point warnings are already silenced by the run loop."""
    try:
        return fn(*operands)
    except ValueError:
        raise _incompatible(*operands) from None


_TILE_MIN_SIZE = 16384
"""Below this many elements, a broadcast against a short last axis is not worth re-tiling."""
_TILE_MAX_CHANNELS = 64
_TILE_ROW = 256


def channel_tiled(fn: Callable, big: Array, small: Array, big_first: bool):
    """`fn(big, small)` (or `fn(small, big)`) where `small` is a vector along `big`'s last axis,
    computed on rows of at least _TILE_ROW elements with `small` repeated to match: numpy's
    inner loop then runs over long rows instead of a few channels at a time, which is several
    times faster for NHWC activations and gives the same elements. None when it does not
    apply."""
    channels = small.shape[0]
    shape = big.shape
    if (big.ndim < 3 or channels >= _TILE_MAX_CHANNELS or big.size < _TILE_MIN_SIZE
            or shape[-1] != channels or not big.flags.c_contiguous or small.dtype != big.dtype):
        return None
    repeat = 1
    for dim in reversed(shape[1:-1]):
        repeat *= dim
        if repeat * channels >= _TILE_ROW:
            break
    tiled = np.empty((repeat, channels), small.dtype)
    tiled[...] = small
    rows = big.reshape(-1, repeat * channels)
    tiled = tiled.reshape(-1)
    out = fn(rows, tiled) if big_first else fn(tiled, rows)
    return out.reshape(shape)


def _binary(fn: Callable, x: Array, y: Array) -> tuple[Array]:
    """An elementwise binary op: broadcasting, x's dtype, always an array (ufuncs return numpy
    scalars for 0-d operands)."""
    out = None
    if x.ndim != y.ndim:
        if y.ndim == 1:
            out = channel_tiled(fn, x, y, True)
        elif x.ndim == 1:
            out = channel_tiled(fn, y, x, False)
    if out is None:
        try:
            out = fn(x, y)
        except ValueError:
            raise _incompatible(x, y) from None
    if type(out) is not np.ndarray or out.dtype != x.dtype:
        out = np.asarray(out, x.dtype)
    return (out,)


def _unary(fn: Callable, x: Array) -> tuple[Array]:
    out = fn(x)
    if type(out) is not np.ndarray or out.dtype != x.dtype:
        out = np.asarray(out, x.dtype)
    return (out,)


def _named(fn: Callable, name: str) -> Callable:
    fn.__name__ = fn.__qualname__ = name
    return fn


def _binary_kernel(op: str, fn: Callable, on_integers: Callable | None = None) -> None:
    """`on_integers`: the op on Python ints, for the fast path's 0-d integer operands."""
    full = kernel(op)(_named(lambda x, y, **_: _binary(fn, x, y), op))
    fast_path(op)(lambda attrs: _binary_fast(fn, full, on_integers))


def _unary_kernel(op: str, fn: Callable) -> None:
    full = kernel(op)(_named(lambda x, **_: _unary(fn, x), op))
    fast_path(op)(lambda attrs: _unary_fast(fn, full))


def _binary_fast(fn: Callable | None, full: Callable,
                 on_integers: Callable | None) -> Callable[..., tuple]:
    """An elementwise binary kernel for operands of equal rank or a 0-d one (where `_binary`
    calls `fn` directly, without re-tiling) whose result has x's dtype, without the kernel's
    frames; everything else, errors included, goes to the kernel. `fn` None: only the 0-d
    integers below take the fast path.

    Two 0-d integers of one dtype (a loop's counters) are computed on Python ints, which is
    exact; numpy refuses a result outside the dtype, which then goes to the kernel (and wraps
    around there, as in TensorFlow). A ufunc on 0-d arrays costs several times more."""
    array = np.array

    def binary_fast(x, y):
        try:
            if on_integers is not None and not x.ndim and not y.ndim and x.dtype == y.dtype \
                    and x.dtype.kind in "iu":
                return (array(on_integers(x.item(), y.item()), x.dtype),)
            if fn is not None and (x.ndim == y.ndim or not x.ndim or not y.ndim):
                out = _of_dtype(fn(x, y), x.dtype)
                if out is not None:
                    return (out,)
        except Exception:  # noqa: BLE001  (the kernel reports it as it always has)
            pass
        return full(x, y)
    return binary_fast


def _unary_fast(fn: Callable, full: Callable) -> Callable[..., tuple]:
    """`_unary` for results of x's dtype, without the kernel's frames."""
    def unary_fast(x):
        try:
            out = _of_dtype(fn(x), x.dtype)
            if out is not None:
                return (out,)
        except Exception:  # noqa: BLE001  (the kernel reports it as it always has)
            pass
        return full(x)
    return unary_fast


def _of_dtype(out, dtype: np.dtype) -> Array | None:
    """A ufunc's result as an array (0-d operands give numpy scalars), if it has `dtype`."""
    if type(out) is not np.ndarray:
        out = np.asarray(out)
    return out if out.dtype == dtype else None


# --- Arithmetic -------------------------------------------------------------------------------

_binary_kernel("Add", np.add, operator.add)        # bytes (DT_STRING) too: object arrays concatenate
_binary_kernel("AddV2", np.add, operator.add)
_binary_kernel("Sub", np.subtract, operator.sub)
_binary_kernel("Mul", np.multiply, operator.mul)
_binary_kernel("Maximum", np.maximum)  # np.maximum and TensorFlow both propagate NaN
_binary_kernel("Minimum", np.minimum)


def _require_nonzero(y: Array) -> None:
    """TensorFlow checks integer divisors on the CPU instead of letting the division trap."""
    if _is_integer(y.dtype):
        check(bool(y) if not y.ndim else bool(np.logical_and.reduce(y, axis=None)),
              "Integer division by zero")


def _truncating_int_div(x: Array, y: Array) -> Array:
    """C's integer division (toward zero) from numpy's floor division; INT_MIN / -1 wraps to
    INT_MIN as on TensorFlow's CPU."""
    quotient = np.floor_divide(x, y)
    quotient += (np.fmod(x, y) != 0) & ((x < 0) != (y < 0))
    return quotient


def _truncated_float_div(x: Array, y: Array) -> Array:
    return np.trunc(np.true_divide(x, y))


def _floor_float_div(x: Array, y: Array) -> Array:
    """floor(x / y), which differs from numpy's floor_divide (e.g. 1 // 0.1 is 9 in numpy and
    10 in TensorFlow)."""
    return np.floor(np.true_divide(x, y))


def _floor_float_mod(x: Array, y: Array) -> Array:
    """The truncated remainder moved into the divisor's sign; unlike np.mod, a zero result keeps
    the sign of x, as TensorFlow's does."""
    remainder = np.fmod(x, y)
    return np.where((remainder != 0) & ((remainder < 0) != (y < 0)), remainder + y, remainder)


@kernel("Div")
def div(x: Array, y: Array, **_) -> tuple[Array]:
    """Integers divide toward zero (C semantics); everything else is true division."""
    if _is_integer(x.dtype):
        _require_nonzero(y)
        return _binary(_truncating_int_div, x, y)
    return _binary(np.true_divide, x, y)


@kernel("RealDiv")
def real_div(x: Array, y: Array, **_) -> tuple[Array]:
    return div(x, y)


@kernel("TruncateDiv")
def truncate_div(x: Array, y: Array, **_) -> tuple[Array]:
    if _is_integer(x.dtype):
        _require_nonzero(y)
        return _binary(_truncating_int_div, x, y)
    return _binary(_truncated_float_div, x, y)


@kernel("FloorDiv")
def floor_div(x: Array, y: Array, **_) -> tuple[Array]:
    if _is_integer(x.dtype):
        _require_nonzero(y)
        return _binary(np.floor_divide, x, y)
    return _binary(_floor_float_div, x, y)


@kernel("FloorMod")
def floor_mod(x: Array, y: Array, **_) -> tuple[Array]:
    if _is_integer(x.dtype):
        _require_nonzero(y)
        return _binary(np.mod, x, y)
    return _binary(_floor_float_mod, x, y)


def _integer_scalars_fast(op: str, full: Callable, on_integers: Callable) -> None:
    """A fast path for two 0-d integers of one dtype (a loop's counters and indices) only,
    computed on Python ints where `on_integers` means the same as the kernel."""
    fast_path(op)(lambda attrs: _binary_fast(None, full, on_integers))


_integer_scalars_fast("FloorMod", floor_mod, operator.mod)
_integer_scalars_fast("FloorDiv", floor_div, operator.floordiv)


@kernel("TruncateMod", "Mod")
def truncate_mod(x: Array, y: Array, **_) -> tuple[Array]:
    """C's fmod for integers and floats alike: the remainder takes the sign of x."""
    _require_nonzero(y)
    return _binary(np.fmod, x, y)


def _div_no_nan(x: Array, y: Array) -> Array:
    """0 wherever y is 0, even for x = NaN or inf."""
    return np.where(y == 0, np.zeros((), x.dtype), np.true_divide(x, y))


_binary_kernel("DivNoNan", _div_no_nan)


def _complex_pow(x: Array, y: Array) -> Array:
    """exp(y log x), TensorFlow's formula, which (unlike numpy) makes 0 ** 0 NaN."""
    return np.exp(y * np.log(x))


@kernel("Pow")
def pow_(x: Array, y: Array, **_) -> tuple[Array]:
    if _is_integer(x.dtype):
        check(not np.any(y < 0), "Integers to negative integer powers are not allowed")
    return _binary(_complex_pow if x.dtype.kind == "c" else np.power, x, y)


def _squared_difference(x: Array, y: Array) -> Array:
    difference = np.subtract(x, y)
    if difference.dtype.kind == "c":
        return difference * np.conj(difference)
    return difference * difference


_binary_kernel("SquaredDifference", _squared_difference)


@kernel("Atan2")
def atan2(y: Array, x: Array, **_) -> tuple[Array]:
    """TensorFlow names the inputs (y, x), in that order."""
    return _binary(np.arctan2, y, x)


@kernel("AddN")
def add_n(*inputs: Array, **_) -> tuple[Array]:
    """Sums same-shaped tensors; unlike Add, AddN does not broadcast."""
    first = np.asarray(inputs[0])
    for other in inputs[1:]:
        if np.shape(other) != first.shape:
            raise KernelError("Inputs to operation AddN must have the same size and shape.  "
                              f"Input 0: {shape_text(first)} != input: {shape_text(other)}")
    total = first.copy()
    for other in inputs[1:]:
        np.add(total, other, out=total)
    return (total,)


@kernel("ClipByValue")
def clip_by_value(t: Array, clip_value_min: Array, clip_value_max: Array, **_) -> tuple[Array]:
    """min(max) in TensorFlow's order and comparison form: the upper bound is applied first, so
    min > max gives min, a NaN bound clips nothing, and NaN in `t` stays NaN."""
    t = np.asarray(t)
    for name, bound in (("clip_value_min", clip_value_min), ("clip_value_max", clip_value_max)):
        if np.ndim(bound) != 0 and np.shape(bound) != t.shape:
            raise KernelError(f"{name} must be either of the same shape as input, or a scalar. "
                              f"input shape: {shape_text(t)} {name} shape: {shape_text(bound)}")
    upper = np.where(clip_value_max < t, clip_value_max, t)
    return (np.where(upper < clip_value_min, clip_value_min, upper).astype(t.dtype, copy=False),)


# --- Unary math -------------------------------------------------------------------------------

_unary_kernel("Neg", np.negative)
_unary_kernel("Abs", np.abs)
_unary_kernel("Sign", np.sign)      # NaN stays NaN; numpy 2 gives z/|z| for complex, as TF does
_unary_kernel("Square", np.square)
_unary_kernel("Sqrt", np.sqrt)
_unary_kernel("Reciprocal", np.reciprocal)
_unary_kernel("Inv", np.reciprocal)
_unary_kernel("Exp", np.exp)
_unary_kernel("Expm1", np.expm1)
_unary_kernel("Log", np.log)
_unary_kernel("Log1p", np.log1p)
_unary_kernel("Sin", np.sin)
_unary_kernel("Cos", np.cos)
_unary_kernel("Tan", np.tan)
_unary_kernel("Asin", np.arcsin)
_unary_kernel("Acos", np.arccos)
_unary_kernel("Atan", np.arctan)
_unary_kernel("Sinh", np.sinh)
_unary_kernel("Cosh", np.cosh)
_unary_kernel("Tanh", np.tanh)
_unary_kernel("Asinh", np.arcsinh)
_unary_kernel("Acosh", np.arccosh)
_unary_kernel("Atanh", np.arctanh)
_unary_kernel("Floor", np.floor)
_unary_kernel("Ceil", np.ceil)
_unary_kernel("Rint", np.rint)       # rint rounds half to even, like TensorFlow's Rint and Round


@kernel("Rsqrt")
def rsqrt(x: Array, **_) -> tuple[Array]:
    """Computed wide and rounded once, as TensorFlow does for half types."""
    if x.dtype in HALF_TYPES:
        return (np.asarray(np.reciprocal(np.sqrt(x.astype(np.float32))), x.dtype),)
    return _unary(_rsqrt, x)


def _rsqrt(x: Array) -> Array:
    out = np.sqrt(x)
    return np.reciprocal(out, out=out) if type(out) is np.ndarray else np.reciprocal(out)


@kernel("Round")
def round_(x: Array, **_) -> tuple[Array]:
    """Half to even. Integers are returned unchanged (TensorFlow 2.21's CPU kernel returns 0
    for every int32/int64 element, which is taken to be a bug and not reproduced)."""
    x = np.asarray(x)
    if _is_integer(x.dtype):
        return (x.copy(),)
    return _unary(np.rint, x)


@kernel("IsNan")
def is_nan(x: Array, **_) -> tuple[Array]:
    return (np.asarray(np.isnan(x)),)


@kernel("IsInf")
def is_inf(x: Array, **_) -> tuple[Array]:
    return (np.asarray(np.isinf(x)),)


@kernel("IsFinite")
def is_finite(x: Array, **_) -> tuple[Array]:
    return (np.asarray(np.isfinite(x)),)


def _series_coefficients(count: int) -> tuple[float, ...]:
    """2^n / (2n+1)!! for n < count, highest first, for Horner's rule."""
    coefficients = [1.0]
    for n in range(1, count):
        coefficients.append(coefficients[-1] * 2.0 / (2 * n + 1))
    return tuple(reversed(coefficients))


_TWO_OVER_SQRT_PI = 1.1283791670955126
_ONE_OVER_SQRT_PI = 0.5641895835477563
_SERIES_LIMIT = 2.0
# (series coefficients, continued-fraction depth): enough for double precision at |x| = 2, the
# worst case of both expansions, and a cheaper pair that is ample for float32 and half types.
_ERF_PRECISION = {True: (_series_coefficients(30), 40), False: (_series_coefficients(22), 20)}


def _erf_series(a: Array, coefficients: tuple[float, ...]) -> Array:
    """erf(a) for 0 <= a < 2 from exp(-a^2) * sum 2^n a^(2n+1) / (2n+1)!!, whose terms are all
    positive, so nothing cancels."""
    square = a * a
    total = np.full_like(a, coefficients[0])
    for coefficient in coefficients[1:]:
        total *= square
        total += coefficient
    return _TWO_OVER_SQRT_PI * np.exp(-square) * a * total


def scaled_erfc_tail(a: Array, depth: int = 40) -> Array:
    """exp(a^2) erfc(a) for a >= 2 (and NaN, inf) from Laplace's continued fraction, evaluated
    from the tail (shared with the special functions' inverses of erfc)."""
    tail = np.zeros_like(a)
    for n in range(depth, 0, -1):
        tail = (0.5 * n) / (a + tail)
    return _ONE_OVER_SQRT_PI / (a + tail)


def _erfc_fraction(a: Array, depth: int) -> Array:
    """erfc(a) for a >= 2; the result keeps its relative accuracy far into the tail, where
    1 - erf(a) would be all rounding error."""
    return np.exp(-a * a) * scaled_erfc_tail(a, depth)


def _erf_and_erfc(x: Array) -> tuple[Array, Array]:
    """(erf(|x|), erfc(|x|)) in float64; numpy has no erf. Each is computed directly where it is
    small (the series below 2, the fraction above) and as 1 minus the other elsewhere."""
    coefficients, depth = _ERF_PRECISION[x.dtype == np.float64]
    a = np.abs(x.astype(np.float64))
    near = a < _SERIES_LIMIT
    erf_of_abs, erfc_of_abs = np.empty_like(a), np.empty_like(a)
    if near.any():
        erf_of_abs[near] = _erf_series(a[near], coefficients)
        erfc_of_abs[near] = 1.0 - erf_of_abs[near]
    if not near.all():
        far = ~near
        erfc_of_abs[far] = _erfc_fraction(a[far], depth)
        erf_of_abs[far] = 1.0 - erfc_of_abs[far]
    return erf_of_abs, erfc_of_abs


# erf(x)/x = P(x^2)/Q(x^2) for |x| <= 4, highest power first (tools/fit_rational.py; relative
# error 2.5e-8, below float32's half ulp). erf(4) rounds to 1 in float32, so |x| is clamped there.
_ERF32_P = (1.9867702252402622e-06, 0.00028456519966912186, 0.0038833534527227087,
            0.053101786765394676, 0.1935454073087533, 1.1283791393311382)
_ERF32_Q = (3.7420007166532746e-05, 0.001185571407203649, 0.015207276293719986,
            0.11535013690037753, 0.5048577073034618, 1.0)
_ERF32_CLAMP = np.float32(4.0)


def _horner32(coefficients: tuple[float, ...], t: Array) -> Array:
    total = np.full_like(t, coefficients[0])
    for coefficient in coefficients[1:]:
        total *= t
        total += np.float32(coefficient)
    return total


def _erf32(x: Array) -> Array:
    """erf in float32 from one rational function, in place on few temporaries: exact GELU calls
    Erf on whole activation tensors, where the float64 series costs 15 times more. NaN stays
    NaN, +-inf give +-1, -0 gives -0."""
    wide = x if x.dtype == np.float32 else x.astype(np.float32)
    clamped = np.clip(wide, -_ERF32_CLAMP, _ERF32_CLAMP)
    square = clamped * clamped
    out = _horner32(_ERF32_P, square)
    out *= clamped
    out /= _horner32(_ERF32_Q, square)
    return out


# exp(x^2) erfc(x) = P(x)/Q(x) for 0.5 <= x <= 10.1 (tools/fit_rational.py; relative error
# 2.4e-8). erfc(10.1) underflows float32, so x is clamped there.
_ERFC32_P = (7.006902686721009e-07, 0.10716356895811263, 0.5001725141500314,
             1.0450639775592279, 0.9999187805300841)
_ERFC32_Q = (0.1899901125199947, 0.8857528157334299, 1.954554595651995, 2.1727459812424565, 1.0)
_ERFC32_NEAR = np.float32(0.5)
_ERFC32_CLAMP = np.float32(10.1)
_HEAD_BITS = np.uint32(0xFFFFF000)


def _exp_minus_square32(a: Array) -> Array:
    """exp(-a^2) in float32 without the error of rounding a^2 (which exp would magnify by a^2):
    a = head + tail with a 12-bit head, so head^2 is exact and a^2 - head^2 = tail (a + head)."""
    head = (a.view(np.uint32) & _HEAD_BITS).view(np.float32)
    rest = (a - head) * (a + head)
    return np.exp(-head * head) * np.exp(-rest)


def _erfc32(x: Array) -> Array:
    """erfc in float32: 1 - erf(|x|) below 0.5, exp(-x^2) times a fitted rational function
    above (keeping its relative accuracy into the tail), 2 - erfc(|x|) for x < 0."""
    wide = x if x.dtype == np.float32 else x.astype(np.float32)
    a = np.minimum(np.abs(wide), _ERFC32_CLAMP)
    tail = _exp_minus_square32(a) * _horner32(_ERFC32_P, a)
    tail /= _horner32(_ERFC32_Q, a)
    out = np.where(a < _ERFC32_NEAR, np.float32(1) - _erf32(a), tail)
    return np.where(wide < 0, np.float32(2) - out, out)


_BLOCK = 16384
"""Elements per block for the float32 approximations: their ~25 passes then run over arrays
that stay in the CPU's cache, about twice as fast as passes over a whole activation tensor."""


def _blockwise(fn: Callable[[Array], Array], x: Array) -> Array:
    """fn(x) (elementwise, float32 result) computed block by block."""
    if x.size <= _BLOCK:
        return np.asarray(fn(x))
    flat = x.reshape(-1)
    out = np.empty(flat.shape, np.float32)
    for start in range(0, flat.size, _BLOCK):
        out[start:start + _BLOCK] = fn(flat[start:start + _BLOCK])
    return out.reshape(x.shape)


@kernel("Erf")
def erf(x: Array, **_) -> tuple[Array]:
    """float32 and half types from a float32 rational approximation (within 7 float32 ulps);
    float64 from the series and continued fraction below, to double precision."""
    x = np.asarray(x)
    if x.dtype != np.float64:
        return (_blockwise(_erf32, x).astype(x.dtype, copy=False),)
    erf_of_abs, _ = _erf_and_erfc(x)
    return (np.asarray(np.copysign(erf_of_abs, x)),)


@kernel("Erfc")
def erfc(x: Array, **_) -> tuple[Array]:
    """float32 and half types from float32 approximations (within a few float32 ulps); float64
    to double precision."""
    x = np.asarray(x)
    if x.dtype != np.float64:
        return (_blockwise(_erfc32, x).astype(x.dtype, copy=False),)
    _, erfc_of_abs = _erf_and_erfc(x)
    return (np.where(x < 0, 2.0 - erfc_of_abs, erfc_of_abs).astype(x.dtype),)


# --- Comparisons, logic, bits -----------------------------------------------------------------

def _compare(fn: Callable, x: Array, y: Array) -> tuple[Array]:
    """A comparison or logical op: bool results, always an array."""
    try:
        out = fn(x, y)
    except ValueError:
        raise _incompatible(x, y) from None
    return (out if type(out) is np.ndarray else np.asarray(out),)


def _equality(fn: Callable, x, y, incompatible_shape_error: bool, mismatch: bool) -> tuple[Array]:
    """With incompatible_shape_error=False, TensorFlow answers shapes that do not broadcast with
    one scalar: unequal."""
    try:
        return _compare(fn, x, y)
    except KernelError:
        if incompatible_shape_error:
            raise
        return (np.array(mismatch),)


@kernel("Equal")
def equal(x: Array, y: Array, *, incompatible_shape_error: bool = True, **_) -> tuple[Array]:
    return _equality(np.equal, x, y, incompatible_shape_error, False)


@kernel("NotEqual")
def not_equal(x: Array, y: Array, *, incompatible_shape_error: bool = True, **_) -> tuple[Array]:
    return _equality(np.not_equal, x, y, incompatible_shape_error, True)


def _comparison_kernel(op: str, fn: Callable, on_scalars: Callable, kinds: str) -> None:
    """`on_scalars`: the op on Python numbers of the dtype kinds `kinds`, for the fast path."""
    full = kernel(op)(_named(lambda x, y, **_: _compare(fn, x, y), op))
    fast_path(op)(lambda attrs: _compare_fast(fn, full, on_scalars, kinds))


def _compare_fast(fn: Callable, full: Callable, on_scalars: Callable, kinds: str) -> Callable[..., tuple]:
    """`_compare` without the kernel's frames; errors go to the kernel. Two 0-d operands of one
    dtype of `kinds` (a loop's condition) are compared as Python numbers, which hold their
    values exactly and compare them (NaN included) as IEEE does."""
    asarray, array = np.asarray, np.array

    def compare_fast(x, y):
        try:
            if not x.ndim and not y.ndim and x.dtype == y.dtype and x.dtype.kind in kinds:
                return (array(on_scalars(x.item(), y.item())),)
            out = fn(x, y)
        except Exception:  # noqa: BLE001  (the kernel reports it as it always has)
            return full(x, y)
        return (out if type(out) is np.ndarray else asarray(out),)
    return compare_fast


_comparison_kernel("Less", np.less, operator.lt, "biuf")
_comparison_kernel("LessEqual", np.less_equal, operator.le, "biuf")
_comparison_kernel("Greater", np.greater, operator.gt, "biuf")
_comparison_kernel("GreaterEqual", np.greater_equal, operator.ge, "biuf")
_comparison_kernel("LogicalAnd", np.logical_and, operator.and_, "b")
_comparison_kernel("LogicalOr", np.logical_or, operator.or_, "b")
_unary_kernel("LogicalNot", np.logical_not)
_binary_kernel("BitwiseAnd", np.bitwise_and)
_binary_kernel("BitwiseOr", np.bitwise_or)
_binary_kernel("BitwiseXor", np.bitwise_xor)
_unary_kernel("Invert", np.invert)


def _clamped_shift(shift: Callable) -> Callable:
    """TensorFlow clamps the shift amount into [0, bits - 1]; numpy would give 0 (or -1) for
    over-wide shifts instead."""
    return lambda x, y: shift(x, np.clip(y, 0, 8 * x.dtype.itemsize - 1))


_binary_kernel("LeftShift", _clamped_shift(np.left_shift))
_binary_kernel("RightShift", _clamped_shift(np.right_shift))


# --- Cast -------------------------------------------------------------------------------------

def _x86_int32(wide: Array) -> Array:
    """cvttsd2si into 32 bits: truncation toward zero, and INT32_MIN for NaN and out of range."""
    valid = (wide > -2147483649.0) & (wide < 2147483648.0)
    return np.where(valid, wide, -2147483648.0).astype(np.int32)


def _x86_int64(wide: Array) -> Array:
    """cvttsd2si into 64 bits: truncation toward zero, and INT64_MIN for NaN and out of range."""
    valid = (wide >= -9223372036854775808.0) & (wide < 9223372036854775808.0)
    return np.where(valid, wide, -9223372036854775808.0).astype(np.int64)


def _x86_unsigned(wide: Array, signed: Callable[[Array], Array], bits: int) -> Array:
    """The compiler's unsigned conversion: the signed one, and where that overflowed, the
    signed conversion of x - 2^(bits-1) with the top bit set."""
    low = signed(wide)
    high = signed(wide - float(2 ** (bits - 1)))
    return (low | (high & (low >> (bits - 1)))).view(_UNSIGNED_OF_WIDTH[bits // 8])


def _float_to_int(x: Array, dst: np.dtype) -> Array:
    """TensorFlow's CPU float-to-integer cast as its vectorised (AVX2) loop computes it: convert
    to int32 (or int64) with x86's truncating instruction, whose answer for NaN and out-of-range
    values is the minimum integer, then narrow with saturation. float64 and float16 narrow to
    uint8 through uint16 reinterpreted as int16, so values of 32768 and above become 0.

    TensorFlow's scalar loop, which handles the last (size mod 8..32) elements and whole small
    tensors, wraps instead of saturating for 8-, 16- and unsigned 32-bit targets; results for
    NaN and out-of-range values there differ. In-range values agree everywhere."""
    wide = x.astype(np.float64)
    if dst == np.uint64:
        return _x86_unsigned(wide, _x86_int64, 64)
    if dst == np.int64:
        return _x86_int64(wide)
    if dst == np.uint32:
        return _x86_unsigned(wide, _x86_int32, 32)
    as_int32 = _x86_int32(wide)
    if dst == np.int32:
        return as_int32
    if dst == np.uint8 and x.dtype in (np.float64, np.float16):
        as_int32 = np.clip(as_int32, 0, 65535).astype(np.uint16).view(np.int16)
    info = np.iinfo(dst)
    return np.clip(as_int32, info.min, info.max).astype(dst)


def _zero_dropped_bits(x: Array, dst: np.dtype) -> Array:
    """Truncate=True: clear the mantissa bits the target cannot hold, so the cast truncates
    toward zero instead of rounding. NaN stays NaN."""
    dropped = _MANTISSA_BITS[x.dtype] - _MANTISSA_BITS[dst]
    if dropped <= 0:
        return x
    bits = x.view(_UNSIGNED_OF_WIDTH[x.dtype.itemsize])
    kept = bits & bits.dtype.type((1 << 8 * bits.itemsize) - (1 << dropped))
    return np.where(np.isnan(x), x, kept.view(x.dtype))


def _truncated_cast(x: Array, dst: np.dtype) -> Array:
    """Truncate=True, applied per component for complex values."""
    part = _COMPONENT_OF_COMPLEX.get(dst, dst)
    if part not in _MANTISSA_BITS:
        return x.astype(dst)
    if x.dtype.kind == "c":
        result = np.empty(x.shape, dst)
        result.real = _zero_dropped_bits(x.real, part)
        result.imag = _zero_dropped_bits(x.imag, part)
        return result
    return _zero_dropped_bits(x, part).astype(dst)


@kernel("Cast")
def cast(x: Array, *, DstT, Truncate: bool = False, **_) -> tuple[Array]:
    """Complex to real keeps the real part (so 1j casts to False); float to integer saturates
    as `_float_to_int` describes; Truncate=True truncates float mantissas instead of rounding
    them."""
    x = np.asarray(x)
    dst = DstT.numpy
    if dst is None or dst.kind == "O" or x.dtype.kind == "O":
        raise KernelError(f"Cast {x.dtype} to {DstT.name} is not supported")
    if x.dtype == dst:
        return (x.copy(),)
    if x.dtype.kind == "c" and dst.kind != "c":
        x = x.real
    if x.dtype in _FLOAT_TYPES and _is_integer(dst):
        return (np.asarray(_float_to_int(x, dst)),)
    if Truncate and (x.dtype in _FLOAT_TYPES or x.dtype.kind == "c"):
        return (np.asarray(_truncated_cast(x, dst)),)
    return (x.astype(dst),)


# --- Selection --------------------------------------------------------------------------------

@kernel("Select")
def select(condition: Array, x: Array, y: Array, **_) -> tuple[Array]:
    """TF1 semantics: no broadcasting, but a vector condition picks whole rows (first
    dimension) and a scalar condition picks a whole tensor."""
    if x.shape != y.shape:
        raise KernelError(f"'then' and 'else' must have the same size.  but received: "
                          f"{shape_text(x)} vs. {shape_text(y)}")
    if condition.ndim == 0:
        return ((x if condition else y).copy(),)
    if condition.shape != x.shape:
        if condition.ndim != 1 or x.ndim < 1:
            raise KernelError("Inputs to operation Select must have the same size and shape.  "
                              f"Input 0: {shape_text(condition)} != input 1: {shape_text(x)}")
        if condition.shape[0] != x.shape[0]:
            raise KernelError("Number of batches of 'then' must match size of 'cond', but saw: "
                              f"{x.shape[0]} vs. {condition.shape[0]}")
        condition = condition.reshape(condition.shape + (1,) * (x.ndim - 1))
    return (np.where(condition, x, y),)


@kernel("SelectV2")
def select_v2(condition: Array, t: Array, e: Array, **_) -> tuple[Array]:
    try:
        out = np.where(condition, t, e)
    except ValueError:
        raise _incompatible(condition, t, e) from None
    return (out,)


# --- Bias and matrix products -----------------------------------------------------------------

@kernel("BiasAdd", "BiasAddV1")
def bias_add(value: Array, bias: Array, *, data_format: str = "NHWC", **_) -> tuple[Array]:
    """The channel axis is the last for NHWC and the second for NCHW (which for a matrix is
    also the last)."""
    if value.ndim < 2 or bias.ndim != 1:
        raise KernelError(f"BiasAdd needs an input of rank >= 2 and a 1D bias: "
                          f"{shape_text(value)}, {shape_text(bias)}")
    channel_axis = 1 if data_format.startswith("NC") else value.ndim - 1
    if bias.shape[0] != value.shape[channel_axis]:
        raise KernelError("Must provide as many biases as the channel dimension of the input "
                          f"tensor: {shape_text(bias)} vs. {shape_text(value)}")
    if channel_axis != value.ndim - 1:
        bias = bias.reshape(bias.shape + (1,) * (value.ndim - 1 - channel_axis))
    return _binary(np.add, value, bias)


@fast_path("BiasAdd", "BiasAddV1")
def _bias_add_fast(attrs: dict) -> Callable[..., tuple]:
    """A matrix plus a bias of its dtype along its last axis (the channel axis of a matrix in
    either data format, where the kernel adds directly); anything else goes to the kernel."""
    add = np.add

    def bias_add_fast(value, bias):
        try:
            if (value.ndim == 2 and bias.ndim == 1 and value.dtype == bias.dtype
                    and bias.shape[0] == value.shape[1]):
                return (add(value, bias),)
        except Exception:  # noqa: BLE001  (the kernel reports it as it always has)
            pass
        return bias_add(value, bias, **attrs)
    return bias_add_fast


def _matmul(x: Array, y: Array, out: np.dtype) -> Array:
    """x @ y in `out`'s precision: half types are multiplied in float32 (numpy has no bfloat16
    matmul) and rounded once."""
    if out in HALF_TYPES:
        x = x.astype(out, copy=False).astype(np.float32)
        y = y.astype(out, copy=False).astype(np.float32)
        return np.matmul(x, y).astype(out)
    if x.dtype != out:
        x = x.astype(out)
    if y.dtype != out:
        y = y.astype(out)
    return np.matmul(x, y)


def _adjoint(x: Array, adjoint: bool) -> Array:
    if not adjoint:
        return x
    swapped = np.swapaxes(x, -1, -2)
    return np.conj(swapped) if x.dtype.kind == "c" else swapped


@kernel("MatMul")
def mat_mul(a: Array, b: Array, *, transpose_a: bool = False, transpose_b: bool = False,
            **_) -> tuple[Array]:
    """MatMul transposes without conjugating, even for complex inputs."""
    if a.ndim != b.ndim:
        raise KernelError(f"In[0] and In[1] has different ndims: {shape_text(a)} vs. "
                          f"{shape_text(b)}")
    if a.ndim != 2:
        raise KernelError(f"In[0] and In[1] ndims must be == 2: {a.ndim}")
    a, b = (a.T if transpose_a else a), (b.T if transpose_b else b)
    if a.shape[1] != b.shape[0]:
        raise KernelError(f"Matrix size-incompatible: In[0]: {shape_text(a)}, In[1]: "
                          f"{shape_text(b)}")
    return (_matmul(a, b, a.dtype),)


@fast_path("MatMul")
def _mat_mul_fast(attrs: dict) -> Callable[..., tuple] | None:
    """Two matrices of the node's dtype `T` go straight to np.matmul, with the node's
    transposes. The guard compares dtype objects by identity first (numpy's native-order
    dtypes are singletons, so this is usually one pointer comparison) and by equality only
    when that fails (`newbyteorder("<")` gives an equal dtype that is another object);
    anything else, a half type (multiplied in float32 by the kernel) or a shape mismatch, goes
    to the kernel."""
    node_type = attrs.get("T")
    if node_type is None or node_type.numpy is None or node_type.numpy in HALF_TYPES:
        return None
    dtype = node_type.numpy
    transpose_a, transpose_b = attrs.get("transpose_a", False), attrs.get("transpose_b", False)
    matmul = np.matmul

    def mat_mul_fast(a, b):
        if ((a.dtype is dtype or a.dtype == dtype) and (b.dtype is dtype or b.dtype == dtype)
                and a.ndim == 2 and b.ndim == 2):
            try:
                return (matmul(a.T if transpose_a else a, b.T if transpose_b else b),)
            except ValueError:
                pass
        return mat_mul(a, b, **attrs)
    return mat_mul_fast


def _batches_match(x: tuple, y: tuple, broadcast: bool) -> bool:
    """Equal batch dimensions, or (for BatchMatMulV2 and V3) broadcastable ones."""
    if not broadcast:
        return x == y
    return all(a == b or a == 1 or b == 1 for a, b in zip(x[::-1], y[::-1]))


def _batch_mat_mul(x: Array, y: Array, adj_x: bool, adj_y: bool, out: np.dtype,
                   broadcast: bool) -> tuple[Array]:
    if x.ndim < 2 or y.ndim < 2:
        raise KernelError(f"In[0] and In[1] ndims must be >= 2: {shape_text(x)}, "
                          f"{shape_text(y)}")
    x, y = _adjoint(x, adj_x), _adjoint(y, adj_y)
    if x.shape[-1] != y.shape[-2] or not _batches_match(x.shape[:-2], y.shape[:-2], broadcast):
        raise KernelError(f"Matrix size-incompatible: In[0]: {shape_text(x)}, In[1]: "
                          f"{shape_text(y)}")
    return (_matmul(x, y, out),)


@kernel("BatchMatMul")
def batch_mat_mul(x: Array, y: Array, *, adj_x: bool = False, adj_y: bool = False,
                  **_) -> tuple[Array]:
    """The first version requires equal batch dimensions."""
    return _batch_mat_mul(x, y, adj_x, adj_y, x.dtype, broadcast=False)


@kernel("BatchMatMulV2")
def batch_mat_mul_v2(x: Array, y: Array, *, adj_x: bool = False, adj_y: bool = False,
                     **_) -> tuple[Array]:
    return _batch_mat_mul(x, y, adj_x, adj_y, x.dtype, broadcast=True)


@kernel("BatchMatMulV3")
def batch_mat_mul_v3(x: Array, y: Array, *, Tout, adj_x: bool = False, adj_y: bool = False,
                     **_) -> tuple[Array]:
    """Operands of other types (e.g. int8) are converted to Tout before multiplying."""
    return _batch_mat_mul(x, y, adj_x, adj_y, Tout.numpy, broadcast=True)


@kernel("Einsum")
def einsum(*inputs: Array, equation: str, **_) -> tuple[Array]:
    """TensorFlow accepts only explicit ('->') equations with one or two operands."""
    if "->" not in equation or len(inputs) not in (1, 2):
        raise KernelError(f"Einsum needs an explicit equation ('->') and 1 or 2 inputs: "
                          f"{equation!r} with {len(inputs)}")
    dtype = inputs[0].dtype
    operands = [widened(i) for i in inputs]
    try:
        if len(operands) == 1:
            result = np.einsum(equation, *operands)
        else:
            result = _pairwise_einsum(equation, *operands)
    except ValueError as err:
        raise KernelError(f"Einsum {equation!r} on "
                          f"{', '.join(shape_text(o) for o in operands)}: {err}") from None
    return (np.asarray(result).astype(dtype, copy=False),)


def _numpy_pair_contraction():
    """numpy's own step for contracting two einsum operands (`bmm_einsum`, a batched matmul),
    if this numpy's np.einsum(optimize=...) contracts pairs with it; else None."""
    try:
        from numpy._core import einsumfunc
        implementation = getattr(einsumfunc.einsum, "_implementation", einsumfunc.einsum)
        if "bmm_einsum" in implementation.__code__.co_names:
            return einsumfunc.bmm_einsum
    except (ImportError, AttributeError):
        pass
    return None


_bmm_einsum = _numpy_pair_contraction()


def _pairwise_einsum(equation: str, a: Array, b: Array) -> Array:
    """np.einsum(equation, a, b, optimize=True), without re-planning the contraction on every
    call: numpy's planning (einsum_path) depends only on the equation and the shapes and costs
    more than a small contraction itself, so its one pairwise step is cached and replayed the
    way np.einsum replays it."""
    step = _pairwise_step(equation, a.shape, b.shape) if _bmm_einsum is not None else None
    if step is None:
        return np.einsum(equation, a, b, optimize=True)
    order, subscripts = step
    operands = (a, b)
    return _bmm_einsum(subscripts, operands[order[0]], operands[order[1]])


@functools.lru_cache(maxsize=256)
def _pairwise_step(equation: str, shape_a: tuple, shape_b: tuple):
    """(operand order, subscripts) of np.einsum's single contraction of two operands, or None
    when its plan has any other form."""
    placeholders = [np.broadcast_to(np.zeros((), np.float32), shape) for shape in (shape_a, shape_b)]
    _, contractions = np.einsum_path(equation, *placeholders, optimize=True, einsum_call=True)
    if len(contractions) != 1 or len(contractions[0][0]) != 2:
        return None
    positions, subscripts = contractions[0][0], contractions[0][1]
    pool = [0, 1]
    return tuple(pool.pop(i) for i in positions), subscripts
