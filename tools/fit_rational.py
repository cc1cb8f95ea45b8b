"""Fit the rational approximations the numpy kernels evaluate, and print their coefficients.

A function f is fitted as P(t)/Q(t) (Q's constant term 1) on Chebyshev nodes of an interval, by
weighted linear least squares on P - f*Q, reweighted towards the worst relative errors (Lawson's
iteration): a near-minimax fit for the relative error, which is what a float kernel needs.
The reference values come from Python's `math` module (correctly rounded to about 1 ulp).

Usage: python tools/fit_rational.py     (prints each fit's coefficients, highest power first)
"""
from __future__ import annotations

import math

import numpy as np


def fit(f, low: float, high: float, p_degree: int, q_degree: int, nodes: int = 4000,
        rounds: int = 30) -> tuple[np.ndarray, np.ndarray, float]:
    """(P's coefficients, Q's coefficients, max relative error), coefficients lowest first."""
    k = np.arange(nodes)
    t = (low + high) / 2 + (high - low) / 2 * np.cos(np.pi * (k + 0.5) / nodes)
    target = np.array([f(v) for v in t])
    scaled = t / high
    powers = np.vstack([scaled ** i for i in range(max(p_degree, q_degree) + 1)]).T
    weights, q_values = np.ones_like(t), np.ones_like(t)
    for _ in range(rounds):
        system = np.hstack([powers[:, :p_degree + 1], -target[:, None] * powers[:, 1:q_degree + 1]])
        scale = weights / np.abs(q_values * target)
        solution = np.linalg.lstsq(system * scale[:, None], target * scale, rcond=None)[0]
        p = solution[:p_degree + 1]
        q = np.r_[1.0, solution[p_degree + 1:]]
        q_values = powers[:, :q_degree + 1] @ q
        error = (powers[:, :p_degree + 1] @ p / q_values - target) / target
        weights *= 1 + 3 * np.abs(error) / np.abs(error).max()
    return p / high ** np.arange(p_degree + 1), q / high ** np.arange(q_degree + 1), \
        float(np.abs(error).max())


def erf_over_x(t: float) -> float:
    """erf(x)/x as a function of t = x^2 (runtime/kernels/math.py, float32 Erf on |x| <= 4)."""
    x = math.sqrt(t)
    return math.erf(x) / x if x > 0 else 2 / math.sqrt(math.pi)


def scaled_erfc(x: float) -> float:
    """exp(x^2) erfc(x) (runtime/kernels/math.py, float32 Erfc on 0.5 <= x <= 10.1)."""
    return math.erfc(x) * math.exp(x * x)


FITS = {"erf(x)/x on x^2 in [0, 16]": (erf_over_x, 0.0, 16.0, 5, 5),
        "exp(x^2) erfc(x) on x in [0.5, 10.1]": (scaled_erfc, 0.5, 10.1, 4, 4)}


def main() -> None:
    for name, (f, low, high, p_degree, q_degree) in FITS.items():
        p, q, error = fit(f, low, high, p_degree, q_degree)
        print(f"{name}, max relative error {error:.2g}")
        print("P:", tuple(float(c) for c in p[::-1]))
        print("Q:", tuple(float(c) for c in q[::-1]))


if __name__ == "__main__":
    main()
