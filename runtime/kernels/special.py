"""Special functions: gamma and its relatives, incomplete gamma and beta, Hurwitz zeta, inverse
error functions, Bessel functions, exponential, Dawson and Fresnel integrals, the dilogarithm,
and the x*log(y)-style ops that define 0 * anything as 0.

numpy has none of these. Each is computed in float64 from a formula that holds to about double
precision over its whole range, picked by argument size (all branches vectorized; small loops
run over series terms or quadrature nodes, never over elements), and rounded once to the input's
type. Domains follow TensorFlow's: poles give inf, arguments outside a function's domain NaN.

- lgamma, digamma: the recurrence up to 12, then Stirling's and the asymptotic series
  (coefficients from Bernoulli numbers); reflection for x <= 0.
- zeta (Hurwitz): Euler-Maclaurin summation; polygamma from zeta.
- igamma, igammac: the power series where x < a + 1, else Legendre's continued fraction.
- betainc: the continued fraction of I_x(a, b) on the side where it converges fast.
- erfinv, ndtri: Newton's method on erf, or on log erfc in the tails, from a rough closed form.
- Bessel I and K: power series for small x, the trapezoidal rule on K's integral representation
  (exponentially accurate for analytic integrands) in between, asymptotic series for large x.
- Bessel J and Y: power series for |x| < 8, quadrature of Bessel's integrals below 25, Hankel's
  asymptotic expansions above.
- Expint, Dawsn: positive-term series, asymptotic series for large x; Spence: the dilogarithm's
  series after reflections into |z| <= 1/2; Fresnel: Gauss-Legendre quadrature, then the
  auxiliary functions' asymptotic series.
"""
from __future__ import annotations

from collections.abc import Callable
from math import factorial, pi

import numpy as np

from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.kernels import math as math_kernels
from savedmodel.runtime.kernels.math import shape_text
from savedmodel.runtime.kernels.reduction import _reduction_axes
from savedmodel.runtime.registry import kernel

Array = np.ndarray

_EULER_GAMMA = 0.5772156649015329
_HALF_LOG_TWO_PI = 0.9189385332046728
_SQRT_PI = 1.7724538509055159
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510,
              43867 / 798, -174611 / 330, 854513 / 138, -236364091 / 2730)
"""B_2, B_4, ..., B_24."""
_SHIFT = 12.0
"""Arguments below this are moved up by the recurrence before an asymptotic series."""
_STIRLING_TERMS = 8
"""Terms of Stirling's series: the next one is below 1e-17 at 12."""


def _wide(x) -> Array:
    return np.asarray(x, np.float64)


def _float_unary(op: str, fn: Callable[[Array], Array]) -> None:
    def special(x: Array, **_) -> tuple[Array]:
        x = np.asarray(x)
        return (np.asarray(fn(_wide(x))).astype(x.dtype),)
    special.__name__ = special.__qualname__ = op.lower()
    kernel(op)(special)


def _broadcast(*operands: Array) -> list[Array]:
    try:
        return [_wide(o) for o in np.broadcast_arrays(*operands)]
    except ValueError:
        raise KernelError("Incompatible shapes: " + " vs. ".join(shape_text(o) for o in operands)) \
            from None


def _float_binary(op: str, fn: Callable[[Array, Array], Array]) -> None:
    def special(x: Array, y: Array, **_) -> tuple[Array]:
        dtype = np.asarray(x).dtype
        return (np.asarray(fn(*_broadcast(x, y))).astype(dtype),)
    special.__name__ = special.__qualname__ = op.lower()
    kernel(op)(special)


# --- Gamma, digamma, zeta -----------------------------------------------------------------------

def _shifted(x: Array, step: Callable[[Array, Array, Array], Array], start: float) -> tuple[Array, Array]:
    """(z, accumulated): z = x moved up by 1 while below _SHIFT, `step(total, z, moving)` folding
    each moved-past value into the running total."""
    z, total = x.copy(), np.full_like(x, start)
    for _ in range(int(_SHIFT)):
        moving = z < _SHIFT
        total = step(total, z, moving)
        z = np.where(moving, z + 1, z)
    return z, total


def _abs_sin_pi(x: Array) -> Array:
    """|sin(pi x)|, exactly 0 at integers."""
    return np.abs(np.sin(pi * (x - np.round(x))))


def _lgamma_large(z: Array) -> Array:
    """Stirling's series for z >= 12."""
    inverse = 1 / z
    square = inverse * inverse
    series = np.zeros_like(z)
    for k in range(_STIRLING_TERMS, 0, -1):
        series = series * square + _BERNOULLI[k - 1] / (2 * k * (2 * k - 1))
    return (z - 0.5) * np.log(z) - z + _HALF_LOG_TWO_PI + series * inverse


