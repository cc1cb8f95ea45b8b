"""Export models that use linear algebra, special functions and exact GELU, as TensorFlow writes
them, with their inputs and TensorFlow's outputs. Needs TensorFlow 2.21 and Keras 3.

- gaussian_process: a Gaussian-process posterior and marginal likelihood (Cholesky, triangular
  solves, log-determinant, matrix inverse) and a Dirichlet/Beta log density (lgamma, digamma,
  betainc, igamma), in one tf.Module.
- exact_gelu: a Keras MLP with gelu(approximate=False), i.e. Erf, as in ConvNeXt and BERT.
- tanh_gelu: a Keras MLP with gelu(approximate=True), the tanh form keras-hub's BERT and GPT-2
  use: one gelu after a Dense layer, one whose input a residual Add also reads, and one whose
  result is the output (the native engine fuses each into one node).

Usage: python tests/data/models/make_models_linalg.py [NAME ...]   (default: all)
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from make_models import HERE, export_keras, export_module  # noqa: E402


class GaussianProcess(tf.Module):
    """An RBF-kernel Gaussian process on 1-D inputs, and distribution densities."""

    def __init__(self, train_x: np.ndarray, train_y: np.ndarray):
        super().__init__()
        self.train_x = tf.constant(train_x)
        self.train_y = tf.constant(train_y)

    def _kernel(self, a, b):
        return tf.exp(-0.5 * tf.square(a[:, None] - b[None, :]) / 0.3 ** 2)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float64, name="x")])
    def posterior(self, x):
        k = self._kernel(self.train_x, self.train_x) + 0.01 * tf.eye(tf.size(self.train_x),
                                                                         dtype=tf.float64)
        chol = tf.linalg.cholesky(k)
        alpha = tf.linalg.cholesky_solve(chol, self.train_y[:, None])
        cross = self._kernel(x, self.train_x)
        mean = tf.linalg.matmul(cross, alpha)[:, 0]
        v = tf.linalg.triangular_solve(chol, tf.transpose(cross), lower=True)
        variance = 1.0 - tf.reduce_sum(tf.square(v), axis=0)
        log_det = tf.linalg.logdet(k)
        _, slog = tf.linalg.slogdet(k)
        fit = -0.5 * tf.reduce_sum(self.train_y[:, None] * alpha) - 0.5 * log_det
        precision = tf.linalg.inv(k)
        return {"mean": mean, "variance": variance, "log_marginal": fit, "slogdet": slog,
                "precision_trace": tf.linalg.trace(precision),
                "solve": tf.linalg.solve(k, self.train_y[:, None])[:, 0]}

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="concentration"),
                                  tf.TensorSpec([None], tf.float32, name="p")])
    def densities(self, concentration, p):
        total = tf.reduce_sum(concentration, axis=-1)
        log_norm = tf.math.lgamma(total) - tf.reduce_sum(tf.math.lgamma(concentration), axis=-1)
        entropy_term = tf.reduce_sum((concentration - 1) * (tf.math.digamma(concentration)
                                                            - tf.math.digamma(total)[:, None]), -1)
        a, b = concentration[:, 0], concentration[:, 1]
        return {"log_norm": log_norm, "entropy_term": entropy_term,
                "beta_cdf": tf.math.betainc(a, b, p), "gamma_cdf": tf.math.igamma(a, p * 5),
                "quantile": tf.math.ndtri(p), "erfinv": tf.math.erfinv(2 * p - 1),
                "bessel": tf.math.special.bessel_i0e(a) + tf.math.special.bessel_j1(b)}


def exact_gelu():
    keras.utils.set_random_seed(0)
    inputs = keras.Input((12,), name="features")
    x = keras.layers.Dense(32)(inputs)
    x = keras.layers.Activation(lambda t: keras.activations.gelu(t, approximate=False))(x)
    x = keras.layers.LayerNormalization()(x)
    x = keras.layers.Dense(16, activation=lambda t: keras.activations.gelu(t, approximate=False))(x)
    return keras.Model(inputs, keras.layers.Dense(3)(x))


def tanh_gelu():
    keras.utils.set_random_seed(0)
    gelu = keras.layers.Activation(lambda t: keras.activations.gelu(t, approximate=True))
    inputs = keras.Input((12,), name="features")
    x = keras.layers.Dense(32, activation=lambda t: keras.activations.gelu(t, approximate=True))(inputs)
    y = keras.layers.Dense(32)(x)
    y = keras.layers.Add()([y, gelu(y)])
    return keras.Model(inputs, gelu(keras.layers.Dense(3)(y)))


def main(names: list[str]) -> None:
    rng = np.random.default_rng(14)
    train_x = np.linspace(-1, 1, 9)
    jobs = {
        "gaussian_process": lambda: export_module("gaussian_process", GaussianProcess(
            train_x, np.sin(3 * train_x) + 0.05 * rng.standard_normal(9)), {
                "posterior": {"x": np.linspace(-1.2, 1.2, 7)},
                "densities": {"concentration": rng.uniform(0.5, 4, (4, 3)).astype(np.float32),
                              "p": np.array([0.05, 0.3, 0.5, 0.93], np.float32)}}),
        "exact_gelu": lambda: export_keras("exact_gelu", exact_gelu(), {
            "features": (3 * rng.standard_normal((5, 12))).astype(np.float32)}),
        "tanh_gelu": lambda: export_keras("tanh_gelu", tanh_gelu(), {
            "features": (3 * rng.standard_normal((6, 12))).astype(np.float32)}),
    }
    for name in names or list(jobs):
        shutil.rmtree(HERE / name, ignore_errors=True)
        jobs[name]()


if __name__ == "__main__":
    main(sys.argv[1:])
