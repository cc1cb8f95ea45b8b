"""Eager tensors, their shapes and text forms, against TensorFlow's."""
from __future__ import annotations

import numpy as np
import pytest

import savedmodel as sm
from savedmodel.shapes import TensorShape

VALUES = [13, 1.5, 0.1, 1e-10, 1e20, -2.5, float("nan"), True, "a", b"bytes", [0.1, 0.2],
          [[1.0, 2.0], [3.0, 4.5]], ["a", "b"], np.float64(0.1), np.float16(0.1), np.int64(5),
          np.arange(2000), np.zeros((2, 0)), [[True, False]]]


def _tf_text(text: str) -> str:
    return text.replace("savedmodel.", "tf.")


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_text_forms_match_tensorflows(tf, value):
    ours, theirs = sm.constant(value), tf.constant(value)
    assert _tf_text(str(ours)) == str(theirs)
    assert _tf_text(repr(ours)) == repr(theirs)
    assert str(ours.shape) == str(theirs.shape) and repr(ours.shape) == repr(theirs.shape)
    assert ours.dtype.name == theirs.dtype.name
    assert repr(ours.dtype) == "savedmodel." + theirs.dtype.name
    assert type(ours.numpy()) is type(theirs.numpy())


def test_symbolic_tensor_text_forms_match_tensorflows(tf):
    def build(lib):
        seen = []

        @lib.function
        def f(x, y):
            seen.extend([str(x), repr(x), str(x + 1), str(y), repr(y)])
            return x
        f.get_concrete_function(lib.TensorSpec([None, 2], lib.float32),
                                lib.TensorSpec(None, lib.int32))
        return seen
    assert [_tf_text(s) for s in build(sm)] == build(tf)


def test_tensor_shape_behaves_as_tensorflows(tf):
    for dims in ([], [2, 3], [None, 2], None, [0]):
        ours, theirs = TensorShape(dims), tf.TensorShape(dims)
        assert (str(ours), repr(ours)) == (str(theirs), repr(theirs))
        assert ours.rank == theirs.rank
        assert ours.is_fully_defined() == theirs.is_fully_defined()
        if dims is not None:
            assert ours.as_list() == theirs.as_list() and ours == dims and ours == tuple(dims)
            assert len(ours) == len(theirs) and list(ours) == list(theirs)
    assert TensorShape([None, 2]).is_compatible_with([3, 2])
    assert not TensorShape([None, 2]).is_compatible_with([3, 3])
    assert TensorShape([1, 2]).most_specific_compatible_shape([1, 3]) == [1, None]
    with pytest.raises(ValueError):
        TensorShape(None).as_list()
    assert sm.constant([[1, 2]]).shape == (1, 2) and sm.constant([[1, 2]]).shape.as_list() == [1, 2]


def test_python_protocols_match_tensorflows(tf):
    def outcome(call):
        try:
            return ("ok", call())
        except Exception as err:
            return ("error", type(err).__name__)
    for lib_call in (lambda lib: bool(lib.constant([1, 2])), lambda lib: bool(lib.constant([0])),
                     lambda lib: len(lib.constant(1)), lambda lib: len(lib.constant([1, 2, 3])),
                     lambda lib: iter(lib.constant(1)), lambda lib: hash(lib.constant(1)),
                     lambda lib: [int(t) for t in lib.constant([4, 5])],
                     lambda lib: float(lib.constant(1.5)), lambda lib: int(lib.constant([3])),
                     lambda lib: [1, 2, 3][lib.constant(1)], lambda lib: f"{lib.constant(2.5):.2f}",
                     lambda lib: lib.constant([1, 2]) == None,
                     lambda lib: lib.constant([1, 2]) != None):
        assert outcome(lambda: lib_call(sm)) == outcome(lambda: lib_call(tf))


def test_numpy_operands_on_either_side_give_tensors(tf):
    for call in (lambda lib: np.array([1.0, 2.0], np.float32) + lib.constant(1.0),
                 lambda lib: lib.constant(1.0) + np.float64(2.0),
                 lambda lib: np.float64(2.0) * lib.constant([1.0, 2.0])):
        ours, theirs = call(sm), call(tf)
        assert isinstance(ours, sm.Tensor)
        assert ours.dtype.name == theirs.dtype.name
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_eager_tensors_are_immutable_values():
    source = np.array([1.0, 2.0], np.float32)
    tensor = sm.constant(source)
    source[0] = 9.0
    tensor.numpy()[1] = 9.0
    np.asarray(tensor)[0] = 9.0
    np.testing.assert_array_equal(tensor.numpy(), [1.0, 2.0])
    assert tensor.ref() == tensor.ref() and {tensor.ref(): 1}[tensor.ref()] == 1