def lgamma(x: Array) -> Array:
    """log|Gamma(x)|: inf at 0, the negative integers and +-inf."""
    reflect = x < 0.5
    positive = np.where(reflect, 1 - x, x)
    z, product = _shifted(positive, lambda total, z, moving: np.where(moving, total * z, total), 1.0)
    value = _lgamma_large(z) - np.log(product)
    value = np.where(reflect, np.log(pi / _abs_sin_pi(x)) - value, value)
    return np.where(np.isinf(x), np.inf, value)


def _digamma_large(z: Array) -> Array:
    square = 1 / (z * z)
    series = np.zeros_like(z)
    for k in range(7, 0, -1):
        series = series * square + _BERNOULLI[k - 1] / (2 * k)
    return np.log(z) - 0.5 / z - series * square


def digamma(x: Array) -> Array:
    """psi(x); the reflection formula for x <= 0, where the poles (0 and negative integers) give
    NaN, as TensorFlow's does."""
    reflect = x <= 0
    positive = np.where(reflect, 1 - x, x)
    z, correction = _shifted(positive, lambda total, z, moving: np.where(moving, total + 1 / z, total), 0.0)
    value = _digamma_large(z) - correction
    value = np.where(reflect, value - pi / np.tan(pi * (x - np.round(x))), value)
    value = np.where(reflect & (x == np.round(x)), np.nan, value)
    return np.where(x == np.inf, np.inf, value)


_ZETA_TERMS = 12


def zeta(x: Array, q: Array) -> Array:
    """Hurwitz zeta sum_k (k + q)^-x: inf for x = 1; at q a non-positive integer inf for even
    x and NaN otherwise (TensorFlow's choice); NaN for x < 1 and for q < 0 with x not an
    integer."""
    total = np.zeros_like(x)
    for k in range(_ZETA_TERMS):
        total += np.power(q + k, -x)
    w = q + _ZETA_TERMS
    total += np.power(w, 1 - x) / (x - 1) + 0.5 * np.power(w, -x)
    rising = x.copy()          # x (x+1) ... (x+2j-2)
    power = np.power(w, -x - 1)
    for j, bernoulli in enumerate(_BERNOULLI, 1):
        total += bernoulli / factorial(2 * j) * rising * power
        rising = rising * (x + 2 * j - 1) * (x + 2 * j)
        power = power / (w * w)
    total = np.where(x == 1, np.inf, total)
    total = np.where(x == np.inf, np.power(q, -x), total)
    pole = (q <= 0) & (q == np.floor(q))
    even = (x == np.floor(x)) & (np.fmod(x, 2) == 0)
    total = np.where(pole, np.where(even, np.inf, np.nan), total)
    return np.where((x < 1) | ((q < 0) & (x != np.floor(x))), np.nan, total)


def polygamma(n: Array, x: Array) -> Array:
    """psi^(n)(x) = (-1)^(n+1) n! zeta(n+1, x); NaN for n not a non-negative integer."""
    order = np.where(n > 0, n, 1.0)
    value = np.power(-1.0, order + 1) * np.exp(lgamma(order + 1)) * zeta(order + 1, x)
    value = np.where(n == 0, digamma(x), value)
    return np.where((n < 0) | (n != np.floor(n)), np.nan, value)


_float_unary("Lgamma", lgamma)
_float_unary("Digamma", digamma)
_float_binary("Zeta", zeta)
_float_binary("Polygamma", polygamma)


# --- Incomplete gamma and beta --------------------------------------------------------------------

_ITERATIONS = 4000
_CHECK_EVERY = 16
_EPSILON = 5e-16
"""Relative change below which a series or continued fraction has converged: 2 ulps, since a
Lentz factor c d can settle one ulp away from 1."""
_TINY = 1e-300


def _until_converged(state: dict, step: Callable[[dict, int], Array]) -> None:
    """Run `step(state, i)` for i = 1, 2, ... until its returned relative changes are all below
    _EPSILON (checked every _CHECK_EVERY steps) or _ITERATIONS steps ran."""
    for i in range(1, _ITERATIONS + 1):
        change = step(state, i)
        if i % _CHECK_EVERY == 0 and not np.any(change > _EPSILON):
            return


def _lower_gamma_series(a: Array, x: Array) -> Array:
    """sum_n x^n / (a (a+1) ... (a+n)), the series of P(a, x) without its prefactor."""
    state = {"term": 1 / a, "total": 1 / a}

    def step(s, n):
        s["term"] = s["term"] * x / (a + n)
        s["total"] = s["total"] + s["term"]
        return np.abs(s["term"]) / np.abs(s["total"])
    _until_converged(state, step)
    return state["total"]


