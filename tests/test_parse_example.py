"""The reference engine's tf.Example parsing kernels beyond the recorded cases (those are in
tests/data/ops/parsing.json, replayed by test_kernels.py): error messages that name the key and
the example, inputs TensorFlow rejects before running, and bytes that are no Example, which
must be errors and never a wrong result or a traceback from inside."""
from __future__ import annotations

import random

import numpy as np
import pytest

from conftest import DATA
from savedmodel.protos import example_pb2
from savedmodel.runtime import dtypes, load, native
from savedmodel.runtime.errors import KernelError, SavedModelError
from savedmodel.runtime.kernels.parse_example import parse_example, parse_example_v2, parse_single_example

FLOAT, INT64, STRING = (dtypes.from_name(n) for n in ("float32", "int64", "string"))


def strings(*items, shape=None) -> np.ndarray:
    array = np.empty(len(items), object)
    array[:] = list(items)
    return array.reshape(shape if shape is not None else (len(items),))


def example(**features) -> bytes:
    message = example_pb2.Example()
    for key, values in features.items():
        kind = {float: "float_list", int: "int64_list", bytes: "bytes_list"}[type(values[0])]
        getattr(message.features.feature[key], kind).value.extend(values)
    return message.SerializeToString()


def v2(serialized, names=(), dense=(), sparse=()):
    """ParseExampleV2 with dense (key, default, shape) and sparse (key, dtype) features."""
    return parse_example_v2(serialized, strings(*names), strings(*[k.encode() for k, _ in sparse]),
                            strings(*[k.encode() for k, _, _ in dense]), strings(),
                            *[d for _, d, _ in dense], num_sparse=len(sparse), sparse_types=[t for _, t in sparse],
                            Tdense=[dtypes.from_numpy(np.asarray(d).dtype) for _, d, _ in dense],
                            dense_shapes=[s for _, _, s in dense], ragged_value_types=[], ragged_split_types=[])


REQUIRED_X = [("x", np.zeros(0, np.float32), (1,))]


def test_wrong_dtype_names_the_key_and_the_example():
    with pytest.raises(KernelError, match=r"Name: <unknown>, Key: x, Index: 1\.  Data types don't match\. "
                                          r"Data type: int64 but expected type: float"):
        v2(strings(example(x=[1.0]), example(x=[2])), dense=REQUIRED_X)
    with pytest.raises(KernelError, match=r"Key: tags, Index: 0\.  Data types don't match\. "
                                          r"Expected type: string, Actual type: float"):
        v2(strings(example(tags=[1.0])), sparse=[("tags", STRING)])


def test_missing_required_feature_names_it_and_the_example_name():
    with pytest.raises(KernelError, match=r"Name: second, Feature: x \(data type: float\) is required"):
        v2(strings(example(x=[1.0]), example(y=[1.0])), names=(b"first", b"second"), dense=REQUIRED_X)


def test_wrong_value_count_for_a_fixed_shape():
    with pytest.raises(KernelError, match=r"Key: x, Index: 0\.  Number of float values != expected\.  "
                                          r"Values size: 2 but output shape: \[1\]"):
        v2(strings(example(x=[1.0, 2.0])), dense=REQUIRED_X)


def test_serialized_of_rank_two_and_a_scalar_for_version_1_are_rejected():
    with pytest.raises(KernelError, match="scalar or vector"):
        v2(strings(example(x=[1.0]), shape=(1, 1)), dense=REQUIRED_X)
    with pytest.raises(KernelError, match="to be a vector"):
        parse_example(strings(example(x=[1.0]), shape=()), strings(), strings(b"x", shape=()),
                      np.zeros(0, np.float32), Nsparse=0, Ndense=1, sparse_types=[], Tdense=[FLOAT],
                      dense_shapes=[(1,)])
    with pytest.raises(KernelError, match="to be a scalar"):
        parse_single_example(strings(example(x=[1.0])), np.zeros(0, np.float32), dense_keys=["x"],
                             Tdense=[FLOAT], dense_shapes=[(1,)])


