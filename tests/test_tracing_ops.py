"""The ops namespace: each op eagerly, inside a traced function, and in TensorFlow, on the same
inputs; the op definitions against TensorFlow's registry; the errors ops raise."""
from __future__ import annotations

import numpy as np
import pytest
from savedmodel.protos import op_def_pb2

import savedmodel as sm
from test_control_flow import graph_lines
from savedmodel.op_defs import all_op_defs

M = [[1.0, -2.0], [3.0, 4.0]]
V = [4, 5, 8, 3, 6]

# name -> function of the library module; the same code runs on savedmodel and TensorFlow.
CASES = {
    "constant": lambda tf: tf.constant(M),
    "constant_shape": lambda tf: tf.constant(7, shape=[2, 3]),
    "constant_dtype": lambda tf: tf.constant([1, 2], dtype=tf.float64),
    "add": lambda tf: tf.add(tf.constant(M), 1.0),
    "add_strings": lambda tf: tf.add(tf.constant(["a"]), tf.constant(["b"])),
    "string_add": lambda tf: [tf.constant("a") + tf.constant("b"), tf.constant(["a", "b"]) + "c",
                              tf.add(tf.constant("a"), tf.constant([["x"]]))],
    "subtract": lambda tf: tf.subtract(tf.constant(V), 2),
    "multiply": lambda tf: tf.multiply(tf.constant(M), tf.constant(M)),
    "operators": lambda tf: [tf.constant(V) + 1, 1 - tf.constant(V), tf.constant(V) * 3,
                             tf.constant(V) / 2, tf.constant(V) // 2, tf.constant(V) % 3,
                             tf.constant(V) ** 2, -tf.constant(V), abs(tf.constant([-1, 2]))],
    "float_operators": lambda tf: [tf.constant(M) / 3.0, tf.constant(M) // 3.0,
                                   tf.constant(M) % 3.0, 2.0 ** tf.constant(M)],
    "comparisons": lambda tf: [tf.constant(V) > 4, tf.constant(V) >= 5, tf.constant(V) < 5,
                               tf.constant(V) <= 4, tf.constant(V) == 5, tf.constant(V) != 5],
    "booleans": lambda tf: [tf.constant([True, False]) & tf.constant([True, True]),
                            tf.constant([True, False]) | False, ~tf.constant([True, False]),
                            tf.constant([True, False]) ^ tf.constant([True, True])],
    "matmul": lambda tf: tf.matmul(tf.constant(M), tf.constant(M)),
    "matmul_transposed": lambda tf: tf.matmul(tf.constant(M), tf.constant(M), transpose_b=True),
    "matmul_operator": lambda tf: tf.constant(M) @ tf.constant(M),
    "batch_matmul": lambda tf: tf.matmul(tf.ones([2, 2, 3]), tf.ones([2, 3, 2])),
    "maximum": lambda tf: tf.maximum(0., tf.constant([3., -3.])),
    "maximum_list": lambda tf: tf.maximum(0., [1, -1]),
    "minimum": lambda tf: tf.minimum(tf.constant(V), 5),
    "pow": lambda tf: tf.pow(tf.constant(V), 2),
    "reduce_mean": lambda tf: tf.reduce_mean(tf.pow(tf.constant(V) - tf.constant([0, 1, 6, 8, 4]),
                                                    2)),
    "reduce_mean_axis": lambda tf: tf.reduce_mean(tf.constant(M), axis=0),
    "reduce_sum": lambda tf: [tf.reduce_sum(tf.constant(M)), tf.reduce_sum(tf.constant(M), 1),
                              tf.reduce_sum(tf.constant(M), [0, 1], keepdims=True)],
    "reduce_max_min": lambda tf: [tf.reduce_max(tf.constant(M)), tf.reduce_min(tf.constant(M), 0)],
    "reduce_scalar": lambda tf: tf.reduce_mean(tf.constant(3.0)),
    "eye": lambda tf: tf.eye(3, dtype=tf.int32),
    "eye_rectangular": lambda tf: tf.eye(2, 3),
    "greater_less_equal": lambda tf: [tf.greater(tf.constant(V), 4), tf.less(tf.constant(V), 5),
                                      tf.equal(tf.constant(V), 5), tf.not_equal(tf.constant(V), 5)],
    "where_select": lambda tf: tf.where(tf.constant(V) % 2 == 0, tf.constant(V) // 2,
                                        3 * tf.constant(V) + 1),
    "where_coordinates": lambda tf: tf.where(tf.constant(M) > 0),
    "gather": lambda tf: [tf.gather(tf.constant(V), [1, 3]),
                          tf.gather(tf.constant(M), [1], axis=1)],
    "range": lambda tf: [tf.range(5), tf.range(1, 10, 2), tf.range(0.0, 1.0, 0.25),
                         tf.range(1, 2.5, 0.5)],
    "cast": lambda tf: [tf.cast(tf.constant(M), tf.int32), tf.cast(tf.constant(V), tf.float64)],
    "reshape": lambda tf: [tf.reshape(tf.constant(M), [-1]), tf.reshape(tf.constant(V), [5, 1])],
    "concat": lambda tf: [tf.concat([tf.constant(M), tf.constant(M)], 0),
                          tf.concat([tf.constant(M), tf.constant(M)], axis=1)],
    "stack": lambda tf: tf.stack([tf.constant(V), tf.constant(V)], axis=1),
    "zeros_ones": lambda tf: [tf.zeros([2, 3]), tf.ones([2], tf.int32), tf.zeros([1200]),
                              tf.zeros_like(tf.constant(V)), tf.ones_like(tf.constant(M))],
    "zeros_ones_int_shape": lambda tf: [tf.zeros(10), tf.ones(3, tf.int32)],
    "to_float": lambda tf: [tf.compat.v1.to_float(tf.constant(V)),
                            tf.compat.v1.to_float(tf.constant(M))],
    "relu": lambda tf: tf.nn.relu(tf.constant(M)),
    "softmax": lambda tf: [tf.nn.softmax(tf.constant(M)), tf.nn.softmax(tf.constant(M), axis=0)],
    "indexing": lambda tf: [tf.constant(M)[0], tf.constant(M)[:, 1], tf.constant(M)[0, 1],
                            tf.constant(V)[1:4:2], tf.constant(V)[::-1], tf.constant(M)[None, ...],
                            tf.constant(V)[-1]],
    "shape_ops": lambda tf: [tf.shape(tf.constant(M)), tf.size(tf.constant(M)),
                             tf.rank(tf.constant(M)), tf.transpose(tf.constant(M)),
                             tf.expand_dims(tf.constant(V), 1),
                             tf.squeeze(tf.constant([[1], [2]])), tf.tile(tf.constant(V), [2])],
    "math": lambda tf: [tf.math.sqrt(tf.constant([4.0, 9.0])), tf.math.exp(tf.constant([0.0])),
                        tf.math.square(tf.constant(V)), tf.math.argmax(tf.constant(V)),
                        tf.math.sign(tf.constant([-2, 0, 3]))],
    "variable_operators": lambda tf: [tf.Variable(2.0) * tf.constant(3.0),
                                      tf.Variable([1, 2])[1], tf.Variable(M).read_value()],
}