def _lentz(first: Array, numerator: Callable[[int], Array], denominator: Callable[[int], Array]) -> Array:
    """first + a1/(b1 + a2/(b2 + ...)) by the modified Lentz method."""
    state = {"f": np.where(first == 0, _TINY, first)}
    state["c"], state["d"] = state["f"], np.zeros_like(first)

    def step(s, i):
        a, b = numerator(i), denominator(i)
        d = b + a * s["d"]
        d = 1 / np.where(d == 0, _TINY, d)
        c = b + a / s["c"]
        c = np.where(c == 0, _TINY, c)
        s["c"], s["d"] = c, d
        s["f"] = s["f"] * c * d
        return np.abs(c * d - 1)
    _until_converged(state, step)
    return state["f"]


def _upper_gamma_fraction(a: Array, x: Array) -> Array:
    """Legendre's continued fraction 1/(x+1-a- 1(1-a)/(x+3-a- 2(2-a)/(x+5-a- ...))) of Q(a, x)
    without its prefactor."""
    fraction = _lentz(x + 1 - a, lambda i: -i * (i - a), lambda i: x + 1 - a + 2 * i)
    return 1 / fraction


def _gamma_prefactor(a: Array, x: Array) -> Array:
    return np.exp(a * np.log(x) - x - lgamma(a))


def regularized_gammas(a: Array, x: Array) -> tuple[Array, Array]:
    """(P(a, x), Q(a, x)), each computed directly where it is the smaller: NaN for a <= 0, x < 0
    or NaN; P(a, 0) = 0 and P(a, inf) = 1."""
    lower, upper = np.full_like(x, np.nan), np.full_like(x, np.nan)
    valid = (a > 0) & (x >= 0)
    series = valid & (x < a + 1) & (x > 0)
    fraction = valid & (x >= a + 1) & np.isfinite(x) & np.isfinite(a)
    if series.any():
        aa, xx = a[series], x[series]
        lower[series] = _gamma_prefactor(aa, xx) * _lower_gamma_series(aa, xx)
        upper[series] = 1 - lower[series]
    if fraction.any():
        aa, xx = a[fraction], x[fraction]
        upper[fraction] = _gamma_prefactor(aa, xx) * _upper_gamma_fraction(aa, xx)
        lower[fraction] = 1 - upper[fraction]
    for where, value in ((valid & (x == 0), 0.0), (valid & (x == np.inf), 1.0),
                         (valid & (a == np.inf) & np.isfinite(x), 0.0)):
        lower[where], upper[where] = value, 1 - value
    return lower, upper


_float_binary("Igamma", lambda a, x: regularized_gammas(a, x)[0])
_float_binary("Igammac", lambda a, x: regularized_gammas(a, x)[1])


def _beta_fraction(a: Array, b: Array, x: Array) -> Array:
    """The continued fraction 1/(1+ d1/(1+ d2/(1+ ...))) of I_x(a, b) without its prefactor:
    d_2m = m(b-m)x / ((a+2m-1)(a+2m)), d_2m+1 = -(a+m)(a+b+m)x / ((a+2m)(a+2m+1))."""
    def numerator(i):
        m = i // 2
        if i % 2 == 0:
            return m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        return -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
    return 1 / _lentz(np.ones_like(x), numerator, lambda i: np.ones_like(x))


def betainc(a: Array, b: Array, x: Array) -> Array:
    """I_x(a, b); NaN outside a, b > 0 and 0 <= x <= 1."""
    out = np.full_like(x, np.nan)
    valid = (a > 0) & (b > 0) & (x >= 0) & (x <= 1)
    inner = valid & (x > 0) & (x < 1)
    if inner.any():
        aa, bb, xx = a[inner], b[inner], x[inner]
        swap = xx > (aa + 1) / (aa + bb + 2)
        a1, b1, x1 = np.where(swap, bb, aa), np.where(swap, aa, bb), np.where(swap, 1 - xx, xx)
        log_prefix = (lgamma(a1 + b1) - lgamma(a1) - lgamma(b1) + a1 * np.log(x1)
                      + b1 * np.log1p(-x1))
        value = np.exp(log_prefix) * _beta_fraction(a1, b1, x1) / a1
        out[inner] = np.where(swap, 1 - value, value)
    out[valid & (x == 0)] = 0.0
    out[valid & (x == 1)] = 1.0
    return out


@kernel("Betainc")
def betainc_kernel(a: Array, b: Array, x: Array, **_) -> tuple[Array]:
    """a, b and x have one shape, or are scalars (no other broadcasting)."""
    a, b, x = np.asarray(a), np.asarray(b), np.asarray(x)
    shapes = {o.shape for o in (a, b, x) if o.ndim}
    if len(shapes) > 1:
        raise KernelError(f"Betainc: shapes of a, b and x are inconsistent: {shape_text(a)} vs. "
                          f"{shape_text(b)} vs. {shape_text(x)}")
    wide = [_wide(o) for o in np.broadcast_arrays(a, b, x)]
    return (np.asarray(betainc(*wide)).astype(a.dtype),)


