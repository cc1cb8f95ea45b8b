"""`sm.cond`, `sm.switch_case` and `sm.while_loop`: eagerly, in a traced function, and against
TensorFlow (results, and the graphs node by node, library functions included)."""
from __future__ import annotations

import re

import numpy as np
import pytest
from google.protobuf import text_format
from savedmodel.protos import graph_pb2
from test_tracing_graphs import canonical

import savedmodel as sm
from savedmodel import nest

_FUNCTION_UID = re.compile(r"^(\w+?)_\d+$")


def same_graph_lines(graph_def) -> list[str]:
    """`canonical` lines of a GraphDef whose library functions are renamed without their unique
    numbers (`cond_true_29` -> `cond_true_N`), as are the nodes and arguments named after a
    captured tensor's number (`s/25`, `cond_51` -> `s/#`, `cond_#`), so that graphs from two
    processes compare."""
    text = text_format.MessageToString(graph_def)
    names = sorted((f.signature.name for f in graph_def.library.function), key=len, reverse=True)
    for name in names:
        match = _FUNCTION_UID.match(name)
        if match:
            text = text.replace(name, match.group(1) + "_N")
    uids = set(re.findall(r'_user_specified_name"\s+value \{\s+s: "(\d+)"', text))
    uids |= set(re.findall(r'name: "(?:[^"]*/)?(\d+)"', text))
    for uid in uids:
        text = re.sub(rf"(?<=[_/\"]){uid}\b", "#", text)
    renamed = text_format.Parse(text, graph_pb2.GraphDef())
    nodes = [*renamed.node, *(n for f in renamed.library.function for n in f.node_def)]
    full_types = sorted(f"{n.name} type {n.experimental_type}".replace("\n", " ")
                        for n in nodes if n.HasField("experimental_type"))
    return _sorted_functions(canonical(renamed.SerializeToString())) + full_types


def _sorted_functions(lines: list[str]) -> list[str]:
    """The library functions' blocks of `canonical` lines in the order of their text (two
    functions may have the same name once their numbers are gone)."""
    nodes, blocks = [], []
    for line in lines[:-1]:
        if line.startswith("name: "):
            blocks.append([line])
        elif blocks:
            blocks[-1].append(line)
        else:
            nodes.append(line)
    return nodes + [line for block in sorted(blocks) for line in block] + lines[-1:]


def graph_lines(module, fn, args) -> list[str]:
    function = fn if hasattr(fn, "get_concrete_function") else module.function(fn)
    graph_def = function.get_concrete_function(*args).graph.as_graph_def()
    if module is not sm:
        graph_def = graph_pb2.GraphDef.FromString(graph_def.SerializeToString())
    return same_graph_lines(graph_def)


def values(result) -> list:
    return [np.asarray(leaf) for leaf in nest.flatten(result) if leaf is not None]


# The same code builds TensorFlow's functions and ours: (function, args, calls to compare).

def cond_functions(tf):
    y = tf.constant(3.0)
    big = tf.constant(np.arange(200, dtype=np.float32))
    v = tf.Variable(1.0)

    def captures(x, p):
        z = x * 2.0
        return tf.cond(p, lambda: z + y, lambda: x - 1.0)

    def eager_captures(x, p):
        a = x + y

        def then():
            return x * y + big[0]
        return tf.cond(p, then, lambda: a)

    def structures(x, p):
        return tf.cond(p, lambda: {"a": x, "b": (x + 1.0, None)},
                       lambda: {"a": x * 2.0, "b": (x, None)})

    def stateful(x, p):
        def then():
            tf.print("hi")
            v.assign_add(x)
            return x + 1.0
        return tf.cond(p, then, lambda: v.read_value())

    def vector_predicate(x, p):
        return tf.cond(tf.reshape(p, [1]), lambda: x, lambda: -x)

    def nested(x, p):
        return tf.cond(p, lambda: tf.cond(x > 0.0, lambda: x, lambda: -x), lambda: x * 3.0)

    def named(x, p):
        with tf.name_scope("outer"):
            return tf.cond(p, lambda: x + 1.0, lambda: x, name="choose")

    x, p = tf.constant(1.5), tf.constant(True)
    return {
        "captures": (captures, [x, p]),
        "eager_captures": (eager_captures, [x, p]),
        "structures": (structures, [x, p]),
        "stateful": (stateful, [x, p]),
        "vector_predicate": (vector_predicate, [x, p]),
        "nested": (nested, [x, p]),
        "named": (named, [x, p]),
    }