def _values(result) -> list[np.ndarray]:
    items = result if isinstance(result, list) else [result]
    return [np.asarray(item) for item in items]


def _same(ours: list[np.ndarray], theirs: list[np.ndarray]) -> None:
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype, (a.dtype, b.dtype)
        assert a.shape == b.shape
        if a.dtype.kind == "f":
            np.testing.assert_allclose(a, b, rtol=1e-6)
        else:
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", list(CASES))
def test_eager_graph_and_tensorflow_agree(tf, name):
    case = CASES[name]
    eager = _values(case(sm))
    graph = _values(sm.function(lambda: case(sm))())
    theirs = _values(case(tf))
    _same(eager, theirs)
    _same(graph, theirs)


@pytest.mark.parametrize("name", ["operators", "comparisons", "where_select", "indexing",
                                  "reduce_sum", "gather", "softmax", "string_add"])
def test_static_shapes_of_graph_tensors_match_tensorflows(tf, name):
    case = CASES[name]
    ours, theirs = [], []
    sm.function(lambda: ours.extend(t.shape.as_list() for t in _flat(case(sm))))()
    tf.function(lambda: theirs.extend(t.shape.as_list() for t in _flat(case(tf))))()
    assert ours == theirs


def test_string_join_and_match_shapes_are_tensorflows(tf):
    """The string ops the saver builds (StringJoin, StaticRegexFullMatch) infer TensorFlow's
    static shapes."""
    from savedmodel.op_builder import apply_op

    def ours():
        def join(*tensors):
            return apply_op("StringJoin", [list(tensors)], {"separator": ""})[0]
        scalar, vector = sm.constant("a"), sm.constant(["x", "y"])
        match = apply_op("StaticRegexFullMatch", [vector], {"pattern": "a"})[0]
        return [join(scalar, scalar), join(scalar, vector), join(vector, vector), match]

    def theirs():
        scalar, vector = tf.constant("a"), tf.constant(["x", "y"])
        return [tf.strings.join([scalar, scalar]), tf.strings.join([scalar, vector]),
                tf.strings.join([vector, vector]), tf.strings.regex_full_match(vector, "a")]

    shapes = {}
    sm.function(lambda: shapes.setdefault("ours", [t.shape.as_list() for t in ours()]))()
    tf.function(lambda: shapes.setdefault("theirs", [t.shape.as_list() for t in theirs()]))()
    assert shapes["ours"] == shapes["theirs"] == [[], [2], [2], [2]]