# --- Inverse error functions ----------------------------------------------------------------------

_NEWTON_STEPS = 6


def _rough_inverse_erf(y: Array, log_one_minus_square: Array) -> Array:
    """|erf^-1(y)| within about 0.2% from a closed form (Winitzki's approximation), given
    log(1 - y^2) computed without cancellation."""
    a = 0.147
    t = 2 / (pi * a) + log_one_minus_square / 2
    return np.sqrt(np.maximum(np.sqrt(t * t - log_one_minus_square / a) - t, 0))


def _erf64(x: Array) -> Array:
    return math_kernels.erf(x)[0]


def _log_erfc(x: Array) -> tuple[Array, Array]:
    """(log erfc(x), exp(x^2) erfc(x)) for x >= 0, without underflow."""
    tail = math_kernels.scaled_erfc_tail(np.maximum(x, 2.0))
    near = math_kernels.erfc(x)[0] * np.exp(x * x)
    scaled = np.where(x < 2, near, tail)
    return np.log(scaled) - x * x, scaled


def _inverse_erf_small(y: Array) -> Array:
    """erf^-1(y) for |y| <= 0.5, by Newton's method on erf."""
    x = np.copysign(_rough_inverse_erf(y, np.log1p(-y * y)), y)
    for _ in range(_NEWTON_STEPS):
        x = x - (_erf64(x) - y) * _SQRT_PI / 2 * np.exp(x * x)
    return x


def _inverse_erfc_tail(w: Array) -> Array:
    """erfc^-1(w) for 0 < w <= 0.5 (so x >= 0.47), by Newton's method on log erfc, which stays
    well scaled however small w is."""
    x = _rough_inverse_erf(1 - w, np.log(w) + np.log(2 - w))
    target = np.log(w)
    for _ in range(_NEWTON_STEPS):
        log_erfc, scaled = _log_erfc(x)
        x = x + (log_erfc - target) * _SQRT_PI / 2 * scaled
    return x


def erfinv(y: Array) -> Array:
    """erf^-1(y): +-inf at +-1, NaN outside [-1, 1]."""
    small = np.abs(y) <= 0.5
    out = np.where(small, _inverse_erf_small(np.where(small, y, 0.0)),
                   np.copysign(_inverse_erfc_tail(np.where(small, 0.5, 1 - np.abs(y))), y))
    out = np.where(np.abs(y) == 1, np.copysign(np.inf, y), out)
    return np.where(np.abs(y) > 1, np.nan, out)


def ndtri(p: Array) -> Array:
    """The standard normal quantile sqrt(2) erf^-1(2p - 1), computed as -sqrt(2) erfc^-1(2p) in
    the lower tail and sqrt(2) erfc^-1(2(1-p)) in the upper, where 2p - 1 would cancel."""
    low, high = p < 0.25, p > 0.75
    middle = ~(low | high)
    out = np.sqrt(2) * _inverse_erf_small(np.where(middle, 2 * p - 1, 0.0))
    out = np.where(low, -np.sqrt(2) * _inverse_erfc_tail(np.where(low, 2 * p, 0.5)), out)
    out = np.where(high, np.sqrt(2) * _inverse_erfc_tail(np.where(high, 2 * (1 - p), 0.5)), out)
    out = np.where(p == 0, -np.inf, np.where(p == 1, np.inf, out))
    return np.where((p < 0) | (p > 1), np.nan, out)


_float_unary("Erfinv", erfinv)
_float_unary("Ndtri", ndtri)


# --- Modified Bessel functions I and K --------------------------------------------------------------

_SERIES_LIMIT = 25.0
_SERIES_TERMS = 90
_ASYMPTOTIC_TERMS = 30


def _bessel_i_series(x: Array, order: int) -> Array:
    """I_order(x) = sum_k (x/2)^(2k+order) / (k! (k+order)!) for |x| < 25 (positive terms)."""
    quarter_square = x * x / 4
    term = np.power(x / 2, order) / factorial(order)
    total = term.copy()
    for k in range(1, _SERIES_TERMS):
        term = term * quarter_square / (k * (k + order))
        total += term
    return total


def _asymptotic_coefficients(order: int, count: int) -> list[float]:
    """a_k = (mu - 1)(mu - 9)...(mu - (2k-1)^2) / (k! 8^k), mu = 4 order^2."""
    mu, coefficients = 4 * order * order, [1.0]
    for k in range(1, count):
        coefficients.append(coefficients[-1] * (mu - (2 * k - 1) ** 2) / (k * 8))
    return coefficients


