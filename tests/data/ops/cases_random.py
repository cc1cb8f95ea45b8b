"""Kernel cases for random ops: TensorFlow's Philox generator and distributions, bit for bit.

Shapes include empty ones and sizes that are not multiples of the 4 (2 for 64-bit types)
values one generator call makes. Stateful ops are recorded on one run of a fresh node, so
their cases are seeded (seed, seed2 or both nonzero); later runs are covered by the
random_stateful model fixture (tests/test_random_ops.py).

TensorFlow checks a Philox counter's length against the algorithm's id (1) instead of the
counter size (2), then reads past the end of a 1-element counter: no case records that (the
kernel rejects such a counter).
"""
import ml_dtypes
import numpy as np
import tensorflow as tf

FLOATS = (tf.float32, tf.float64, tf.float16, tf.bfloat16)
SHAPES = {"empty": [0], "empty_inner": [2, 0, 3], "one": [1], "five": [5], "odd": [3, 3],
          "even": [4, 4], "long": [101]}
SEEDS = {"small": np.array([1, 2], np.int32), "negative": np.array([-7, 2147483647], np.int32),
         "large": np.array([-1, 2 ** 62 + 12345], np.int64), "zero": np.array([0, 0], np.int64)}
KEY = np.array([0xDEADBEEF12345678], np.uint64)
COUNTERS = {"plain": np.array([5, 9], np.uint64),
            "carry": np.array([2 ** 64 - 2, 2 ** 64 - 1], np.uint64),
            "long_counter": np.array([1, 2, 3], np.uint64)}
PHILOX, THREEFRY, AUTO = np.int32(1), np.int32(2), np.int32(3)


def shape(dims, dtype=np.int32):
    return np.array(dims, dtype)


def v1_cases(op, dtypes):
    found = []
    for dtype in dtypes:
        for name, dims in SHAPES.items():
            seed = SEEDS["large" if len(dims) % 2 else "small"]
            found.append(case(op, name=f"{dtype.name}_{name}", shape=shape(dims), seed=seed, dtype=dtype))
    found += [case(op, name=f"seed_{name}", shape=shape([6], np.int64), seed=seed, dtype=dtypes[0])
              for name, seed in SEEDS.items()]
    found += [case(op, name="seed_shape", shape=shape([3]), seed=np.array([1, 2, 3], np.int64),
                   dtype=dtypes[0], error=True, dynamic=True),
              case(op, name="negative_dim", shape=shape([2, -1]), seed=SEEDS["small"], dtype=dtypes[0],
                   error=True, dynamic=True)]
    return found


def v2_cases(op, dtypes, **extra):
    found = []
    for dtype in dtypes:
        for name, dims in SHAPES.items():
            counter = COUNTERS["carry" if len(dims) % 2 else "plain"]
            found.append(case(op, name=f"{dtype.name}_{name}", shape=shape(dims), key=KEY, counter=counter,
                              alg=PHILOX, dtype=dtype, **extra))
    found += [case(op, name=f"counter_{name}", shape=shape([7], np.int64), key=KEY, counter=counter,
                   alg=AUTO, dtype=dtypes[0], **extra) for name, counter in COUNTERS.items()]
    found += [case(op, name="threefry", shape=shape([4]), key=KEY, counter=COUNTERS["plain"], alg=THREEFRY,
                   dtype=dtypes[0], error=True, dynamic=True, **extra),
              case(op, name="key_shape", shape=shape([4]), key=np.array([1, 2], np.uint64),
                   counter=COUNTERS["plain"], alg=PHILOX, dtype=dtypes[0], error=True, dynamic=True, **extra)]
    return found


def int_bounds(dtype):
    info = np.iinfo(dtype)
    return {"small": (dtype(-3), dtype(4)), "wide": (dtype(info.min), dtype(info.max)),
            "positive": (dtype(10), dtype(1000003))}


def uniform_int_cases():
    found = []
    for dtype in (np.int32, np.int64):
        for name, (low, high) in int_bounds(dtype).items():
            found.append(case("StatelessRandomUniformInt", name=f"{dtype.__name__}_{name}", shape=shape([3, 3]),
                              seed=SEEDS["large"], minval=low, maxval=high))
            found.append(case("StatelessRandomUniformIntV2", name=f"{dtype.__name__}_{name}", shape=shape([7]),
                              key=KEY, counter=COUNTERS["carry"], alg=PHILOX, minval=low, maxval=high))
            found.append(case("RandomUniformInt", name=f"{dtype.__name__}_{name}", shape=shape([2, 5]),
                              minval=low, maxval=high, seed=11, seed2=-5))
        found.append(case("StatelessRandomUniformInt", name=f"{dtype.__name__}_empty_reversed",
                          shape=shape([0, 4]), seed=SEEDS["small"], minval=dtype(5), maxval=dtype(5)))
        found.append(case("RandomUniformInt", name=f"{dtype.__name__}_empty_reversed", shape=shape([0]),
                          minval=dtype(5), maxval=dtype(1), seed=1, seed2=1))
    found += [
        case("StatelessRandomUniformInt", name="equal_bounds", shape=shape([2]), seed=SEEDS["small"],
             minval=np.int32(5), maxval=np.int32(5), error=True),
        case("StatelessRandomUniformIntV2", name="reversed_bounds", shape=shape([2]), key=KEY,
             counter=COUNTERS["plain"], alg=PHILOX, minval=np.int64(5), maxval=np.int64(-5), error=True),
        case("StatelessRandomUniformIntV2", name="empty_reversed", shape=shape([0]), key=KEY,
             counter=COUNTERS["plain"], alg=PHILOX, minval=np.int64(5), maxval=np.int64(-5)),
        case("RandomUniformInt", name="reversed_bounds", shape=shape([3]), minval=np.int32(2),
             maxval=np.int32(2), seed=1, seed2=2, error=True),
    ]
    return found


