"""Kernel cases for the special functions: every registered float type, float64 ranges that
cross each branch of our kernels (series, quadrature, asymptotic expansions), poles, negative
integers, zeros, infinities and NaN.

Our kernels compute in float64 and round once; TensorFlow computes float32 (and half types in
float32) with single-precision approximations, so float32 cases allow a few float32 ulps more
than the element-wise default where TensorFlow's own error is that large.
"""
import ml_dtypes
import numpy as np

_rng = np.random.default_rng(1401)
BF16 = ml_dtypes.bfloat16
HALVES = (np.float16, BF16)
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0]
_SINGLE = {"rtol": 1e-5, "atol": 1e-6}
_DOUBLE = {"rtol": 1e-12, "atol": 1e-14}


def _grid(low, high, count=12, dtype=np.float32):
    """Values on a grid of 1/64 (exact in half types too)."""
    return (np.round(_rng.uniform(low, high, count) * 64) / 64).astype(dtype)


def _name(dtype) -> str:
    return np.dtype(dtype).name


def _unary(op, low, high, dtypes, double_range, single=None, specials=SPECIAL, arg="x"):
    found = [case(op, name=_name(d), **{arg: _grid(low, high, dtype=d)},
                  **(single or _SINGLE if d == np.float32 else {}))
             for d in dtypes]
    found += [
        case(op, name="range", **{arg: np.asarray(double_range, np.float64)}, **_DOUBLE),
        case(op, name="specials", **{arg: np.array(specials, np.float32)}),
        case(op, name="empty", **{arg: np.zeros((0, 2), np.float32)}),
    ]
    return found


FLOATS = (np.float32, np.float64, np.float16)
SINGLE_DOUBLE = (np.float32, np.float64)
_BRANCHES = np.r_[np.linspace(0.01, 2, 9), np.linspace(2.1, 8, 9), np.linspace(8, 26, 13),
                  30.5, 80, 500, 1e4]

LGAMMA = _unary("Lgamma", -6, 8, FLOATS, np.r_[np.linspace(-9.75, 30, 60), 1, 2, 1e-300, 171.6,
                                                 1e5, 1e300, -1e5 - 0.5],
                specials=SPECIAL + [-1.0, -2.0, 1.0, 2.0])
DIGAMMA = _unary("Digamma", -6, 8, FLOATS, np.r_[np.linspace(-9.75, 30, 60), 1e-300, 1.4616321,
                                                   1e5, 1e300, -1e5 - 0.5],
                 specials=SPECIAL + [-1.0, -2.0, 1.0])
ERFINV = _unary("Erfinv", -1, 1, (np.float32, np.float64),
                np.r_[np.linspace(-0.999, 0.999, 41), 1e-300, -1e-20, 1 - 2 ** -52, -1 + 1e-10],
                specials=SPECIAL + [1.0, -1.0, 1.5, -2.0], arg="x")
NDTRI = _unary("Ndtri", 0, 1, (np.float32, np.float64),
               np.r_[np.linspace(0.001, 0.999, 41), 1e-300, 1e-20, 1e-5, 1 - 1e-10, 0.25, 0.75],
               specials=SPECIAL + [1.0, 0.5, 1.5, -0.5], arg="x")

BESSEL = []
for _op in ("BesselI0e", "BesselI1e", "BesselI0", "BesselI1"):
    _values = np.r_[-_BRANCHES[::3], _BRANCHES, 700 if _op.endswith(("0", "1")) else 1e300]
    BESSEL += _unary(_op, -10, 10, FLOATS, _values)
for _op in ("BesselK0", "BesselK0e", "BesselK1", "BesselK1e"):
    BESSEL += _unary(_op, 0.1, 20, FLOATS, np.r_[_BRANCHES, 1e-300, 1e-10, -1.0, 700],
                     specials=SPECIAL + [-1.0])
for _op in ("BesselJ0", "BesselJ1"):
    BESSEL += _unary(_op, -30, 30, FLOATS, np.r_[-_BRANCHES[::3], _BRANCHES, 1e5 + 0.25],
                     single={"rtol": 1e-5, "atol": 2e-6})
for _op in ("BesselY0", "BesselY1"):
    BESSEL += _unary(_op, 0.1, 30, FLOATS, np.r_[_BRANCHES, 1e-300, 1e-10, -1.0, 1e5 + 0.25],
                     specials=SPECIAL + [-1.0], single={"rtol": 1e-5, "atol": 2e-6})