def _flat(result) -> list:
    return result if isinstance(result, list) else [result]


def test_a_variable_is_cast_as_tensorflow_casts_it(tf):
    """`cast`/`to_float` of a variable reads it inside the cast's name scope."""
    def graph(module):
        c = module.Variable(0)

        def f(x):
            c.assign_add(1)
            return x + module.compat.v1.to_float(c) + module.cast(c, module.float32)
        return graph_lines(module, f, [module.constant(1.0)])
    assert graph(sm) == graph(tf)


def test_shape_and_size_fold_to_constants_where_known_as_in_tensorflow(tf):
    """`shape`/`size` of a fully known shape (or `size` with a zero dimension) are constants
    in the graph; otherwise `Shape` (with its full type) and `Size` ops."""
    def graph(module):
        def f(x, y):
            return (module.shape(x), module.size(x), module.shape(y), module.size(y),
                    module.shape(x, out_type=module.int64), module.size(module.ones([0, 3])))
        return graph_lines(module, f, [module.TensorSpec([2, 3], module.float32),
                                       module.TensorSpec([None, 0], module.float32)])
    assert graph(sm) == graph(tf)


def test_slices_with_bounds_known_only_when_run_have_tensorflows_static_shapes(tf):
    """`x[i]` with a tensor `i`: shrunk axes go, whole axes and axes after the slice keep
    their sizes. (Slices with `...` or new axes stay unknown here; TensorFlow knows them.)"""
    def shapes(module):
        out = []

        def f(x, i):
            out.extend(t.shape for t in (x[i], x[i, :], x[:, i], x[i:], x[1:3, i],
                                         x[::2, 1], x[i, 1:2], x[:, :, i]))
            return x
        module.function(f).get_concrete_function(module.TensorSpec([3, 4, 5], module.float32),
                                                 module.TensorSpec([], module.int32))
        return [shape.as_list() for shape in out]
    assert shapes(sm) == shapes(tf)


@pytest.mark.parametrize("shape, fans", [((10, 10), 20), ((3, 3, 4, 8), 9 * 12), ((200,), 400)])
def test_glorot_uniform_initializer_draws_within_tensorflows_limit(tf, shape, fans):
    """Random values: TensorFlow's dtype and shape, and values within sqrt(6 / (fan_in +
    fan_out)) (a kernel's fans include its receptive field) that fill most of that range, as
    TensorFlow's do."""
    limit = np.sqrt(6 / fans)
    for module in (sm, tf):
        values = module.compat.v1.glorot_uniform_initializer()(shape).numpy()
        assert (values.dtype, values.shape) == (np.float32, shape)
        assert 0.8 * limit < np.abs(values).max() <= limit