def test_a_key_asked_for_twice_is_an_error_not_an_empty_result():
    """TensorFlow returns empty outputs here (a wrong result); we refuse."""
    with pytest.raises(KernelError, match=r"\['x'\] are requested more than once"):
        v2(strings(example(x=[1.0])), dense=REQUIRED_X, sparse=[("x", FLOAT)])


def test_bad_bytes_are_an_error_showing_them():
    with pytest.raises(KernelError, match=r"Could not parse example input, value: '\\xff"):
        v2(strings(b"\xff\xff\xff"), dense=REQUIRED_X)


def damaged_examples() -> list[bytes]:
    """Every truncation of a valid Example, and 300 copies with 1 to 3 bytes changed."""
    rng = random.Random(7)
    valid = example(weight=[1.5], tags=[b"a", b"bc"], n=[3, 4])
    damaged = [valid[:cut] for cut in range(len(valid))]
    for _ in range(300):
        data = bytearray(valid)
        for _ in range(rng.randint(1, 3)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        damaged.append(bytes(data))
    return damaged


def test_damaged_examples_never_escape_as_other_exceptions():
    """Each damaged Example parses to a result of the declared dtypes and shapes, or raises
    KernelError."""
    for data in damaged_examples():
        try:
            outputs = v2(strings(data), dense=[("weight", np.float32([0]), (1,))],
                         sparse=[("tags", STRING), ("n", INT64)])
        except KernelError:
            continue
        tag_indices, n_indices, tags, n, _, _, dense = outputs
        assert dense.shape == (1, 1) and dense.dtype == np.float32
        assert tag_indices.shape == (len(tags), 2) and n_indices.shape == (len(n), 2)
        assert tags.dtype == object and n.dtype == np.int64


@pytest.mark.parametrize("engine", ["numpy", "native"])
def test_a_served_model_given_damaged_examples_answers_or_raises_a_clear_error(engine):
    """The fruit classifier (ParseExample v1 on "weight" and "tags") on every damaged Example,
    on each engine: scores of the right shape, or a SavedModelError; the native engine never
    lets a panic through."""
    if engine == "native" and not native.available():
        pytest.skip("the native engine is not built")
    classify = load(DATA / "serving" / "fruit" / "00000001", engine=engine).signatures["serving_default"]
    for data in damaged_examples():
        try:
            scores = classify(inputs=strings(data))["scores"]
        except SavedModelError:
            continue
        assert scores.shape == (1, 2) and np.isfinite(scores).all()


@pytest.mark.parametrize("serialized, dense, sparse", [
    ([example(x=[1.0]), example(x=[2])], REQUIRED_X, ()),
    ([example(x=[1.0]), example(x=[b"s"])], (), [("x", FLOAT)]),
    ([example(x=[1.0]), example(y=[1.0])], REQUIRED_X, ()),
    ([example(x=[1.0, 2.0])], REQUIRED_X, ()),
    ([example(x=[1.0]), b"garbage"], REQUIRED_X, ()),
], ids=["dense_dtype", "sparse_dtype", "required", "count", "bad_bytes"])
def test_error_messages_are_tensorflows(tf, serialized, dense, sparse):
    """Our message is TensorFlow's, without its node and op decorations."""
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        tf.raw_ops.ParseExampleV2(
            serialized=serialized, names=[], sparse_keys=[k for k, _ in sparse], dense_keys=[k for k, _, _ in dense],
            ragged_keys=[], dense_defaults=[tf.constant(d) for _, d, _ in dense], num_sparse=len(sparse),
            sparse_types=[tf.float32 for _ in sparse], ragged_value_types=[], ragged_split_types=[],
            dense_shapes=[s for _, _, s in dense])
    theirs = raised.value.message.split("}} ", 1)[-1].split(" [Op:", 1)[0].strip()
    with pytest.raises(KernelError) as ours:
        v2(strings(*serialized), dense=dense, sparse=sparse)
    assert str(ours.value) == theirs
