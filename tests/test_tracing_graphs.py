"""Traced graphs against TensorFlow's: the reference printouts exactly, and live comparisons of
more functions (variables, name scopes, nested Functions) node by node."""
from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import REFERENCE
from savedmodel.protos import graph_pb2

import savedmodel as sm
from savedmodel.polymorphic_function import Function

# The guide's functions, as make_reference.py traces them (written against a module `tf`, so
# the same code builds TensorFlow's graphs and ours).

def reference_functions(tf):
    def a_regular_function(x, y, b):
        x = tf.matmul(x, y)
        return x + b

    def my_relu(x):
        return tf.maximum(0., x)

    def get_MSE(y_true, y_pred):
        sq_diff = tf.pow(y_true - y_pred, 2)
        return tf.reduce_mean(sq_diff)

    def power(x, y):
        result = tf.eye(10, dtype=tf.dtypes.int32)
        for _ in range(y):
            result = tf.matmul(x, result)
        return result

    def next_collatz(x):
        return tf.where(x % 2 == 0, x // 2, 3 * x + 1)

    def unused_return_graph(x):
        tf.gather(x, [1])
        return x

    def inner_function(x, y, b):
        x = tf.matmul(x, y)
        return x + b

    def outer_function(x):
        y = tf.constant([[2.0], [3.0]])
        b = tf.constant(4.0)
        return inner_function(x, y, b)

    def get_MSE_print(y_true, y_pred):
        tf.print("Calculating MSE!")
        sq_diff = tf.pow(y_true - y_pred, 2)
        return tf.reduce_mean(sq_diff)

    return {
        "a_regular_function": (a_regular_function, [tf.constant([[1.0, 2.0]]),
                                                    tf.constant([[2.0], [3.0]]), tf.constant(4.0)]),
        "my_relu_scalar": (my_relu, [tf.constant(5.5)]),
        "my_relu_list": (my_relu, [[1, -1]]),
        "my_relu_vector": (my_relu, [tf.constant([3., -3.])]),
        "get_MSE": (get_MSE, [tf.constant([4, 5, 8, 3, 6]), tf.constant([0, 1, 6, 8, 4])]),
        "get_MSE_print": (get_MSE_print, [tf.constant([4, 5, 8, 3, 6]),
                                          tf.constant([0, 1, 6, 8, 4])]),
        "power_10": (power, [tf.ones([10, 10], tf.int32), 10]),
        "next_collatz": (next_collatz, [tf.TensorSpec([None], tf.int32)]),
        "unused_return_graph": (unused_return_graph, [tf.constant([0.0])]),
        "outer_function": (outer_function, [tf.constant([[1.0, 2.0]])]),
    }


STRAIGHT_LINE = ["a_regular_function", "my_relu_scalar", "my_relu_list", "my_relu_vector",
                 "get_MSE", "get_MSE_print", "power_10", "next_collatz", "outer_function",
                 "unused_return_graph"]


@pytest.mark.parametrize("name", STRAIGHT_LINE)
def test_graph_def_text_equals_tensorflows(name):
    fn, args = reference_functions(sm)[name]
    concrete = sm.function(fn).get_concrete_function(*args)
    expected = (REFERENCE / "graphs" / f"{name}.pbtxt").read_text()
    assert str(concrete.graph.as_graph_def()) == expected


def test_get_operations_lists_nodes_in_creation_order():
    fn, args = reference_functions(sm)["get_MSE"]
    graph = sm.function(fn).get_concrete_function(*args).graph
    assert [(op.name, op.type) for op in graph.get_operations()] == [
        ("y_true", "Placeholder"), ("y_pred", "Placeholder"), ("sub", "Sub"), ("Pow/y", "Const"),
        ("Pow", "Pow"), ("Const", "Const"), ("Mean", "Mean"), ("Identity", "Identity")]
    assert graph.get_operation_by_name("Pow").get_attr("T") is sm.int32
    assert graph.get_tensor_by_name("Mean:0").shape == ()


# ------------------------------------------------------------------------------- live graphs

def live_functions(tf):
    """Functions whose graphs are compared with TensorFlow's node by node: (function, args)."""
    v = tf.Variable(1.0)
    w = tf.Variable([[1.0, 2.0]])
    c = tf.constant([1.0, 2.0])
    big = tf.constant(np.arange(200, dtype=np.float32))

    def variables(x):
        v.assign_add(x)
        y = v + 1.0
        z = w.read_value()
        return y + c[0] + tf.reduce_sum(z)

    def reads_and_writes(x):
        a = v.read_value()
        b = v + 1.0
        v.assign(x)
        d = v.read_value()
        tf.print("hi", x)
        tf.print("ho")
        v.assign_sub(2.0)
        return a + b + d

    def scopes(x):
        a = tf.constant(1.0)
        b = tf.constant(2.0, name="b")
        with tf.name_scope("scope"):
            d = x * a
            e = tf.add(d, b)
            with tf.name_scope("inner"):
                q = tf.add(e, 1.0)
        with tf.name_scope("scope"):
            r = tf.add(q, 2.0)
        s = tf.add(r, 3.0, name="add")
        t = tf.add(s, 3.0, name="add_1")
        u = tf.add(t, 3.0)
        return (u - x, x / 2.0, -x, abs(x), x ** 2, x // 1.0, x % 3.0, x > 1.0, x <= 2.0,
                x != 1.0, 1.0 - x, tf.matmul(tf.reshape(x, [1, 1]), [[2.0]]))

    def arrays(x, m, i):
        return (tf.zeros([2, 3]), tf.ones([2], tf.int32), tf.zeros([2000]), tf.zeros_like(x),
                tf.ones_like(i), tf.range(5), tf.range(1, 10, 2), tf.range(0.0, 1.0, 0.25),
                tf.cast(x, tf.int32), tf.reshape(m, [-1]), tf.concat([m, m], axis=0),
                tf.where(x > 0, x, 0.0), tf.gather(m, [0, 1], axis=1), tf.nn.relu(x),
                tf.nn.softmax(m), tf.reduce_sum(m, axis=1),
                tf.reduce_sum(m, axis=[0, 1], keepdims=True), tf.reduce_mean(x), tf.eye(3, 4),
                tf.constant(5), tf.constant([1, 2], name="named"),
                tf.constant(1.0, shape=[2, 2]), tf.minimum(x, 2.0), tf.subtract(x, 1.0),
                tf.multiply(x, 2), tf.pow(x, 2.0), tf.greater(x, 1.0), tf.less(x, 1.0),
                tf.equal(x, 1.0), tf.reduce_max(m), m[0, 1:], m[:, None, ...], i / 2, m @ m,
                tf.where(m > 0), tf.stack([x, x]), tf.transpose(m, [1, 0]),
                tf.expand_dims(i, 0), tf.squeeze(tf.reshape(m, [1, 4])))

    def booleans(b):
        return b & b, b | b, ~b, b ^ b, tf.logical_and(b, True), tf.logical_not(b)

    def captures(x):
        return x + big[0] + c[1]

    def printing(x, s):
        tf.print(x, "and", s)
        return x

    def inc(x):
        v.assign_add(x)
        return v.read_value()

    def add(a, b):
        return a + b

    inc_fn, add_fn = tf.function(inc), tf.function(add)

    def calls(x):
        y = inc_fn(x)
        z = inc_fn(x * 2.0)
        return y + z + add_fn(x, 1.0)

    def dense_layer(x, w, b):
        return add_fn(tf.matmul(x, w), b)

    def closure_over_outer(x):
        y = x * 2.0

        @tf.function
        def inner(z):
            return z + y + big[0]
        return inner(x)

    return {
        "variables": (variables, [tf.constant(1.0)]),
        "reads_and_writes": (reads_and_writes, [tf.constant(1.0)]),
        "scopes": (scopes, [tf.constant(1.0)]),
        "arrays": (arrays, [tf.constant(1.0), tf.constant([[1.0, 2.0], [3.0, 4.0]]),
                            tf.constant([1, 2])]),
        "booleans": (booleans, [tf.constant(True)]),
        "captures": (captures, [tf.constant(1.0)]),
        "printing": (printing, [tf.constant([1.0, 2.0]), tf.constant("s")]),
        "calls": (calls, [tf.constant(1.0)]),
        "dense_layer": (dense_layer, [tf.ones([3, 2]), tf.ones([2, 2]), tf.ones([2])]),
        "closure_over_outer": (closure_over_outer, [tf.constant(1.0)]),
        "input_signature": (next_collatz_spec(tf), []),
    }


def next_collatz_spec(tf):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.int32, name="renamed"),
                                  tf.TensorSpec(None, tf.float32)])
    def g(x, y):
        return tf.reduce_sum(y), tf.zeros_like(x), tf.reshape(x, [2, -1]), tf.where(x > 0, x, 1)
    return g