def test_random_uniform_ranges_dtypes_and_shapes():
    ints = sm.random.uniform([5], maxval=10, dtype=sm.int32)
    assert ints.dtype is sm.int32 and ints.shape == (5,)
    assert np.all((0 <= ints.numpy()) & (ints.numpy() < 10))
    floats = sm.random.uniform([3, 2], minval=-1.0, maxval=2.0)
    assert floats.dtype is sm.float32 and floats.shape == (3, 2)
    assert np.all((-1 <= floats.numpy()) & (floats.numpy() < 2))
    traced = sm.function(lambda: sm.random.uniform([4], maxval=3, dtype=sm.int64))()
    assert traced.dtype is sm.int64 and np.all(traced.numpy() < 3)


# --------------------------------------------------------------------------------- errors

def _error(call):
    try:
        call()
    except Exception as err:
        return err
    raise AssertionError("no error raised")


def test_eager_kernel_errors_are_invalid_argument_errors_with_tensorflows_message(tf):
    for call in (lambda lib: lib.gather(lib.constant([0.0]), [1]),
                 lambda lib: lib.constant([1, 2]) + lib.constant([1, 2, 3]),
                 lambda lib: lib.constant(1) + lib.constant(1.0)):
        ours, theirs = _error(lambda: call(sm)), _error(lambda: call(tf))
        assert isinstance(ours, sm.errors.InvalidArgumentError)
        assert isinstance(theirs, tf.errors.InvalidArgumentError)
    ours = _error(lambda: sm.gather(sm.constant([0.0]), [1]))
    assert str(ours) == "indices[0] = 1 is not in [0, 1) [Op:GatherV2]"
    theirs = _error(lambda: tf.constant(1) + 1.5)
    assert str(_error(lambda: sm.constant(1) + 1.5)) == str(theirs)


@pytest.mark.parametrize("a, b", [([1.0, 2.0], [1.0, 2.0]), ([[1.0, 2.0]], [1.0, 2.0]),
                                  ([[1.0, 2.0]], [[1.0, 2.0]])])
def test_eager_matmul_errors_are_tensorflows(tf, a, b):
    """TensorFlow's text after its function-node prefix, up to the op name."""
    theirs = str(_error(lambda: tf.raw_ops.MatMul(a=tf.constant(a), b=tf.constant(b))))
    ours = str(_error(lambda: sm.matmul(sm.constant(a), sm.constant(b))))
    assert ours.split(" [Op:")[0] == theirs.split("} ", 1)[1].split(" [Op:")[0]


def test_graph_type_errors_match_tensorflows(tf):
    for call in (lambda lib: lib.maximum(0, lib.constant(1.0)),
                 lambda lib: lib.maximum(1, 2.5),
                 lambda lib: lib.constant(1) + lib.constant(1.0)):
        ours = _error(lambda: sm.function(lambda: call(sm)).get_concrete_function())
        theirs = _error(lambda: tf.function(lambda: call(tf)).get_concrete_function())
        assert type(ours) is TypeError and isinstance(theirs, TypeError)
        assert str(ours).split(". Error")[0] in str(theirs)


def test_graph_shape_errors_name_the_node_as_tensorflow_does(tf):
    def add(x, y):
        return x + y
    ours = _error(lambda: sm.function(add).get_concrete_function(
        sm.constant([1, 2]), sm.constant([1, 2, 3])))
    theirs = _error(lambda: tf.function(add).get_concrete_function(
        tf.constant([1, 2]), tf.constant([1, 2, 3])))
    assert isinstance(ours, ValueError) and isinstance(theirs, ValueError)
    expected = ("Dimensions must be equal, but are 2 and 3 for '{{node add}} = "
                "AddV2[T=DT_INT32](x, y)' with input shapes: [2], [3].")
    assert expected in str(ours) and str(ours) == str(theirs)