def stateful_cases():
    seeds = {"both": (87654321, 42), "op_only": (5, 0), "graph_only": (0, 77), "negative": (-3, -2 ** 62)}
    found = []
    for op in ("RandomUniform", "RandomStandardNormal", "TruncatedNormal"):
        for dtype in FLOATS:
            for name, dims in (("odd", [3, 3]), ("long", [2, 51]), ("empty", [0, 2])):
                found.append(case(op, name=f"{dtype.name}_{name}", shape=shape(dims), dtype=dtype,
                                  seed=3, seed2=9))
        found += [case(op, name=f"seed_{name}", shape=shape([7], np.int64), dtype=tf.float32, seed=s, seed2=s2)
                  for name, (s, s2) in seeds.items()]
        found.append(case(op, name="negative_dim", shape=shape([-2]), dtype=tf.float32, seed=1, seed2=1,
                          error=True, dynamic=True))
    return found


LOGITS = np.array([[0.0, 1.0, 2.0, -1.0], [5.0, -np.inf, 5.0, 0.5], [-100.0, -100.0, -99.0, np.nan]],
                  np.float32)


def multinomial_cases():
    found = []
    for dtype in (np.float32, np.float64, np.float16, ml_dtypes.bfloat16):
        found.append(case("StatelessMultinomial", name=np.dtype(dtype).name, logits=LOGITS.astype(dtype),
                          num_samples=np.int32(7), seed=SEEDS["large"]))
    found += [
        case("StatelessMultinomial", name="int64_output", logits=LOGITS, num_samples=np.int32(5),
             seed=SEEDS["small"], output_dtype=tf.int64),
        case("StatelessMultinomial", name="many", logits=LOGITS[:1], num_samples=np.int32(64),
             seed=SEEDS["negative"]),
        case("StatelessMultinomial", name="no_samples", logits=LOGITS, num_samples=np.int32(0),
             seed=SEEDS["small"]),
        case("StatelessMultinomial", name="no_rows", logits=np.zeros((0, 3), np.float32),
             num_samples=np.int32(3), seed=SEEDS["small"]),
        case("StatelessMultinomial", name="no_classes", logits=np.zeros((2, 0), np.float32),
             num_samples=np.int32(3), seed=SEEDS["small"], error=True),
        case("StatelessMultinomial", name="negative_samples", logits=LOGITS, num_samples=np.int32(-1),
             seed=SEEDS["small"], error=True),
        case("Multinomial", name="seeded", logits=LOGITS, num_samples=np.int32(6), seed=4, seed2=8),
        case("Multinomial", name="int64_output", logits=LOGITS.astype(np.float64), num_samples=np.int32(3),
             seed=4, seed2=0, output_dtype=tf.int64),
    ]
    return found


def shuffle_cases():
    strings = np.array([f"s{i}".encode() for i in range(9)], object)
    return [
        case("RandomShuffle", name="vector", value=np.arange(10, dtype=np.float32), seed=1, seed2=2),
        case("RandomShuffle", name="rows", value=np.arange(21, dtype=np.int64).reshape(7, 3), seed=5, seed2=0),
        case("RandomShuffle", name="long", value=np.arange(1000, dtype=np.int32), seed=0, seed2=9),
        case("RandomShuffle", name="strings", value=strings, seed=-4, seed2=4),
        case("RandomShuffle", name="one_row", value=np.ones((1, 4), np.float64), seed=3, seed2=3),
        case("RandomShuffle", name="empty", value=np.zeros((0, 2), np.float32), seed=3, seed2=3),
        case("RandomShuffle", name="scalar", value=np.array(7, np.int32), seed=3, seed2=3),
    ]


def key_counter_cases():
    found = []
    for name, seed in SEEDS.items():
        found.append(case("StatelessRandomGetKeyCounter", name=name, seed=seed))
        found.append(case("StatelessRandomGetKeyCounterAlg", name=name, seed=seed))
    found += [case("StatelessRandomGetKeyCounter", name="seed_shape", seed=np.array([1], np.int32),
                   error=True, dynamic=True),
              case("StatelessRandomGetAlg")]
    return found


CASES = (
    v1_cases("StatelessRandomUniform", FLOATS)
    + v1_cases("StatelessRandomNormal", FLOATS)
    + v1_cases("StatelessTruncatedNormal", FLOATS)
    + v1_cases("StatelessRandomUniformFullInt", (tf.int32, tf.int64, tf.uint32, tf.uint64))
    + v2_cases("StatelessRandomUniformV2", FLOATS)
    + v2_cases("StatelessRandomNormalV2", FLOATS)
    + v2_cases("StatelessTruncatedNormalV2", FLOATS)
    + v2_cases("StatelessRandomUniformFullIntV2", (tf.int32, tf.int64, tf.uint32, tf.uint64))
    + uniform_int_cases()
    + stateful_cases()
    + multinomial_cases()
    + shuffle_cases()
    + key_counter_cases()
)