_UID = re.compile(r"(?<![\w/])\d+(?![\w])")
_INFERENCE = re.compile(r"(__inference_\w+?)_\d+")


def canonical(graph_def_bytes: bytes) -> list[str]:
    """One line per node (and per library function node): name, op, inputs, attrs sorted,
    with the process-dependent numbers (captured tensors, function ids) blanked."""
    graph_def = graph_pb2.GraphDef.FromString(graph_def_bytes)
    lines = [_node_line(node) for node in graph_def.node]
    for function in sorted(graph_def.library.function, key=lambda f: _normal(f.signature.name)):
        copy = type(function)()
        copy.CopyFrom(function)
        del copy.node_def[:]
        lines.append(_normal(str(copy.signature).replace("\n", " ")))
        lines += ["  " + _node_line(node) for node in function.node_def]
        lines.append("  ret " + _normal(str(sorted(function.ret.items()))))
        lines.append("  arg_attr " + _normal(str(sorted(
            (k, sorted((a, str(b).replace("\n", " ")) for a, b in v.attr.items()))
            for k, v in function.arg_attr.items()))))
    lines.append(str(graph_def.versions).replace("\n", " "))
    return lines


def _node_line(node) -> str:
    attrs = ", ".join(f"{k}={str(node.attr[k]).strip()}".replace("\n", " ")
                      for k in sorted(node.attr))
    return _normal(f"{node.name} = {node.op}({', '.join(node.input)}) [{attrs}]")


def _normal(text: str) -> str:
    return _UID.sub("#", _INFERENCE.sub(r"\1", text))


@pytest.mark.parametrize("name", list(live_functions(sm)))
def test_graph_matches_tensorflow_node_by_node(tf, name):
    ours_fn, ours_args = live_functions(sm)[name]
    theirs_fn, theirs_args = live_functions(tf)[name]
    ours_fn = ours_fn if isinstance(ours_fn, Function) else sm.function(ours_fn)
    theirs_fn = theirs_fn if hasattr(theirs_fn, "get_concrete_function") else tf.function(theirs_fn)
    ours = ours_fn.get_concrete_function(*ours_args).graph.as_graph_def()
    theirs = theirs_fn.get_concrete_function(*theirs_args).graph.as_graph_def()
    assert canonical(ours.SerializeToString()) == canonical(theirs.SerializeToString())
