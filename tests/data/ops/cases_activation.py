"""Kernel cases for activations, softmax and the softmax cross-entropy losses."""
import ml_dtypes
import numpy as np

RNG = np.random.default_rng(5)
BF16 = ml_dtypes.bfloat16
FLOATS = (np.float32, np.float64, np.float16, BF16)
SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 6.0, 7.5, -1e-3, 1e-3], np.float32)
EXTREMES = np.array([-100.0, -30.0, -17.0, -15.0, -1.0, 0.0, 1.0, 15.0, 17.0, 30.0, 100.0],
                    np.float32)


def name_of(dtype) -> str:
    return np.dtype(dtype).name


def sample(dtype, shape, low=-8.0, high=8.0):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return RNG.integers(max(int(low), info.min), min(int(high), info.max) + 1,
                            shape).astype(dtype)
    return (np.round(RNG.uniform(low, high, shape) * 64) / 64).astype(dtype)


def activation(op, dtypes, arg="features", **attrs):
    found = [case(op, name=name_of(d), **{arg: sample(d, (3, 4))}, **attrs) for d in dtypes]
    found += [
        case(op, name="scalar", **{arg: np.array(-1.5, np.float32)}, **attrs),
        case(op, name="empty", **{arg: np.zeros((0, 3), np.float32)}, **attrs),
        case(op, name="special", **{arg: SPECIAL}, **attrs),
        case(op, name="extremes", **{arg: EXTREMES}, **attrs),
        case(op, name="extremes_float64", **{arg: EXTREMES.astype(np.float64)}, **attrs),
    ]
    return found


INTEGERS = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16)

CASES = [
    *activation("Relu", FLOATS + INTEGERS),
    *activation("Relu6", FLOATS + INTEGERS),
    *activation("Elu", FLOATS),
    *activation("Selu", FLOATS),
    *activation("LeakyRelu", FLOATS),
    case("LeakyRelu", name="alpha", features=sample(np.float32, (3, 4)), alpha=0.01),
    case("LeakyRelu", name="alpha_above_one", features=sample(np.float32, (3, 4)), alpha=2.0),
    case("LeakyRelu", name="alpha_negative", features=sample(np.float64, (3, 4)), alpha=-0.5),
    *activation("Softplus", FLOATS),
    *activation("Softsign", FLOATS),
    *activation("Sigmoid", FLOATS, arg="x"),
    case("Sigmoid", name="complex64", x=(sample(np.float32, (4,)) + 1j * sample(np.float32, (4,))
                                         ).astype(np.complex64)),
]


def softmax(op):
    found = [case(op, name=name_of(d), logits=sample(d, (3, 5))) for d in FLOATS]
    found += [
        case(op, name="vector", logits=sample(np.float32, (6,))),
        case(op, name="rank3", logits=sample(np.float64, (2, 3, 4))),
        case(op, name="large_logits", logits=np.array([[1000.0, 0.0, -1000.0],
                                                       [89.0, 88.0, 87.0]], np.float32)),
        case(op, name="infinities", logits=np.array([[np.inf, 1.0], [-np.inf, 1.0],
                                                     [-np.inf, -np.inf]], np.float32)),
        case(op, name="nan", logits=np.array([[np.nan, 1.0, 2.0]], np.float32)),
        case(op, name="single_class", logits=sample(np.float32, (4, 1))),
        case(op, name="empty_rows", logits=np.zeros((0, 3), np.float32)),
        case(op, name="empty_classes", logits=np.zeros((2, 0), np.float32)),
    ]
    return found


def distributions(dtype, shape):
    weights = RNG.uniform(0, 1, shape)
    return (weights / weights.sum(axis=-1, keepdims=True)).astype(dtype)


CASES += [
    *softmax("Softmax"),
    *softmax("LogSoftmax"),
    *[case("SoftmaxCrossEntropyWithLogits", name=name_of(d), features=sample(d, (3, 5)),
           labels=distributions(d, (3, 5))) for d in FLOATS],
    case("SoftmaxCrossEntropyWithLogits", name="one_hot",
         features=sample(np.float32, (2, 3)), labels=np.eye(3, dtype=np.float32)[[2, 0]]),
    case("SoftmaxCrossEntropyWithLogits", name="broadcast_labels",
         features=sample(np.float32, (2, 3)), labels=distributions(np.float32, (1, 3))),
    case("SoftmaxCrossEntropyWithLogits", name="broadcast_features",
         features=sample(np.float64, (1, 4)), labels=distributions(np.float64, (3, 4))),
    case("SoftmaxCrossEntropyWithLogits", name="unnormalised_labels",
         features=sample(np.float32, (2, 3)), labels=sample(np.float32, (2, 3), 0, 2)),
    case("SoftmaxCrossEntropyWithLogits", name="large_logits",
         features=np.array([[1000.0, 0.0, -1000.0]], np.float32),
         labels=np.array([[0.25, 0.5, 0.25]], np.float32)),
    case("SoftmaxCrossEntropyWithLogits", name="empty_batch",
         features=np.zeros((0, 3), np.float32), labels=np.zeros((0, 3), np.float32)),
    case("SoftmaxCrossEntropyWithLogits", name="shapes", error=True, dynamic=True,
         features=sample(np.float32, (2, 3)), labels=distributions(np.float32, (2, 4))),
    *[case("SparseSoftmaxCrossEntropyWithLogits", name=f"{name_of(d)}_{name_of(i)}",
           features=sample(d, (4, 5)), labels=RNG.integers(0, 5, 4).astype(i))
      for d in FLOATS for i in (np.int32, np.int64)],
    case("SparseSoftmaxCrossEntropyWithLogits", name="large_logits",
         features=np.array([[1000.0, 0.0, -1000.0], [0.0, 0.0, 0.0]], np.float32),
         labels=np.array([2, 1], np.int32)),
    case("SparseSoftmaxCrossEntropyWithLogits", name="single_class",
         features=sample(np.float32, (3, 1)), labels=np.zeros(3, np.int32)),
    case("SparseSoftmaxCrossEntropyWithLogits", name="empty_batch",
         features=np.zeros((0, 3), np.float32), labels=np.zeros(0, np.int32)),
    case("SparseSoftmaxCrossEntropyWithLogits", name="label_too_large", error=True,
         dynamic=True, features=sample(np.float32, (2, 3)), labels=np.array([0, 3], np.int32)),
    case("SparseSoftmaxCrossEntropyWithLogits", name="label_negative", error=True,
         dynamic=True, features=sample(np.float32, (2, 3)), labels=np.array([-1, 0], np.int64)),
    case("SparseSoftmaxCrossEntropyWithLogits", name="no_classes", error=True, dynamic=True,
         features=np.zeros((2, 0), np.float32), labels=np.array([0, 0], np.int32)),
    case("SparseSoftmaxCrossEntropyWithLogits", name="batch_mismatch", error=True,
         dynamic=True, features=sample(np.float32, (2, 3)), labels=np.array([0, 0, 1], np.int32)),
]