INTEGRALS = (
    _unary("Expint", -10, 10, SINGLE_DOUBLE, np.r_[np.linspace(-60, -1.5, 12), np.linspace(-1, 1, 9),
                                            0.3725074107813666, np.linspace(1.5, 39.5, 12),
                                            40.5, 100, 700, 710, -700])
    + _unary("Spence", 0, 8, SINGLE_DOUBLE, np.r_[np.linspace(0.01, 3, 30), 0.5, 1.5, 10, 1e3, 1e10,
                                           1e-300, -1])
    + _unary("Dawsn", -8, 8, SINGLE_DOUBLE, np.r_[np.linspace(-10, 10, 41), 5.99, 6.01, 1e3, 1e-300])
    + _unary("FresnelCos", -7, 7, SINGLE_DOUBLE, np.r_[np.linspace(-8, 8, 33), 5.99, 6.01, 50.5, 1e3])
    + _unary("FresnelSin", -7, 7, SINGLE_DOUBLE, np.r_[np.linspace(-8, 8, 33), 5.99, 6.01, 50.5, 1e3])
)


def _binary(op, left, right, low, high, pairs, single=None, double=_DOUBLE):
    """Typical float32 and float64 values, broadcasting, TF-checked float64 pairs, empty."""
    a64 = np.array([p[0] for p in pairs], np.float64)
    b64 = np.array([p[1] for p in pairs], np.float64)
    return [
        case(op, name="float32", **{left: _grid(*low), right: _grid(*high)},
             **(single or _SINGLE)),
        case(op, name="float64", **{left: _grid(*low, dtype=np.float64),
                                    right: _grid(*high, dtype=np.float64)}, **_DOUBLE),
        case(op, name="broadcast", **{left: _grid(*low, count=3).reshape(3, 1),
                                      right: _grid(*high, count=4)}, **(single or _SINGLE)),
        case(op, name="pairs", **{left: a64, right: b64}, **double),
        case(op, name="empty", **{left: np.zeros((0,), np.float32),
                                  right: np.zeros((0,), np.float32)}),
    ]


_NAN, _INF = np.nan, np.inf
ZETA = _binary("Zeta", "x", "q", (1.1, 8), (0.2, 10), [
    (2, 1), (3, 1), (1, 2), (0.5, 2), (2, 0), (2, -1), (2, -1.5), (2.5, -1.5), (4, 0.5),
    (30, 2), (60, 1.5), (1.0001, 1), (2, 1e-3), (2, 1e6), (_NAN, 1), (2, _NAN), (_INF, 2),
    (2, _INF)])
POLYGAMMA = _binary("Polygamma", "a", "x", (0, 4), (0.2, 10), [
    (0, 1), (1, 1), (2, 0.5), (3, 7.25), (1, -1.5), (1.5, 2), (-1, 2), (1, 0), (2, -2),
    (10, 3), (0, -2.5), (_NAN, 1), (1, _NAN), (4, 1e-3)], single={"rtol": 1e-4, "atol": 1e-5})
_GAMMA_PAIRS = [
    (0.5, 0.5), (1, 1), (3, 2), (2, 3), (10, 9.5), (100, 110), (100, 90), (1e-3, 1e-3),
    (5, 0), (0, 1), (-1, 2), (2, -1), (1, _INF), (_INF, 1), (_NAN, 1), (1, _NAN), (30, 1e-3),
    (1e4, 1e4 + 50), (0.1, 50)]
# a log x - x - lgamma(a) loses ~1e-11 relative at a = 1e4, in TensorFlow's and our kernels
_LARGE_A = {"rtol": 1e-10, "atol": 1e-14}
IGAMMA = _binary("Igamma", "a", "x", (0.1, 10), (0.05, 12), _GAMMA_PAIRS, double=_LARGE_A)
IGAMMAC = _binary("Igammac", "a", "x", (0.1, 10), (0.05, 12), _GAMMA_PAIRS, double=_LARGE_A)

_a = np.array([0.5, 1, 2, 5, 0.1, 30, 2, 2, 0, -1, 2, 2, 1e-3, 200, _NAN], np.float64)
_b = np.array([0.5, 1, 3, 0.5, 0.1, 40, 2, 2, 1, 2, 0, 2, 1e-3, 300, 1], np.float64)
_x = np.array([0.5, 0.3, 0.4, 0.9, 0.01, 0.45, 0, 1, 0.5, 0.5, 0.5, 1.5, 0.5, 0.4, 0.5],
              np.float64)
