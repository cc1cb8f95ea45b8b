"""sm.function against tf.function: retracing, signatures, concrete functions, errors, side
effects, variables, methods and nested Functions."""
from __future__ import annotations

import re

import numpy as np

import savedmodel as sm


def as_tf_text(text: str) -> str:
    """Our printouts in TensorFlow's spelling, with the ids of captured values blanked."""
    text = text.replace("savedmodel.", "tf.")
    return re.sub(r"^(\s+)\d+:", r"\1<id>:", text, flags=re.M)


def _both(tf, build):
    """The same code on savedmodel and on TensorFlow."""
    return build(sm), build(tf)


def _error(call):
    try:
        call()
    except Exception as err:
        return err
    raise AssertionError("no error raised")


# ----------------------------------------------------------------------- retracing

def test_retracing_counts_follow_tensorflows_rules(tf):
    def build(lib):
        traces = []

        @lib.function
        def f(x, y=1):
            traces.append(1)
            return x

        calls = [lambda: f(lib.constant(1.0)), lambda: f(lib.constant(2.0)),
                 lambda: f(lib.constant([1.0])), lambda: f(lib.constant([1, 2])),
                 lambda: f(1), lambda: f(1.0), lambda: f(True), lambda: f(x=1), lambda: f(1, 1),
                 lambda: f(2), lambda: f([1, 2]), lambda: f((1, 2)), lambda: f({"a": 1}),
                 lambda: f(None), lambda: f(np.array([1.0, 2.0], np.float32)),
                 lambda: f(np.array([1.0, 2.0])), lambda: f(np.float32(1.0)),
                 lambda: f(np.float32(2.0)), lambda: f(np.int64(3))]
        counts = []
        for call in calls:
            call()
            counts.append(f.experimental_get_tracing_count())
        return counts, len(traces)
    ours, theirs = _both(tf, build)
    assert ours == theirs


def test_reduce_retracing_generalizes_shapes_as_tensorflow(tf):
    def build(lib):
        @lib.function(reduce_retracing=True)
        def g(x):
            return x
        for value in ([1.0], [1.0, 2.0], [1.0, 2.0, 3.0], [[1.0]], [[1.0, 2.0]], 1.0, 2.0):
            g(lib.constant(value))
        for value in (1, 2):
            g(value)
        return g.experimental_get_tracing_count(), g.pretty_printed_concrete_signatures()
    (ours_count, ours_text), (theirs_count, theirs_text) = _both(tf, build)
    assert ours_count == theirs_count
    assert as_tf_text(ours_text) == theirs_text


def test_a_trace_with_unknown_dimensions_serves_other_sizes(tf):
    def build(lib):
        @lib.function
        def f(x):
            return x * 2
        f.get_concrete_function(lib.TensorSpec([None], lib.float32))
        f(lib.constant([1.0, 2.0]))
        f(lib.constant([1.0, 2.0, 3.0]))
        return f.experimental_get_tracing_count()
    ours, theirs = _both(tf, build)
    assert ours == theirs == 1


# ----------------------------------------------------------------------- signatures

def test_pretty_printed_concrete_signatures_match_tensorflows(tf):
    def build(lib):
        @lib.function
        def my_relu(x):
            return lib.maximum(0., x)
        my_relu(lib.constant(5.5))
        my_relu([1, -1])
        my_relu([3, -7])
        my_relu(lib.constant([3., -3.]))

        @lib.function
        def many(a, b=2, *args, c, d=3, **kw):
            return a
        many(lib.constant(1), c=lib.constant([1., 2.]))
        many(lib.constant(1), 5, 6, c=1.5, e="s", f=None)

        @lib.function
        def multi(x, y):
            return x, {"b": y, "a": x * 2}, None, 3

        multi(lib.constant(1), lib.constant([1.]))

        @lib.function
        def nothing(x):
            return None
        nothing(lib.constant(1))

        @lib.function(input_signature=[lib.TensorSpec([None], lib.int32, name="renamed"),
                                       lib.TensorSpec(None, lib.float32)])
        def signed(x, y):
            return lib.reduce_sum(y)
        signed.get_concrete_function()

        c, v = lib.constant(3.0), lib.Variable(2.0)

        @lib.function
        def captures(x):
            return x * c + v
        captures(lib.constant(1.0))
        return [fn.pretty_printed_concrete_signatures()
                for fn in (my_relu, many, multi, nothing, signed, captures)]
    ours, theirs = _both(tf, build)
    assert [as_tf_text(text) for text in ours] == [as_tf_text(text) for text in theirs]