@pytest.mark.parametrize("name", list(cond_functions(sm)))
def test_cond_graph_matches_tensorflow(tf, name):
    ours, args = cond_functions(sm)[name]
    theirs, their_args = cond_functions(tf)[name]
    assert graph_lines(sm, ours, args) == graph_lines(tf, theirs, their_args)


@pytest.mark.parametrize("name", list(cond_functions(sm)))
@pytest.mark.parametrize("x, p", [(1.5, True), (-2.0, False)])
def test_cond_eager_graph_and_tensorflow_agree(tf, name, x, p):
    ours, _ = cond_functions(sm)[name]
    theirs, _ = cond_functions(tf)[name]
    eager = values(ours(sm.constant(x), sm.constant(p)))
    graph = values(sm.function(ours)(sm.constant(x), sm.constant(p)))
    expected = values(tf.function(theirs)(tf.constant(x), tf.constant(p)))
    for a, b, c in zip(eager, graph, expected):
        np.testing.assert_allclose(a, c)
        np.testing.assert_allclose(b, c)


def while_functions(tf):
    y = tf.constant(3.0)
    v = tf.Variable(0.0)

    def counting(x, n):
        z = x * 2.0
        return tf.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a * z + y), [0, x])

    def bounded(x, n):
        return tf.while_loop(lambda a: a < 1000.0, lambda a: [a * 2.0], [x],
                             maximum_iterations=n)

    def nested_structure(x, n):
        def body(i, pair):
            a, b = pair
            return i + 1, (a + b, b * 2.0)
        return tf.while_loop(lambda i, pair: i < n, body, [0, (x, x)], parallel_iterations=4)

    def growing(x, n):
        def body(i, acc):
            return i + 1, tf.concat([acc, tf.reshape(x * tf.cast(i, tf.float32), [1])], 0)
        return tf.while_loop(lambda i, acc: i < n, body, [0, tf.reshape(x, [1])],
                             shape_invariants=[tf.TensorShape([]), tf.TensorShape([None])])

    def stateful(x, n):
        def body(i):
            v.assign_add(x)
            tf.print(i)
            return [i + 1]
        out = tf.while_loop(lambda i: i < n, body, [0])
        return out[0], v.read_value()

    def cond_inside(x, n):
        def body(i, a):
            return i + 1, tf.cond(a > 10.0, lambda: a - 1.0, lambda: a * 3.0)
        return tf.while_loop(lambda i, a: i < n, body, [0, x])

    def loop_inside_cond(x, n):
        return tf.cond(n > 2, lambda: tf.while_loop(lambda a: a < 100.0, lambda a: [a + y], [x]),
                       lambda: [x])

    x, n = tf.constant(1.5), tf.constant(4)
    return {
        "counting": (counting, [x, n]),
        "bounded": (bounded, [x, n]),
        "nested_structure": (nested_structure, [x, n]),
        "growing": (growing, [x, n]),
        "stateful": (stateful, [x, n]),
        "cond_inside": (cond_inside, [x, n]),
        "loop_inside_cond": (loop_inside_cond, [x, n]),
    }


@pytest.mark.parametrize("name", list(while_functions(sm)))
def test_while_graph_matches_tensorflow(tf, name):
    ours, args = while_functions(sm)[name]
    theirs, their_args = while_functions(tf)[name]
    assert graph_lines(sm, ours, args) == graph_lines(tf, theirs, their_args)


@pytest.mark.parametrize("name", list(while_functions(sm)))
@pytest.mark.parametrize("x, n", [(1.5, 4), (-2.0, 0), (7.0, 12)])
def test_while_eager_graph_and_tensorflow_agree(tf, name, x, n):
    ours, _ = while_functions(sm)[name]
    theirs, _ = while_functions(tf)[name]
    eager = values(ours(sm.constant(x), sm.constant(n)))
    ours, _ = while_functions(sm)[name]
    graph = values(sm.function(ours)(sm.constant(x), sm.constant(n)))
    expected = values(tf.function(theirs)(tf.constant(x), tf.constant(n)))
    assert len(eager) == len(graph) == len(expected)
    for a, b, c in zip(eager, graph, expected):
        np.testing.assert_allclose(a, c)
        np.testing.assert_allclose(b, c)