BETAINC = [
    case("Betainc", name="float32", a=_grid(0.2, 6), b=_grid(0.2, 6), x=_grid(0, 1), **_SINGLE),
    case("Betainc", name="float64", a=_grid(0.2, 6, dtype=np.float64),
         b=_grid(0.2, 6, dtype=np.float64), x=_grid(0, 1, dtype=np.float64), **_DOUBLE),
    case("Betainc", name="edges", a=_a, b=_b, x=_x, **_DOUBLE),
    case("Betainc", name="scalar_a", a=np.float32(2), b=_grid(0.2, 6), x=_grid(0, 1), **_SINGLE),
    case("Betainc", name="mismatch", error=True, dynamic=True, a=_grid(1, 2, count=2),
         b=_grid(1, 2, count=3), x=_grid(0, 1, count=3)),
]

XLOG = []
for _op, _low in (("Xlogy", 0.0), ("Xlog1py", -0.9), ("Xdivy", -3.0)):
    XLOG += [case(_op, name=_name(d), x=np.r_[0, _grid(-3, 3, 5)].astype(d),
                  y=np.r_[0, _grid(_low, 3, 5)].astype(d)) for d in FLOATS]
    XLOG += [
        case(_op, name="complex64", x=np.array([0, 1 + 1j, -2j], np.complex64),
             y=np.array([0, 2 - 1j, 0.5 + 0.5j], np.complex64)),
        case(_op, name="complex128", x=np.array([0, 1 + 1j, -2j], np.complex128),
             y=np.array([_NAN, 2 - 1j, 0.5 + 0.5j], np.complex128)),
        case(_op, name="zero_x", x=np.zeros(6, np.float32),
             y=np.array([0, -1, _NAN, _INF, -_INF, 2], np.float32)),
        case(_op, name="specials", x=np.array([_NAN, _INF, -_INF, 1, -1, 2], np.float32),
             y=np.array([1, 0, 0, 0, -1, _INF], np.float32)),
        case(_op, name="broadcast", x=_grid(-2, 2, count=3).reshape(3, 1), y=_grid(0.5, 2, 4)),
        case(_op, name="incompatible", error=True, dynamic=True, x=_grid(1, 2, count=2),
             y=_grid(1, 2, count=3)),
    ]


def _axis(*values):
    return np.array(values, np.int32)


EUCLIDEAN_NORM = [case("EuclideanNorm", name=_name(d), input=(_rng.standard_normal((3, 4)) * 3)
                       .astype(d), axis=_axis(1)) for d in FLOATS]
EUCLIDEAN_NORM += [
    case("EuclideanNorm", name="int32", input=_rng.integers(-9, 10, (3, 4)).astype(np.int32),
         axis=_axis(0)),
    case("EuclideanNorm", name="uint8", input=_rng.integers(0, 12, (3, 4)).astype(np.uint8),
         axis=_axis(1)),
    case("EuclideanNorm", name="complex64", input=(_rng.standard_normal((2, 3))
                                                   + 1j * _rng.standard_normal((2, 3)))
         .astype(np.complex64), axis=_axis(-1)),
    case("EuclideanNorm", name="all_keep_dims", input=_grid(-3, 3, 12).reshape(3, 4),
         axis=_axis(0, 1), keep_dims=True),
    case("EuclideanNorm", name="no_axes", input=_grid(-3, 3, 6).reshape(2, 3),
         axis=np.zeros(0, np.int32)),
    case("EuclideanNorm", name="negative_axis_int64", input=_grid(-3, 3, 6).reshape(2, 3),
         axis=np.array([-2], np.int64)),
    case("EuclideanNorm", name="empty", input=np.zeros((0, 3), np.float32), axis=_axis(0)),
    case("EuclideanNorm", name="specials", input=np.array([[_INF, 1], [_NAN, 1]], np.float32),
         axis=_axis(1)),
    case("EuclideanNorm", name="bad_axis", error=True, input=_grid(-3, 3, 6).reshape(2, 3),
         axis=_axis(2)),
]

CASES = (LGAMMA + DIGAMMA + ERFINV + NDTRI + BESSEL + INTEGRALS + ZETA + POLYGAMMA + IGAMMA + IGAMMAC
         + BETAINC + XLOG + EUCLIDEAN_NORM)