def test_concrete_function_attributes_match_tensorflows(tf):
    def build(lib):
        @lib.function
        def k(xs, d, n=None):
            return {"s": xs[0] + xs[1], "t": (d["a"], None)}
        cf = k.get_concrete_function([lib.constant(1.0), lib.constant(2.0)],
                                     {"a": lib.constant(3.0)})

        @lib.function
        def double(a):
            return a + a
        ds = double.get_concrete_function(lib.TensorSpec(shape=None, dtype=lib.string))
        return [repr(x) for x in (cf.structured_input_signature, cf.structured_outputs, cf.inputs,
                                  cf.outputs, ds.structured_input_signature, ds.inputs,
                                  ds.outputs)] + [str(ds.structured_outputs)]
    ours, theirs = _both(tf, build)
    assert [as_tf_text(text) for text in ours] == theirs


def test_concrete_functions_take_positional_and_keyword_arguments():
    @sm.function
    def k(xs, d, n=None):
        return {"s": xs[0] + xs[1], "t": (d["a"], None)}
    cf = k.get_concrete_function([sm.constant(1.0), sm.constant(2.0)], {"a": sm.constant(3.0)})
    for result in (cf([sm.constant(1.0), sm.constant(2.0)], {"a": sm.constant(3.0)}),
                   cf(xs=[np.float32(1.0), 2.0], d={"a": sm.constant(3.0)}, n=None)):
        assert float(result["s"]) == 3.0 and float(result["t"][0]) == 3.0
        assert result["t"][1] is None
    assert k.experimental_get_tracing_count() == 1


# ----------------------------------------------------------------------- errors