def error_functions(tf):
    def cond_structure(x):
        return tf.cond(x > 0.0, lambda: (x, x), lambda: x)

    def cond_dtype(x):
        return tf.cond(x > 0.0, lambda: x, lambda: tf.cast(x, tf.int32))

    def cond_not_callable(x):
        return tf.cond(x > 0.0, x, lambda: x)

    def cond_python_predicate(x):
        return tf.cond(True, lambda: x, lambda: x)

    def while_dtype(x):
        return tf.while_loop(lambda a: a < 10, lambda a: [tf.cast(a, tf.float32)], [1])

    def while_shape(x):
        return tf.while_loop(lambda a: tf.size(a) < 10, lambda a: [tf.concat([a, a], 0)],
                             [tf.reshape(x, [1])])

    def while_structure(x):
        return tf.while_loop(lambda a, b: a < 10.0, lambda a, b: a + 1.0, [x, x])

    return {"cond_structure": (cond_structure, TypeError, "same number, type, and overall"),
            "cond_dtype": (cond_dtype, TypeError, "have different types"),
            "cond_not_callable": (cond_not_callable, TypeError, "'true_fn' must be callable"),
            "cond_python_predicate": (cond_python_predicate, TypeError, "must not be a Python"),
            "while_dtype": (while_dtype, TypeError, "type should remain constant"),
            "while_shape": (while_shape, ValueError, "shape_invariants"),
            "while_structure": (while_structure, ValueError, "structure")}


@pytest.mark.parametrize("name", list(error_functions(sm)))
def test_control_flow_errors_are_tensorflows(tf, name):
    ours, error, text = error_functions(sm)[name]
    theirs, _, _ = error_functions(tf)[name]
    with pytest.raises(error, match=text):
        sm.function(ours).get_concrete_function(sm.constant(1.0))
    with pytest.raises(Exception):  # noqa: B017 (TensorFlow 2.21 asserts on mismatched structures)
        tf.function(theirs).get_concrete_function(tf.constant(1.0))


def test_switch_case_eagerly_and_traced():
    def pick(i, x):
        return sm.switch_case(i, [lambda: x + 1.0, lambda: x * 2.0], default=lambda: -x)

    traced = sm.function(pick)
    for i, expected in [(0, 4.0), (1, 6.0), (2, -3.0), (7, -3.0), (-1, -3.0)]:
        assert pick(sm.constant(i), sm.constant(3.0)).numpy() == expected
        assert traced(sm.constant(i), sm.constant(3.0)).numpy() == expected


def test_switch_case_graph_matches_tensorflow(tf):
    def pick(tf):
        def fn(i, x):
            return tf.switch_case(i, {0: lambda: x + 1.0, 1: lambda: x * 2.0})
        return fn

    args = [tf.constant(1), tf.constant(3.0)]
    assert (graph_lines(sm, pick(sm), [sm.constant(1), sm.constant(3.0)])
            == graph_lines(tf, pick(tf), args))


def capture_functions(tf):
    """Eager tensors used by ops are captured under the name of the op's argument, in the
    current scope, by the function or branch that uses them."""
    y = tf.constant(3.0)
    big = tf.constant(np.ones(200, np.float32))

    def op_arguments(x):
        return tf.add(x, y) + tf.add(big, x) + tf.multiply(y, x)

    def scoped(x):
        with tf.name_scope("s"):
            return x + big[0] + y[None][0]

    def in_branches(x):
        a = x + y
        return tf.cond(x > 0.0, lambda: x * y + big[0], lambda: a)

    return {"op_arguments": op_arguments, "scoped": scoped, "in_branches": in_branches}


@pytest.mark.parametrize("name", list(capture_functions(sm)))
def test_captures_are_named_as_tensorflow_names_them(tf, name):
    ours = graph_lines(sm, capture_functions(sm)[name], [sm.constant(1.0)])
    assert ours == graph_lines(tf, capture_functions(tf)[name], [tf.constant(1.0)])
