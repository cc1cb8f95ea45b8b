"""TensorFlow 1 graphs with TensorFlow 1 control flow (Switch/Merge/Enter/Exit/NextIteration,
TensorArrayV3), made in graph mode with control flow v1, with TensorFlow's outputs recorded.

Writes
- tests/data/frozen/tf1_rnn.pb (+ .io.npz, keys `in/<placeholder>` and `out/<node>` as
  make_frozen.py writes them): nested while loops, a cond inside a loop, a dynamic_rnn with an
  LSTMCell and one with a GRUCell, variables frozen with convert_variables_to_constants;
- tests/data/models/tf1_dynamic_rnn/ (+ .io.npz as make_models.py writes them): a
  SavedModelBuilder export with ref variables, a dynamic_rnn with sequence lengths and a loop
  that assigns to a variable (RefEnter);
- tests/data/tf1/<case>.pbtxt or .pb (+ .io.npz, keys `<run>/in/<placeholder>`,
  `<run>/out/<node>`, and `<run>/error` for a run TensorFlow rejects): small graphs, one
  control-flow feature each, each run as a Session runs the file it wrote.

Needs TensorFlow 2.21. Usage: python tests/data/models/make_models_tf1.py [graphs|frozen|saved_model ...]  (default: all)
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.python.keras.layers.legacy_rnn import rnn_cell_impl  # noqa: E402
from tensorflow.python.ops import control_flow_ops, rnn  # noqa: E402

tf.compat.v1.disable_v2_behavior()  # graph mode, control flow v1, ref variables
v1 = tf.compat.v1

HERE = Path(__file__).resolve().parent
DATA = HERE.parent
FROZEN = DATA / "frozen"
GRAPHS = DATA / "tf1"


def _sequence(shape, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _run_graph_file(graph_def, runs: dict, outputs: list[str]) -> dict:
    """Each run's feeds and the outputs of the graph in `graph_def`, imported into a fresh graph
    and run by a Session (what the file holds is what is recorded); a run TensorFlow rejects
    records its error message."""
    arrays = {}
    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(graph_def, name="")
    with v1.Session(graph=graph) as session:
        for run, feeds in runs.items():
            arrays.update({f"{run}/in/{k}": v for k, v in feeds.items()})
            try:
                values = session.run([f"{o}:0" for o in outputs], {f"{k}:0": v for k, v in feeds.items()})
            except tf.errors.OpError as err:
                arrays[f"{run}/error"] = np.array(err.message.encode())
                continue
            arrays.update({f"{run}/out/{o}": np.asarray(v) for o, v in zip(outputs, values)})
    return arrays


def _sinks(graph_def) -> list[str]:
    read = {i.lstrip("^").split(":")[0] for n in graph_def.node for i in n.input}
    return [n.name for n in graph_def.node if n.name not in read and n.op not in ("NoOp", "Const", "Placeholder")]


# The frozen graph -------------------------------------------------------------------------------


def _frozen_rnn_graph():
    x = v1.placeholder(tf.float32, [2, 5, 3], name="x")
    n = v1.placeholder(tf.int32, [], name="n")
    lstm, _ = rnn.dynamic_rnn(rnn_cell_impl.LSTMCell(4, initializer=v1.glorot_uniform_initializer(seed=1)),
                              x, dtype=tf.float32, scope="lstm")
    gru, state = rnn.dynamic_rnn(rnn_cell_impl.GRUCell(3, kernel_initializer=v1.glorot_uniform_initializer(seed=2)),
                                 lstm, dtype=tf.float32, scope="gru")
    tf.identity(gru, name="gru_outputs")
    tf.identity(state, name="gru_state")
    scale = v1.get_variable("scale", initializer=np.float32(0.5))

    def outer(i, total):
        def inner(j, acc):
            step = tf.cond(tf.equal(j % 2, 0), lambda: acc + tf.cast(i * j, tf.float32) * scale,
                           lambda: acc - tf.cast(j, tf.float32))
            return j + 1, step
        _, acc = tf.while_loop(lambda j, acc: j < i, inner, [0, total])
        return i + 1, acc

    _, total = tf.while_loop(lambda i, t: i < n, outer, [0, tf.reduce_sum(state)])
    tf.identity(total, name="nested_total")
    return ["gru_outputs", "gru_state", "nested_total"]


def make_frozen() -> None:
    graph = tf.Graph()
    with graph.as_default():
        outputs = _frozen_rnn_graph()
        with v1.Session(graph=graph) as session:
            session.run(v1.global_variables_initializer())
            frozen = v1.graph_util.convert_variables_to_constants(session, graph.as_graph_def(), outputs)
    assert sorted(_sinks(frozen)) == sorted(outputs), _sinks(frozen)
    assert not any(n.op in ("VariableV2", "VarHandleOp") for n in frozen.node)
    (FROZEN / "tf1_rnn.pb").write_bytes(frozen.SerializeToString(deterministic=True))
    feeds = {"x": _sequence((2, 5, 3), 0), "n": np.int32(4)}
    recorded = _run_graph_file(frozen, {"run": feeds}, outputs)
    np.savez(FROZEN / "tf1_rnn.io.npz", **{k.split("/", 1)[1]: v for k, v in recorded.items()})


# The SavedModel -------------------------------------------------------------------------------


def make_saved_model() -> None:
    name = "tf1_dynamic_rnn"
    path = HERE / name
    shutil.rmtree(path, ignore_errors=True)
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [None, 4, 2], name="x")
        lengths = v1.placeholder(tf.int32, [None], name="lengths")
        cell = rnn_cell_impl.LSTMCell(3, initializer=v1.glorot_uniform_initializer(seed=3))
        outputs, state = rnn.dynamic_rnn(cell, x, sequence_length=lengths, dtype=tf.float32)
        counter = v1.get_variable("counter", initializer=np.float32(0.0), use_resource=False)

        def body(i, last):
            with tf.control_dependencies([v1.assign_add(counter, 1.0)]):
                return i + 1, last + tf.reduce_sum(tf.gather(outputs, i, axis=1))

        steps = tf.minimum(tf.reduce_max(lengths), tf.shape(x)[1])  # any lengths a caller feeds
        _, summed = tf.while_loop(lambda i, last: i < steps, body,
                                  [tf.constant(0), tf.constant(0.0)])
        with tf.control_dependencies([summed]):
            count = tf.identity(counter.read_value(), name="count")
        with v1.Session(graph=graph) as session:
            session.run(v1.global_variables_initializer())
            builder = v1.saved_model.Builder(str(path))
            signature = v1.saved_model.predict_signature_def(
                {"x": x, "lengths": lengths},
                {"outputs": outputs, "h": state.h, "c": state.c, "summed": summed, "count": count})
            builder.add_meta_graph_and_variables(session, ["serve"], signature_def_map={"serving_default": signature})
            builder.save()
    feeds = {"x": _sequence((3, 4, 2), 4), "lengths": np.array([4, 1, 3], np.int32)}
    with v1.Session(graph=tf.Graph()) as session:
        meta = v1.saved_model.load(session, ["serve"], str(path))
        outputs = meta.signature_def["serving_default"].outputs
        values = session.run({k: v.name for k, v in outputs.items()}, {f"{k}:0": v for k, v in feeds.items()})
    np.savez(HERE / f"{name}.io.npz", **{f"sig/serving_default/in/{k}": v for k, v in feeds.items()},
             **{f"sig/serving_default/out/{k}": v for k, v in values.items()})


# Small graphs, one feature each ---------------------------------------------------------------


def cond_basic():
    x = v1.placeholder(tf.float32, [None], name="x")
    p = v1.placeholder(tf.bool, [], name="p")
    y = tf.cond(p, lambda: x * 2.0, lambda: x - 1.0)
    z = tf.cond(p, lambda: tf.reduce_sum(x), lambda: tf.constant(7.0))
    tf.identity(y, name="y")
    tf.identity(z, name="z")
    x0 = np.array([1.0, -2.0, 3.5], np.float32)
    return {"true": {"x": x0, "p": np.bool_(True)}, "false": {"x": x0, "p": np.bool_(False)}}


def while_counter():
    n = v1.placeholder(tf.int32, [], name="n")
    i, total = tf.while_loop(lambda i, t: i < n, lambda i, t: (i + 1, t + i * i), [0, 0])
    tf.identity(i, name="i")
    tf.identity(total, name="total")
    return {"five": {"n": np.int32(5)}, "zero": {"n": np.int32(0)}, "negative": {"n": np.int32(-3)}}


def _nested(parallel_iterations: int):
    x = v1.placeholder(tf.float32, [3], name="x")
    n = v1.placeholder(tf.int32, [], name="n")
    w = tf.constant([0.5, -1.0, 2.0])

    def outer(i, acc):
        def inner(j, a):
            return j + 1, a * 0.9 + w * tf.cast(j, tf.float32) + x
        _, a = tf.while_loop(lambda j, a: j < i + 1, inner, [0, acc], parallel_iterations=parallel_iterations)
        return i + 1, a
    _, acc = tf.while_loop(lambda i, a: i < n, outer, [0, tf.zeros([3])], parallel_iterations=parallel_iterations)
    tf.identity(acc, name="acc")
    x0 = np.array([0.25, 1.0, -0.5], np.float32)
    return {"three": {"x": x0, "n": np.int32(3)}, "zero": {"x": x0, "n": np.int32(0)}}


def nested_while():
    return _nested(10)


def nested_while_serial():
    return _nested(1)


def cond_in_while():
    x = v1.placeholder(tf.float32, [None], name="x")
    n = v1.placeholder(tf.int32, [], name="n")

    def body(i, v):
        v = tf.cond(tf.equal(i % 3, 0), lambda: v * 2.0, lambda: tf.cond(i > 3, lambda: v - 1.0, lambda: v + 0.5))
        return i + 1, v
    _, v = tf.while_loop(lambda i, v: i < n, body, [0, x], shape_invariants=[tf.TensorShape([]), tf.TensorShape([None])])
    tf.identity(v, name="v")
    return {"seven": {"x": np.array([1.0, 2.0], np.float32), "n": np.int32(7)},
            "empty": {"x": np.zeros([0], np.float32), "n": np.int32(4)}}


def while_in_cond():
    x = v1.placeholder(tf.float32, [], name="x")
    p = v1.placeholder(tf.bool, [], name="p")

    def looping():
        _, y = tf.while_loop(lambda i, y: i < 4, lambda i, y: (i + 1, y * x), [0, tf.constant(1.0)])
        return y
    tf.identity(tf.cond(p, looping, lambda: x + 100.0), name="y")
    return {"loop": {"x": np.float32(1.5), "p": np.bool_(True)},
            "skip": {"x": np.float32(1.5), "p": np.bool_(False)}}


def tensor_array_loop():
    """TensorArrays written, read, scattered, split and gathered inside and after a loop, one of
    them growing (dynamic_size)."""
    x = v1.placeholder(tf.float32, [None, 2], name="x")
    steps = tf.shape(x)[0]
    source = tf.TensorArray(tf.float32, size=steps).unstack(x)
    grown = tf.TensorArray(tf.float32, size=0, dynamic_size=True, element_shape=[2], clear_after_read=False)

    def body(i, ta):
        return i + 1, ta.write(i, source.read(i) * tf.cast(i + 1, tf.float32))
    _, grown = tf.while_loop(lambda i, ta: i < steps, body, [0, grown])
    tf.identity(grown.stack(), name="stacked")
    tf.identity(grown.size(), name="size")
    tf.identity(grown.gather([0, steps - 1]), name="gathered")
    split = tf.TensorArray(tf.float32, size=2, infer_shape=False, clear_after_read=False).split(tf.reshape(x, [-1]), [2, tf.size(x) - 2])
    tf.identity(split.concat(), name="concat")
    tf.identity(split.read(1), name="second")
    return {"four": {"x": _sequence((4, 2), 5)}, "one": {"x": _sequence((1, 2), 6)}}


def tensor_array_errors():
    """A read past the end of a fixed-size TensorArray, which TensorFlow rejects when it runs."""
    x = v1.placeholder(tf.float32, [None], name="x")
    i = v1.placeholder(tf.int32, [], name="i")
    ta = tf.TensorArray(tf.float32, size=3).unstack(tf.reshape(x, [3, -1]))
    tf.identity(ta.read(i), name="row")
    x0 = np.arange(6, dtype=np.float32)
    return {"inside": {"x": x0, "i": np.int32(2)}, "outside": {"x": x0, "i": np.int32(3)}}


def tensor_array_rules():
    """TensorArray rules TensorFlow enforces when it runs: an index written twice is an error
    (j == i), an unwritten index of a known element shape reads as zeros, and writes to a
    gradient array (TensorArrayGradV3) add up."""
    x = v1.placeholder(tf.float32, [2], name="x")
    i = v1.placeholder(tf.int32, [], name="i")
    j = v1.placeholder(tf.int32, [], name="j")
    ta = tf.TensorArray(tf.float32, size=4, element_shape=[2], clear_after_read=False)
    ta = ta.write(i, x).write(j, x * 2.0)
    tf.identity(ta.stack(), name="stacked")
    grad = ta.grad("gradients", flow=ta.flow)
    grad = grad.write(1, x).write(1, x * 10.0)
    tf.identity(grad.read(1), name="summed")
    x0 = np.array([1.0, -2.0], np.float32)
    return {"apart": {"x": x0, "i": np.int32(0), "j": np.int32(2)},
            "twice": {"x": x0, "i": np.int32(1), "j": np.int32(1)},
            "past_end": {"x": x0, "i": np.int32(0), "j": np.int32(4)}}


def tensor_array_edges():
    """Empty TensorArrays stacked and concatenated (their element shape gives the result's), and
    a split into as many pieces as the array's size, which TensorFlow requires (k == 2)."""
    x = v1.placeholder(tf.float32, [None], name="x")
    k = v1.placeholder(tf.int32, [], name="k")
    empty = tf.TensorArray(tf.float32, size=0, element_shape=[2], clear_after_read=False)
    tf.identity(empty.stack(), name="stacked")
    tf.identity(empty.concat(), name="concatenated")
    pieces = tf.TensorArray(tf.float32, size=k, infer_shape=False, clear_after_read=False)
    pieces = pieces.split(x, tf.stack([1, tf.size(x) - 1]))
    tf.identity(pieces.read(1), name="rest")
    tf.identity(pieces.size(), name="count")
    x0 = np.array([3.0, 1.0, 4.0, 1.5], np.float32)
    return {"fits": {"x": x0, "k": np.int32(2)}, "too_many": {"x": x0, "k": np.int32(3)}}


def control_trigger():
    """A Merge of a Switch's two outputs, and a ControlTrigger, which runs even when its control
    input is dead (the untaken side of the Switch) and so lets what waits for it run."""
    x = v1.placeholder(tf.float32, [], name="x")
    p = v1.placeholder(tf.bool, [], name="p")
    off, on = control_flow_ops.switch(x, p)
    with tf.control_dependencies([tf.identity(on, name="pivot")]):
        trigger = tf.raw_ops.ControlTrigger(name="trigger")
    with tf.control_dependencies([trigger]):
        tf.identity(x * 3.0, name="out")
    merged = control_flow_ops.merge([off + 1.0, on * 10.0])
    tf.identity(merged[0], name="merged")
    tf.identity(merged[1], name="branch")
    return {"on": {"x": np.float32(2.0), "p": np.bool_(True)}, "off": {"x": np.float32(2.0), "p": np.bool_(False)}}


CASES = {"cond_basic": ".pbtxt", "while_counter": ".pb", "nested_while": ".pbtxt",
         "nested_while_serial": ".pb", "cond_in_while": ".pbtxt", "while_in_cond": ".pbtxt",
         "tensor_array_loop": ".pbtxt", "tensor_array_errors": ".pb", "tensor_array_rules": ".pbtxt",
         "tensor_array_edges": ".pbtxt",
         "control_trigger": ".pbtxt"}


def make_graphs() -> None:
    GRAPHS.mkdir(exist_ok=True)
    for case, suffix in CASES.items():
        graph = tf.Graph()
        with graph.as_default():
            runs = globals()[case]()
        named = [n for n in _sinks(graph.as_graph_def()) if "/" not in n]  # not a loop's unused Exit
        graph_def = v1.graph_util.extract_sub_graph(graph.as_graph_def(), named)
        outputs = _sinks(graph_def)
        assert sorted(outputs) == sorted(named), outputs
        path = GRAPHS / f"{case}{suffix}"
        if suffix == ".pb":
            path.write_bytes(graph_def.SerializeToString(deterministic=True))
        else:
            path.write_text(str(graph_def))
        np.savez(GRAPHS / f"{case}.io.npz", **_run_graph_file(graph_def, runs, outputs))
        print(case, outputs)


if __name__ == "__main__":
    jobs = {"graphs": make_graphs, "frozen": make_frozen, "saved_model": make_saved_model}
    for job in sys.argv[1:] or jobs:
        jobs[job]()