def test_input_signature_errors_match_tensorflows(tf):
    def build(lib):
        @lib.function(input_signature=(lib.TensorSpec(shape=[None], dtype=lib.int32),))
        def next_collatz(x):
            return lib.where(x % 2 == 0, x // 2, 3 * x + 1)
        values = next_collatz(lib.constant([1, 2])).numpy()
        errors = [_error(lambda: next_collatz(lib.constant([[1, 2], [3, 4]]))),
                  _error(lambda: next_collatz(lib.constant([1.0, 2.0])))]
        return values, errors
    (ours_values, ours_errors), (theirs_values, theirs_errors) = _both(tf, build)
    np.testing.assert_array_equal(ours_values, theirs_values)
    for ours, theirs in zip(ours_errors, theirs_errors):
        assert isinstance(ours, TypeError) and isinstance(ours, ValueError)
        assert type(theirs) is TypeError
        assert as_tf_text(str(ours)).split("`")[1] == str(theirs).split("`")[1]
    assert as_tf_text(str(ours_errors[0])) == str(theirs_errors[0])


def test_calling_a_concrete_function_with_a_wrong_dtype_is_tensorflows_error(tf):
    def build(lib):
        @lib.function
        def double(a):
            return a + a
        strings = double.get_concrete_function(lib.TensorSpec(shape=None, dtype=lib.string))
        return (strings(lib.constant("a")).numpy(), strings(a=lib.constant("b")).numpy(),
                _error(lambda: strings(lib.constant(1))),
                _error(lambda: double(lib.constant(1), lib.constant(2))))
    ours, theirs = _both(tf, build)
    assert ours[:2] == theirs[:2] == (b"aa", b"bb")
    assert isinstance(ours[2], sm.errors.InvalidArgumentError)
    assert re.sub(r"_\d+", "", str(ours[2])) == re.sub(r"_\d+", "", str(theirs[2]))
    assert type(ours[3]) is type(theirs[3]) is TypeError
    assert as_tf_text(str(ours[3])) == str(theirs[3])


def test_returning_an_object_that_is_not_a_tensor_is_an_error():
    err = _error(lambda: sm.function(lambda: object())())
    assert isinstance(err, TypeError) and "found return value of type object" in str(err)


def test_symbolic_tensors_refuse_python_bool_len_and_iteration(tf):
    for use in (bool, len, iter):
        ours = _error(lambda: sm.function(lambda x: use(x), autograph=False)(sm.constant([1, 2])))
        theirs = _error(lambda: tf.function(lambda x: use(x), autograph=False)(tf.constant([1, 2])))
        assert isinstance(ours, TypeError) and isinstance(theirs, TypeError)
    assert isinstance(_error(lambda: sm.function(lambda x: bool(x))(sm.constant(1))),
                      sm.errors.OperatorNotAllowedInGraphError)


# ----------------------------------------------------------------------- side effects

def test_python_print_runs_when_tracing_and_sm_print_on_every_call(capsys):
    @sm.function
    def get_mse(y_true, y_pred):
        print("Tracing!")
        sm.print("Calculating MSE!")
        return sm.reduce_mean(sm.pow(y_true - y_pred, 2))
    y_true, y_pred = sm.constant([4, 5, 8, 3, 6]), sm.constant([0, 1, 6, 8, 4])
    for _ in range(3):
        assert get_mse(y_true, y_pred).numpy() == 13
    captured = capsys.readouterr()
    assert captured.out == "Tracing!\n"
    assert captured.err == "Calculating MSE!\n" * 3


def test_run_functions_eagerly_runs_the_python_code(capsys):
    @sm.function
    def get_mse(y_true, y_pred):
        print("Calculating MSE!")
        return sm.reduce_mean(sm.pow(y_true - y_pred, 2))
    y_true, y_pred = sm.constant([4, 5, 8, 3, 6]), sm.constant([0, 1, 6, 8, 4])
    sm.config.run_functions_eagerly(True)
    try:
        results = [get_mse(y_true, y_pred) for _ in range(3)]
    finally:
        sm.config.run_functions_eagerly(False)
    assert [int(r) for r in results] == [13, 13, 13]
    assert capsys.readouterr().out == "Calculating MSE!\n" * 3
    assert get_mse.experimental_get_tracing_count() == 0


def test_non_strict_execution_skips_unneeded_ops(tf):
    def unused(lib):
        def fn(x):
            lib.gather(x, [1])
            return x
        return fn
    eager_error = _error(lambda: unused(sm)(sm.constant([0.0])))
    assert isinstance(eager_error, sm.errors.InvalidArgumentError)
    np.testing.assert_array_equal(sm.function(unused(sm))(sm.constant([0.0])), [0.0])
    np.testing.assert_array_equal(tf.function(unused(tf))(tf.constant([0.0])), [0.0])


def test_numpy_values_are_fixed_when_tracing():
    rng = np.random.default_rng(0)

    @sm.function
    def noisy():
        return sm.constant(1.0) + rng.standard_normal(3).astype(np.float32)
    assert np.array_equal(noisy().numpy(), noisy().numpy())


# ----------------------------------------------------------------------- variables and captures

def test_variables_in_functions_match_tensorflow(tf):
    def build(lib):
        v = lib.Variable(1.0)
        w = lib.Variable([[1.0, 2.0]])
        c = lib.constant([1.0, 2.0])
        big = lib.constant(np.arange(200, dtype=np.float32))

        @lib.function
        def step(x):
            v.assign_add(x)
            y = v + 1.0
            v.assign_sub(0.5)
            return y + c[0] + lib.reduce_sum(w.read_value()) + big[3]

        @lib.function
        def reset():
            v.assign(0.0)

        outs = [float(step(lib.constant(1.0))), float(step(lib.constant(2.0)))]
        reset()
        outs += [float(v.numpy()), float(step(lib.constant(1.0))), float(v.numpy())]
        return outs
    ours, theirs = _both(tf, build)
    assert ours == theirs


def test_methods_have_one_function_per_instance(tf):
    def build(lib):
        class Counter(lib.Module):
            def __init__(self, start):
                super().__init__()
                self.count = lib.Variable(start)

            @lib.function
            def add(self, n):
                self.count.assign_add(n)
                return self.count.read_value()
        a, b = Counter(0), Counter(100)
        results = [int(a.add(lib.constant(1))), int(b.add(lib.constant(1))),
                   int(a.add(lib.constant(2)))]
        return results, a.add.experimental_get_tracing_count(), b.add is b.add
    ours, theirs = _both(tf, build)
    assert ours == theirs


def test_nested_functions_compute_as_tensorflow(tf):
    def build(lib):
        v = lib.Variable(0.0)

        @lib.function
        def add(a, b):
            return a + b

        @lib.function
        def inc(x):
            v.assign_add(x)
            return v.read_value()

        @lib.function
        def outer(x):
            return inc(x) + inc(x * 2.0) + add(x, 1.0)
        return [float(outer(lib.constant(1.0))), float(outer(lib.constant(1.0))), float(v.numpy())]
    ours, theirs = _both(tf, build)
    assert ours == theirs


def test_closure_tensors_are_captured_inputs():
    big = sm.constant(np.arange(200, dtype=np.float32))
    small = sm.constant([1.0, 2.0])

    @sm.function
    def f(x):
        return x + big[1] + small[1]
    cf = f.get_concrete_function(sm.constant(1.0))
    assert cf.captured_inputs == [big]
    assert [op.type for op in cf.graph.get_operations()][:2] == ["Placeholder", "Placeholder"]
    assert float(f(sm.constant(1.0))) == 4.0


def test_get_concrete_function_takes_specs_as_tensorflow_does(tf):
    """A spec that fits the input signature selects its trace; others are TensorFlow's error."""
    def accepted(lib, shape, dtype, name):
        function = lib.function(lambda x: x + 1.0, input_signature=[lib.TensorSpec([None], lib.float32)])
        try:
            concrete = function.get_concrete_function(lib.TensorSpec(shape, getattr(lib, dtype), name=name))
        except TypeError as err:
            assert "Can not cast TensorSpec" in str(err)
            return False
        assert concrete.structured_input_signature[0][0].shape.as_list() == [None]
        return True

    cases = [([None], "float32", None), ([3], "float32", None), ([None], "float32", "x"),
             (None, "float32", None), ([None], "int32", None), ([None, 2], "float32", None)]
    assert [accepted(sm, *c) for c in cases] == [accepted(tf, *c) for c in cases] == [
        True, True, False, False, False, False]