def _scaled_bessel_i_large(x: Array, order: int) -> Array:
    """exp(-x) I_order(x) for x >= 25: 1/sqrt(2 pi x) sum_k (-1)^k a_k / x^k."""
    total, power = np.zeros_like(x), np.ones_like(x)
    for k, coefficient in enumerate(_asymptotic_coefficients(order, _ASYMPTOTIC_TERMS)):
        total += (-1) ** k * coefficient * power
        power = power / x
    return total / np.sqrt(2 * pi * x)


def scaled_bessel_i(x: Array, order: int) -> Array:
    """exp(-|x|) I_order(x) (I_0 even, I_1 odd)."""
    a = np.abs(x)
    near = a < _SERIES_LIMIT
    value = np.where(near, _bessel_i_series(np.where(near, a, 0.0), order) * np.exp(-a),
                     _scaled_bessel_i_large(np.where(near, _SERIES_LIMIT, a), order))
    return np.copysign(value, x) if order else value


def bessel_i(x: Array, order: int) -> Array:
    """I_order(x) as exp(|x| + log(exp(-|x|) I)), finite as far as I itself is."""
    scaled = scaled_bessel_i(x, order)
    with np.errstate(divide="ignore"):
        return np.copysign(np.exp(np.abs(x) + np.log(np.abs(scaled))), scaled)


_K_SERIES_LIMIT = 2.0
_K_STEP = 0.05
_K_NODES = 100


def _bessel_k_series(x: Array, order: int) -> Array:
    """K_0 and K_1 for 0 < x <= 2 from their series in I and the harmonic numbers."""
    quarter_square = x * x / 4
    log_half = np.log(x / 2)
    if order == 0:
        term, harmonic, total = np.ones_like(x), 0.0, np.zeros_like(x)
        for k in range(1, 40):
            term = term * quarter_square / (k * k)
            harmonic += 1 / k
            total += harmonic * term
        return total - (log_half + _EULER_GAMMA) * _bessel_i_series(x, 0)
    term, psi_sum = np.ones_like(x), 1 - 2 * _EULER_GAMMA   # psi(1) + psi(2)
    total = psi_sum * term
    for k in range(1, 40):
        term = term * quarter_square / (k * (k + 1))
        psi_sum += 1 / k + 1 / (k + 1)
        total += psi_sum * term
    return 1 / x + log_half * _bessel_i_series(x, 1) - x / 4 * total


def _scaled_bessel_k_middle(x: Array, order: int) -> Array:
    """exp(x) K_order(x) = int_0^inf exp(-x (cosh t - 1)) cosh(order t) dt for 2 <= x < 25, by
    the trapezoidal rule (error below 1e-16 at this step for analytic, decaying integrands)."""
    total = 0.5 * np.ones_like(x)
    for j in range(1, _K_NODES):
        t = j * _K_STEP
        total += np.exp(-x * (np.cosh(t) - 1)) * np.cosh(order * t)
    return total * _K_STEP


def _scaled_bessel_k_large(x: Array, order: int) -> Array:
    """exp(x) K_order(x) for x >= 25: sqrt(pi / 2x) sum_k a_k / x^k."""
    total, power = np.zeros_like(x), np.ones_like(x)
    for coefficient in _asymptotic_coefficients(order, _ASYMPTOTIC_TERMS):
        total += coefficient * power
        power = power / x
    return total * np.sqrt(pi / (2 * x))


def scaled_bessel_k(x: Array, order: int) -> Array:
    """exp(x) K_order(x): inf at 0 and, as TensorFlow has it, for every x < 0."""
    small, large = x <= _K_SERIES_LIMIT, x >= _SERIES_LIMIT
    middle = ~(small | large)
    value = np.where(small, _bessel_k_series(np.where(small & (x > 0), x, 1.0), order)
                     * np.exp(np.where(small, x, 0.0)), 0.0)
    value = np.where(middle, _scaled_bessel_k_middle(np.where(middle, x, 3.0), order), value)
    value = np.where(large, _scaled_bessel_k_large(np.where(large, x, _SERIES_LIMIT), order), value)
    return np.where(x <= 0, np.inf, value)


def bessel_k(x: Array, order: int) -> Array:
    with np.errstate(divide="ignore"):
        return np.exp(np.log(scaled_bessel_k(x, order)) - x)


for _order in (0, 1):
    _float_unary(f"BesselI{_order}e", lambda x, n=_order: scaled_bessel_i(x, n))
    _float_unary(f"BesselI{_order}", lambda x, n=_order: bessel_i(x, n))
    _float_unary(f"BesselK{_order}e", lambda x, n=_order: scaled_bessel_k(x, n))
    _float_unary(f"BesselK{_order}", lambda x, n=_order: bessel_k(x, n))


