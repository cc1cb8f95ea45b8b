"""Kernel cases for the Fourier transforms and the complex-number ops.

TensorFlow transforms complex64 in single precision; our kernels transform in double precision
and round once, so single-precision cases allow the transform's own rounding (an error growing
with log n times the largest magnitude, hence atol in units of the input's size).
"""
import numpy as np

_rng = np.random.default_rng(20261125)
_C64, _C128 = np.complex64, np.complex128


def _real(*shape, dtype=np.float32):
    return _rng.standard_normal(shape).astype(dtype)


def _complex(*shape, dtype=_C64):
    return (_rng.standard_normal(shape) + 1j * _rng.standard_normal(shape)).astype(dtype)


def _lengths(*n):
    return np.array(n, np.int32)


def _single(rank_size: int) -> dict:
    """Tolerances for a complex64 transform over `rank_size` points of unit-sized values."""
    return {"rtol": 1e-5, "atol": 2e-6 * rank_size}


def _complex_transforms():
    found = []
    for op, rank in (("FFT", 1), ("FFT2D", 2), ("FFT3D", 3)):
        for inverse in ("", "I"):
            name = inverse + op
            shape = (2, 3, 4, 5)[-rank - 1:]
            size = int(np.prod(shape[-rank:]))
            found += [
                case(name, name="complex64", input=_complex(*shape), **_single(size)),
                case(name, name="complex128", input=_complex(*shape, dtype=_C128)),
                case(name, name="inner_only", input=_complex(*shape[1:]), **_single(size)),
                case(name, name="empty", input=_complex(0, *shape[1:])),
                case(name, name="length_one", input=_complex(*((1,) * rank))),
            ]
    found.append(case("FFT", name="odd_prime", input=_complex(3, 17), **_single(17)))
    found.append(case("FFT", name="specials", input=np.array([1, np.inf, np.nan, 0], _C64)))
    return found


def _real_transforms():
    found = []
    for op, rank in (("RFFT", 1), ("RFFT2D", 2), ("RFFT3D", 3)):
        shape = (2, 3, 4, 6)[-rank - 1:]
        inner = shape[-rank:]
        size = int(np.prod(inner))
        bigger = tuple(n + 2 for n in inner)
        smaller = tuple(max(1, n - 1) for n in inner)
        found += [
            case(op, name="float32", input=_real(*shape), fft_length=_lengths(*inner),
                 **_single(size)),
            case(op, name="float64", input=_real(*shape, dtype=np.float64),
                 fft_length=_lengths(*inner), Tcomplex=np.complex128),
            case(op, name="too_short", error=True, input=_real(*shape),
                 fft_length=_lengths(*bigger)),
            case(op, name="cropped", input=_real(*shape), fft_length=_lengths(*smaller),
                 **_single(size)),
            case(op, name="empty_batch", input=_real(0, *inner), fft_length=_lengths(*inner)),
        ]
        inverse = "I" + op
        half = inner[:-1] + (inner[-1] // 2 + 1,)
        found += [
            case(inverse, name="complex64", input=_complex(2, *half), fft_length=_lengths(*inner),
                 **_single(size)),
            case(inverse, name="complex128", input=_complex(2, *half, dtype=_C128),
                 fft_length=_lengths(*inner), Treal=np.float64),
            case(inverse, name="odd_length", input=_complex(2, *half),
                 fft_length=_lengths(*inner[:-1], inner[-1] - 1), **_single(size)),
            case(inverse, name="too_short", error=True, input=_complex(2, *half),
                 fft_length=_lengths(*bigger)),
            case(inverse, name="cropped", input=_complex(2, *half),
                 fft_length=_lengths(*smaller), **_single(size)),
            case(inverse, name="empty_batch", input=_complex(0, *half),
                 fft_length=_lengths(*inner)),
        ]
    found += [
        case("RFFT", name="odd", input=_real(3, 9), fft_length=_lengths(9), **_single(9)),
        case("RFFT", name="bad_length_shape", error=True, dynamic=True, input=_real(4),
             fft_length=_lengths(4, 4)),
        case("IRFFT", name="dc_imaginary_ignored", input=np.array([1 + 5j, 2 - 1j, 3 + 7j], _C64),
             fft_length=_lengths(4)),
    ]
    return found


def _complex_ops():
    found = []
    for real_type, complex_type in ((np.float32, _C64), (np.float64, _C128)):
        name = np.dtype(complex_type).name
        found += [
            case("Complex", name=name, real=_real(2, 3, dtype=real_type),
                 imag=_real(2, 3, dtype=real_type), Tout=complex_type),
            case("Real", name=name, input=_complex(2, 3, dtype=complex_type),
                 Tout=real_type),
            case("Imag", name=name, input=_complex(2, 3, dtype=complex_type),
                 Tout=real_type),
            case("ComplexAbs", name=name, x=_complex(2, 3, dtype=complex_type),
                 Tout=real_type),
            case("Angle", name=name, input=_complex(2, 3, dtype=complex_type),
                 Tout=real_type),
            case("Conj", name=name, input=_complex(2, 3, dtype=complex_type)),
        ]
    specials = np.array([0, -0.0, 1, -1, np.inf, -np.inf, np.nan], np.float32)
    grid = np.empty((7, 7), _C64)
    grid.real, grid.imag = specials[:, None], specials[None, :]
    found += [
        case("Complex", name="broadcast", real=_real(2, 3), imag=_real(3), Tout=_C64),
        case("Complex", name="scalars", real=np.float32(1.5), imag=np.float32(-2), Tout=_C64),
        case("Complex", name="incompatible", error=True, dynamic=True, real=_real(2),
             imag=_real(3), Tout=_C64),
        case("Complex", name="empty", real=_real(0, 2), imag=_real(0, 2), Tout=_C64),
        case("ComplexAbs", name="specials", x=grid, Tout=np.float32),
        case("ComplexAbs", name="large", x=np.array([3e38 + 3e38j, 1e-40 + 1e-40j], _C64),
             Tout=np.float32),
        case("Angle", name="specials", input=grid, Tout=np.float32),
        case("Real", name="specials", input=grid, Tout=np.float32),
        case("Imag", name="empty", input=_complex(0), Tout=np.float32),
        case("Conj", name="specials", input=grid),
        case("Conj", name="empty", input=_complex(0, 3)),
    ]
    return found


CASES = _complex_transforms() + _real_transforms() + _complex_ops()
