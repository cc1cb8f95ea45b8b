"""The code cells of the tf.function guides (seeds 000, 001, 002, 004) that are in scope, run
with `import savedmodel as tf`, print what the guides show.

Our printouts name the module `savedmodel` where TensorFlow's say `tf`; the comparison spells
ours TensorFlow's way. Cells that print random values use the guide's printed values instead,
cells that time code run without comparing times, and cells that need AutoGraph, GradientTape
or Keras are left to their own issues.
"""
from __future__ import annotations

import contextlib
import io
import textwrap
import traceback

import pytest

import savedmodel


def run_cell(code: str, namespace: dict) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(textwrap.dedent(code), namespace)
    return out.getvalue().replace("savedmodel.", "tf.")


@pytest.fixture
def namespace():
    def assert_raises(error_class):
        @contextlib.contextmanager
        def manager():
            try:
                yield
            except error_class:
                print(f"Caught expected exception \n  {error_class}:")
                traceback.format_exc(limit=2)
            else:
                raise Exception(f"Expected {error_class} to be raised but no error was raised!")
        return manager()
    return {"tf": savedmodel, "assert_raises": assert_raises}


CELLS = [
    # 000/002: taking advantage of graphs
    ("""
     def a_regular_function(x, y, b):
       x = tf.matmul(x, y)
       x = x + b
       return x
     a_function_that_uses_a_graph = tf.function(a_regular_function)
     x1 = tf.constant([[1.0, 2.0]])
     y1 = tf.constant([[2.0], [3.0]])
     b1 = tf.constant(4.0)
     orig_value = a_regular_function(x1, y1, b1).numpy()
     tf_function_value = a_function_that_uses_a_graph(x1, y1, b1).numpy()
     assert(orig_value == tf_function_value)
     print("orig_value=", orig_value)
     print("tf_function_value=", tf_function_value)
     """, "orig_value= [[12.]]\ntf_function_value= [[12.]]\n"),
    ("""
     def inner_function(x, y, b):
       x = tf.matmul(x, y)
       x = x + b
       return x
     @tf.function
     def outer_function(x):
       y = tf.constant([[2.0], [3.0]])
       b = tf.constant(4.0)
       return inner_function(x, y, b)
     print(repr(outer_function(tf.constant([[1.0, 2.0]])).numpy()))
     """, "array([[12.]], dtype=float32)\n"),
    # polymorphism
    ("""
     @tf.function
     def my_relu(x):
       print("called my_relu")
       return tf.maximum(0., x)
     print(my_relu(tf.constant(5.5)))
     print(my_relu([1, -1]))
     print(my_relu([3, -7]))
     print(my_relu(tf.constant([3., -3.])))
     print(my_relu(tf.constant(-2.5)))
     print(my_relu(tf.constant([-1., 1.])))
     print(my_relu.pretty_printed_concrete_signatures())
     """, """called my_relu
tf.Tensor(5.5, shape=(), dtype=float32)
called my_relu
tf.Tensor([1. 0.], shape=(2,), dtype=float32)
called my_relu
tf.Tensor([3. 0.], shape=(2,), dtype=float32)
called my_relu
tf.Tensor([3. 0.], shape=(2,), dtype=float32)
tf.Tensor(0.0, shape=(), dtype=float32)
tf.Tensor([0. 1.], shape=(2,), dtype=float32)
Input Parameters:
  x (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(), dtype=tf.float32, name=None)
Output Type:
  TensorSpec(shape=(), dtype=tf.float32, name=None)
Captures:
  None

Input Parameters:
  x (POSITIONAL_OR_KEYWORD): List[Literal[1], Literal[-1]]
Output Type:
  TensorSpec(shape=(2,), dtype=tf.float32, name=None)
Captures:
  None

Input Parameters:
  x (POSITIONAL_OR_KEYWORD): List[Literal[3], Literal[-7]]
Output Type:
  TensorSpec(shape=(2,), dtype=tf.float32, name=None)
Captures:
  None

Input Parameters:
  x (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(2,), dtype=tf.float32, name=None)
Output Type:
  TensorSpec(shape=(2,), dtype=tf.float32, name=None)
Captures:
  None
"""),
    # graph execution vs eager execution (the guide's random values as constants)
    ("""
     @tf.function
     def get_MSE(y_true, y_pred):
       sq_diff = tf.pow(y_true - y_pred, 2)
       return tf.reduce_mean(sq_diff)
     y_true = tf.constant([4, 5, 8, 3, 6])
     y_pred = tf.constant([0, 1, 6, 8, 4])
     print(y_true)
     print(y_pred)
     print(repr(get_MSE(y_true, y_pred)))
     tf.config.run_functions_eagerly(True)
     print(repr(get_MSE(y_true, y_pred)))
     tf.config.run_functions_eagerly(False)
     """, """tf.Tensor([4 5 8 3 6], shape=(5,), dtype=int32)
tf.Tensor([0 1 6 8 4], shape=(5,), dtype=int32)
<tf.Tensor: shape=(), dtype=int32, numpy=13>
<tf.Tensor: shape=(), dtype=int32, numpy=13>
"""),
    ("""
     @tf.function
     def get_MSE(y_true, y_pred):
       print("Calculating MSE!")
       sq_diff = tf.pow(y_true - y_pred, 2)
       return tf.reduce_mean(sq_diff)
     y_true = tf.constant([4, 5, 8, 3, 6])
     y_pred = tf.constant([0, 1, 6, 8, 4])
     error = get_MSE(y_true, y_pred)
     error = get_MSE(y_true, y_pred)
     error = get_MSE(y_true, y_pred)
     tf.config.run_functions_eagerly(True)
     error = get_MSE(y_true, y_pred)
     error = get_MSE(y_true, y_pred)
     error = get_MSE(y_true, y_pred)
     tf.config.run_functions_eagerly(False)
     """, "Calculating MSE!\n" * 4),
    # non-strict execution
    ("""
     def unused_return_eager(x):
       tf.gather(x, [1]) # unused
       return x
     try:
       print(unused_return_eager(tf.constant([0.0])))
     except tf.errors.InvalidArgumentError as e:
       print(f'{type(e).__name__}: {e}')
     @tf.function
     def unused_return_graph(x):
       tf.gather(x, [1]) # unused
       return x
     print(unused_return_graph(tf.constant([0.0])))
     """, "InvalidArgumentError: indices[0] = 1 is not in [0, 1) [Op:GatherV2]\n"
          "tf.Tensor([0.], shape=(1,), dtype=float32)\n"),
    # seeing the speed-up (times are not compared)
    ("""
     import timeit
     x = tf.random.uniform(shape=[10, 10], minval=-1, maxval=2, dtype=tf.dtypes.int32)
     def power(x, y):
       result = tf.eye(10, dtype=tf.dtypes.int32)
       for _ in range(y):
         result = tf.matmul(x, result)
       return result
     eager = timeit.timeit(lambda: power(x, 100), number=3)
     power_as_graph = tf.function(power)
     graph = timeit.timeit(lambda: power_as_graph(x, 100), number=3)
     print((power(x, 100).numpy() == power_as_graph(x, 100).numpy()).all())
     """, "True\n"),
    # when is a Function tracing?
    ("""
     @tf.function
     def a_function_with_python_side_effect(x):
       print("Tracing!") # An eager-only side effect.
       return x * x + tf.constant(2)
     print(a_function_with_python_side_effect(tf.constant(2)))
     print(a_function_with_python_side_effect(tf.constant(3)))
     print(a_function_with_python_side_effect(2))
     print(a_function_with_python_side_effect(3))
     """, """Tracing!
tf.Tensor(6, shape=(), dtype=int32)
tf.Tensor(11, shape=(), dtype=int32)
Tracing!
tf.Tensor(6, shape=(), dtype=int32)
Tracing!
tf.Tensor(11, shape=(), dtype=int32)
"""),
    # 004: basics, functions calling functions
    ("""
     @tf.function
     def add(a, b):
         return a + b
     print(repr(add(tf.ones([2, 2]), tf.ones([2, 2]))))
     @tf.function
     def dense_layer(x, w, b):
         return add(tf.matmul(x, w), b)
     print(repr(dense_layer(tf.ones([3, 2]), tf.ones([2, 2]), tf.ones([2]))))
     """, """<tf.Tensor: shape=(2, 2), dtype=float32, numpy=
array([[2., 2.],
       [2., 2.]], dtype=float32)>
<tf.Tensor: shape=(3, 2), dtype=float32, numpy=
array([[3., 3.],
       [3., 3.],
       [3., 3.]], dtype=float32)>
"""),
    # 004: tracing and polymorphism
    ("""
     @tf.function
     def double(a):
         print('Tracing with', a)
         return a + a
     print(double(tf.constant(1)), end='\\n\\n')
     print(double(tf.constant(1.1)), end='\\n\\n')
     print(double(tf.constant('a')), end='\\n\\n')
     double_strings = double.get_concrete_function(tf.TensorSpec(shape=None, dtype=tf.string))
     print(double_strings(tf.constant('a')))
     print(double_strings(a=tf.constant('b')))
     with assert_raises(tf.errors.InvalidArgumentError):
         double_strings(tf.constant(1))
     """, """Tracing with Tensor("a:0", shape=(), dtype=int32)
tf.Tensor(2, shape=(), dtype=int32)

Tracing with Tensor("a:0", shape=(), dtype=float32)
tf.Tensor(2.2, shape=(), dtype=float32)

Tracing with Tensor("a:0", shape=(), dtype=string)
tf.Tensor(b'aa', shape=(), dtype=string)

Tracing with Tensor("a:0", dtype=string)
tf.Tensor(b'aa', shape=(), dtype=string)
tf.Tensor(b'bb', shape=(), dtype=string)
Caught expected exception 
  <class 'tf.errors.InvalidArgumentError'>:
"""),
    ("""
     @tf.function(input_signature=(tf.TensorSpec(shape=[None], dtype=tf.int32),))
     def next_collatz(x):
         print('Tracing with', x)
         return tf.where(x % 2 == 0, x // 2, 3 * x + 1)
     print(next_collatz(tf.constant([1, 2])))
     with assert_raises(ValueError):
         next_collatz(tf.constant([[1, 2], [3, 4]]))
     """, """Tracing with Tensor("x:0", shape=(None,), dtype=int32)
tf.Tensor([4 1], shape=(2,), dtype=int32)
Caught expected exception 
  <class 'ValueError'>:
"""),
]


@pytest.mark.parametrize("code, expected", CELLS, ids=[f"cell{i}" for i in range(len(CELLS))])
def test_guide_cell_prints_what_the_guide_shows(namespace, code, expected):
    assert run_cell(code, namespace) == expected