# --- Bessel functions J and Y ------------------------------------------------------------------------

_JY_SERIES_LIMIT = 8.0
_QUADRATURE_NODES = 64
_LEGENDRE = np.polynomial.legendre.leggauss(_QUADRATURE_NODES)


def _bessel_j_series(x: Array, order: int) -> Array:
    quarter_square = -x * x / 4
    term = np.power(x / 2, order) / factorial(order)
    total = term.copy()
    for k in range(1, 45):
        term = term * quarter_square / (k * (k + order))
        total += term
    return total


def _bessel_y_series(x: Array, order: int) -> Array:
    """Y_0 and Y_1 for 0 < x < 8: the logarithmic term plus series in harmonic numbers."""
    quarter_square = -x * x / 4
    log_term = 2 / pi * np.log(x / 2) * _bessel_j_series(x, order)
    if order == 0:
        term, harmonic, total = np.ones_like(x), 0.0, np.zeros_like(x)
        for k in range(1, 45):
            term = term * quarter_square / (k * k)
            harmonic += 1 / k
            total -= harmonic * term
        return log_term + 2 / pi * (_EULER_GAMMA * _bessel_j_series(x, 0) + total)
    term, psi_sum = np.ones_like(x), 1 - 2 * _EULER_GAMMA
    total = psi_sum * term
    for k in range(1, 45):
        term = term * quarter_square / (k * (k + 1))
        psi_sum += 1 / k + 1 / (k + 1)
        total += psi_sum * term
    return -2 / (pi * x) + log_term - x / (2 * pi) * total


_QUADRATURE_BLOCK = 2048
"""Elements per block in the quadratures, whose temporaries have a column per node: bounded
memory, and passes that stay in the CPU's cache."""


def _in_blocks(fn: Callable[[Array], tuple[Array, ...]], x: Array) -> tuple[Array, ...]:
    """fn over a 1-D array, block by block, its results concatenated."""
    parts = [fn(x[start:start + _QUADRATURE_BLOCK])
             for start in range(0, x.size, _QUADRATURE_BLOCK)]
    return tuple(np.concatenate(column) for column in zip(*parts))


def _legendre_on(low: Array, high: Array) -> tuple[Array, Array]:
    """Gauss-Legendre nodes and weights on [low, high] per element: arrays of shape (..., n)."""
    nodes, weights = _LEGENDRE
    half = ((high - low) / 2)[..., None]
    return (low[..., None] + half * (nodes + 1)), half * weights


def _bessel_jy_quadrature(x: Array, order: int) -> tuple[Array, Array]:
    """(J, Y) for 8 <= x < 25 from Bessel's integrals: J_n = 1/pi int_0^pi cos(n t - x sin t) dt
    and Y_n = 1/pi int_0^pi sin(x sin t - n t) dt - 1/pi int_0^inf (e^(nt) + (-1)^n e^(-nt))
    e^(-x sinh t) dt, the last cut where its integrand is below 1e-19."""
    zeros = np.zeros_like(x)
    t, w = _legendre_on(zeros, zeros + pi)
    wide = x[..., None]
    j = np.sum(w * np.cos(order * t - wide * np.sin(t)), axis=-1) / pi
    y = np.sum(w * np.sin(wide * np.sin(t) - order * t), axis=-1) / pi
    s, v = _legendre_on(zeros, np.arcsinh(45 / x))
    growth = np.exp(order * s) + (-1) ** order * np.exp(-order * s)
    y -= np.sum(v * growth * np.exp(-wide * np.sinh(s)), axis=-1) / pi
    return j, y