SHAPE_ERRORS = {
    "matmul": (lambda tf, x, y: tf.matmul(x, y), [[1., 2.]], [[1., 2.]]),
    "matmul_transposed": (lambda tf, x, y: tf.matmul(x, y, transpose_b=True), [[1., 2.]],
                          [[1., 2., 3.]]),
    "matmul_vectors": (lambda tf, x, y: tf.matmul(x, y), [1., 2.], [1., 2.]),
    "concat": (lambda tf, x, y: tf.concat([x, x, y], 0), [[1., 2.]], [[1., 2., 3.]]),
    "concat_last_axis": (lambda tf, x, y: tf.concat([x, y], -1), [[[1., 2.]]], [[[1.], [2.]]]),
    "concat_ranks": (lambda tf, x, y: tf.concat([x, y], 0), [[1., 2.]], [1., 2., 3.]),
    "reshape": (lambda tf, x, y: tf.reshape(x, [3, 5]), [[1., 2.]], [1.]),
    "reshape_fill": (lambda tf, x, y: tf.reshape(x, [-1, 4]), [[1., 2., 3.]], [1.]),
    "stack": (lambda tf, x, y: tf.stack([x, x, y]), [1., 2.], [1., 2., 3.]),
    "stack_ranks": (lambda tf, x, y: tf.stack([x, y], axis=1), [[1., 2.]], [1., 2., 3.]),
    "select": (lambda tf, x, y: tf.where(x > 0, x, y), [[1., 2.]], [[1., 2., 3.]]),
}


@pytest.mark.parametrize("name", list(SHAPE_ERRORS))
def test_graph_shape_errors_are_tensorflows(tf, name):
    """The message (its last line, or two for a merge): what is wrong, the node with all its
    attrs, the input shapes and the input values the check read. (TensorFlow names a failed `stack` `stack_1`: its
    first attempt used the name.)"""
    case, a, b = SHAPE_ERRORS[name]

    def message(module):
        with pytest.raises(ValueError) as info:
            module.function(lambda x, y: case(module, x, y)).get_concrete_function(
                module.constant(a), module.constant(b))
        lines = [line.strip() for line in str(info.value).strip().splitlines()]
        count = 2 if lines[-1].startswith("From merging") else 1
        return " ".join(lines[-count:]).removeprefix("ValueError: ")
    assert message(sm) == message(tf).replace("{{node stack_1}}", "{{node stack}}")


def test_constant_dtype_inference_and_conversion_errors(tf):
    for value in (1, 2**40, 1.5, True, "text", b"bytes", [1, 2.5], [[1, 2], [3, 4]],
                  np.float64(1.25), np.int16(3), np.array([1, 2], np.uint8), []):
        assert sm.constant(value).dtype.name == tf.constant(value).dtype.name, value
    for value, dtype in ((1.5, "int32"), ("a", "float32")):
        assert isinstance(_error(lambda: sm.constant(value, dtype=dtype)), TypeError)
        assert isinstance(_error(lambda: tf.constant(value, dtype=dtype)), (TypeError, ValueError))


# ----------------------------------------------------------------------------- definitions

def _arg_text(arg: op_def_pb2.OpDef.ArgDef) -> tuple:
    return (arg.name, arg.type, arg.type_attr, arg.number_attr, arg.type_list_attr)


def test_op_definitions_match_tensorflows_registry(tf):
    from tensorflow.python.framework import op_def_registry
    for name, ours in all_op_defs().items():
        theirs = op_def_pb2.OpDef.FromString(op_def_registry.get(name).SerializeToString())
        for ours_args, theirs_args in ((ours.input_arg, theirs.input_arg),
                                       (ours.output_arg, theirs.output_arg)):
            assert list(map(_arg_text, ours_args)) == list(map(_arg_text, theirs_args)), name
        ours_attrs = {a.name: (a.type, a.default_value.SerializeToString()) for a in ours.attr}
        theirs_attrs = {a.name: (a.type, a.default_value.SerializeToString()) for a in theirs.attr}
        assert ours_attrs == theirs_attrs, name
        assert ours.is_stateful == theirs.is_stateful, name


def test_print_formats_as_tensorflow_eagerly_and_in_graphs(tf, capfd):
    def prints(lib):
        lib.print("Calculating MSE!")
        lib.print(lib.constant([1, 2, 3, 4, 5]), "and", lib.constant(2.5), lib.constant("s"))
        lib.print(lib.constant([[1.5, 2.0], [3.0, 4.0]]), summarize=1)
    outputs = []
    for lib in (sm, tf):
        capfd.readouterr()
        prints(lib)
        lib.function(lambda: prints(lib))()
        outputs.append(capfd.readouterr().err)
    assert outputs[0] == outputs[1]