def _bessel_jy_large(x: Array, order: int) -> tuple[Array, Array]:
    """Hankel's expansions for x >= 25: sqrt(2/(pi x)) (P cos chi -+ Q sin chi)."""
    p, q, power = np.zeros_like(x), np.zeros_like(x), np.ones_like(x)
    for k, coefficient in enumerate(_asymptotic_coefficients(order, _ASYMPTOTIC_TERMS)):
        sign = (-1) ** (k // 2)
        if k % 2 == 0:
            p += sign * coefficient * power
        else:
            q += sign * coefficient * power
        power = power / x
    chi = x - (order / 2 + 0.25) * pi
    scale = np.sqrt(2 / (pi * x))
    return (scale * (p * np.cos(chi) - q * np.sin(chi)),
            scale * (p * np.sin(chi) + q * np.cos(chi)))


def _bessel_jy(x: Array, order: int) -> tuple[Array, Array]:
    """(J_order(|x|), Y_order(|x|)) by argument size."""
    a = np.abs(x)
    small, large = a < _JY_SERIES_LIMIT, a >= _SERIES_LIMIT
    middle = ~(small | large)
    j = _bessel_j_series(np.where(small, a, 0.0), order)
    y = _bessel_y_series(np.where(small & (a > 0), a, 1.0), order)
    if middle.any():
        j_mid, y_mid = _in_blocks(lambda block: _bessel_jy_quadrature(block, order), a[middle])
        j[middle], y[middle] = j_mid, y_mid
    j_large, y_large = _bessel_jy_large(np.where(large, a, _SERIES_LIMIT), order)
    j, y = np.where(large, j_large, j), np.where(large, y_large, y)
    infinite = np.isinf(a)
    return np.where(infinite, np.nan, j), np.where(infinite, np.nan, y)


def bessel_j(x: Array, order: int) -> Array:
    """J_0 is even, J_1 odd; NaN at +-inf, as TensorFlow has it."""
    j = _bessel_jy(x, order)[0]
    return np.where(x < 0, -j, j) if order else j


def bessel_y(x: Array, order: int) -> Array:
    """TensorFlow's values off the domain: -inf for x < 0 (and for Y_0 at 0), NaN for Y_1 at 0
    and for +inf."""
    y = np.where(x < 0, -np.inf, _bessel_jy(x, order)[1])
    return np.where(x == 0, np.nan if order else -np.inf, y)


for _order in (0, 1):
    _float_unary(f"BesselJ{_order}", lambda x, n=_order: bessel_j(x, n))
    _float_unary(f"BesselY{_order}", lambda x, n=_order: bessel_y(x, n))


# --- Exponential integral, dilogarithm, Dawson's and Fresnel's integrals ----------------------------

_EXPINT_SERIES_LIMIT = 40.0


def _exp_integral_series(x: Array) -> Array:
    """gamma + ln x + sum x^k / (k k!) for 0 < x < 40 (the terms are all positive)."""
    term, total = np.ones_like(x), np.zeros_like(x)
    for k in range(1, 160):
        term = term * x / k
        total += term / k
    return _EULER_GAMMA + np.log(x) + total


def _exp_integral_large(x: Array) -> Array:
    """e^x / x sum k! / x^k for x >= 40."""
    term, total = np.ones_like(x), np.ones_like(x)
    for k in range(1, 40):
        term = term * k / x
        total += term
    return np.exp(x) / x * total


def expint(x: Array) -> Array:
    """Ei(x) for x > 0, -inf at 0; TensorFlow answers NaN for x < 0 and for +inf."""
    out = _exp_integral_series(np.where((x > 0) & (x < _EXPINT_SERIES_LIMIT), x, 1.0))
    out = np.where(x >= _EXPINT_SERIES_LIMIT, _exp_integral_large(np.where(
        x >= _EXPINT_SERIES_LIMIT, x, _EXPINT_SERIES_LIMIT)), out)
    out = np.where(x == 0, -np.inf, out)
    return np.where((x < 0) | np.isnan(x) | (x == np.inf), np.nan, out)


def _dilog_series(z: Array) -> Array:
    """Li2(z) = sum z^k / k^2 for |z| <= 1/2."""
    power, total = np.ones_like(z), np.zeros_like(z)
    for k in range(1, 60):
        power = power * z
        total += power / (k * k)
    return total


def spence(x: Array) -> Array:
    """Spence's function int_1^x log(t) / (1 - t) dt = Li2(1 - x), for finite x >= 0 (NaN
    elsewhere, +inf included, as in TensorFlow)."""
    pi_squared_sixth = pi * pi / 6
    middle = (x >= 0.5) & (x <= 1.5)
    out = _dilog_series(np.where(middle, 1 - x, 0.0))
    low = (x > 0) & (x < 0.5)
    low_x = np.where(low, x, 0.25)
    out = np.where(low, pi_squared_sixth - np.log(low_x) * np.log1p(-low_x) - _dilog_series(low_x),
                   out)
    high = x > 1.5
    high_x = np.where(high, x, 2.0)
    ratio = (high_x - 1) / high_x
    inverse = 1 / high_x
    reflected = pi_squared_sixth - np.log(ratio) * np.log(inverse) - _dilog_series(
        np.where(ratio > 0.5, inverse, 0.0))
    dilog_ratio = np.where(ratio > 0.5, reflected, _dilog_series(np.where(ratio > 0.5, 0.0, ratio)))
    log_x = np.log(high_x)
    out = np.where(high, -dilog_ratio - 0.5 * log_x * log_x, out)
    out = np.where(x == 0, pi_squared_sixth, out)
    return np.where((x < 0) | np.isnan(x) | (x == np.inf), np.nan, out)


_DAWSON_LIMIT = 6.0


def dawsn(x: Array) -> Array:
    """Dawson's integral e^(-x^2) int_0^x e^(t^2) dt: e^(-x^2) sum x^(2k+1) / (k! (2k+1)) (all
    terms positive) for |x| < 6, 1/(2x) sum (2k-1)!! / (2x^2)^k above."""
    a = np.abs(x)
    near = a < _DAWSON_LIMIT
    small = np.where(near, a, 0.0)
    square = small * small
    term, total = small.copy(), small.copy()
    for k in range(1, 170):
        term = term * square / k
        total += term / (2 * k + 1)
    value = np.exp(-square) * total
    large = np.where(near, _DAWSON_LIMIT, a)
    inverse = 1 / (2 * large * large)
    term, series = np.ones_like(large), np.ones_like(large)
    for k in range(1, 34):
        term = term * (2 * k - 1) * inverse
        series += term
    value = np.where(near, value, series / (2 * large))
    return np.where(x == 0, 0.0, np.copysign(np.where(np.isinf(a), 0.0, value), x))


_FRESNEL_LIMIT = 6.0


def _fresnel(x: Array, cosine: bool) -> Array:
    """C(x) = int_0^x cos(pi t^2 / 2) dt or S(x) with sin, odd in x: Gauss-Legendre quadrature
    for |x| < 6, the auxiliary functions' asymptotic series above."""
    a = np.abs(x)
    near = a < _FRESNEL_LIMIT
    wave = np.cos if cosine else np.sin
    value = np.zeros_like(a)
    if near.any():
        def integral(inner: Array) -> tuple[Array]:
            t, w = _legendre_on(np.zeros_like(inner), inner)
            return (np.sum(w * wave(pi / 2 * t * t), axis=-1),)
        value[near] = _in_blocks(integral, a[near])[0]
    far = np.where(near | np.isinf(a), _FRESNEL_LIMIT, a)
    z = 1 / (pi * far * far)
    f, g, f_term, g_term = np.zeros_like(far), np.zeros_like(far), np.ones_like(far), z.copy()
    for k in range(12):
        f += f_term
        g += g_term
        f_term = -f_term * (4 * k + 1) * (4 * k + 3) * z * z
        g_term = -g_term * (4 * k + 3) * (4 * k + 5) * z * z
    f, g = f / (pi * far), g / (pi * far)
    phase = pi / 2 * far * far
    if cosine:
        asymptotic = 0.5 + f * np.sin(phase) - g * np.cos(phase)
    else:
        asymptotic = 0.5 - f * np.cos(phase) - g * np.sin(phase)
    value = np.where(near, value, np.where(np.isinf(a), 0.5, asymptotic))
    return np.copysign(value, x)


_float_unary("Expint", expint)
_float_unary("Spence", spence)
_float_unary("Dawsn", dawsn)
_float_unary("FresnelCos", lambda x: _fresnel(x, cosine=True))
_float_unary("FresnelSin", lambda x: _fresnel(x, cosine=False))


# --- x * f(y) with 0 * anything = 0, and the Euclidean norm ----------------------------------------

def _zero_where_x_is(fn: Callable[[Array, Array], Array]) -> Callable[..., tuple[Array]]:
    def special(x: Array, y: Array, **_) -> tuple[Array]:
        x, y = np.asarray(x), np.asarray(y)
        try:
            value = np.where(x == 0, np.zeros((), x.dtype), fn(x, y))
        except ValueError:
            raise KernelError(f"Incompatible shapes: {shape_text(x)} vs. {shape_text(y)}") from None
        return (np.asarray(value).astype(x.dtype, copy=False),)
    return special


kernel("Xlogy")(_zero_where_x_is(lambda x, y: x * np.log(y)))
kernel("Xlog1py")(_zero_where_x_is(lambda x, y: x * np.log1p(y)))
kernel("Xdivy")(_zero_where_x_is(lambda x, y: x / y))


@kernel("EuclideanNorm")
def euclidean_norm(input: Array, axis: Array, *, keep_dims: bool = False, **_) -> tuple[Array]:
    """sqrt(sum |x|^2) over the axes, in the input's type. Integers square and sum in their own
    type, wrapping around as TensorFlow's do, and truncate the root."""
    x = np.asarray(input)
    axes = _reduction_axes(np.asarray(axis), x.ndim)
    if x.dtype.kind in "iu":
        total = np.sum(x * x, axis=axes, keepdims=keep_dims, dtype=x.dtype)
        return (np.asarray(np.floor(np.sqrt(total.astype(np.float64)))).astype(x.dtype),)
    wide = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    squares = (wide * np.conj(wide)).real if x.dtype.kind == "c" else wide * wide
    norm = np.sqrt(np.sum(squares, axis=axes, keepdims=keep_dims))
    return (np.asarray(norm).astype(x.dtype),)
