"""TensorFlow 1 control flow (Switch/Merge, Enter/Exit/NextIteration frames, TensorArrayV3) on both
engines (the numpy one's runtime/frames.py, the native one's engine/frames.rs), through graphs
TensorFlow built and ran: tests/data/tf1 (one feature each, made
by tests/data/models/make_models_tf1.py, each run recorded with TensorFlow's outputs or error),
the frozen tf1_rnn.pb and the tf1_dynamic_rnn SavedModel."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from conftest import DATA
from savedmodel.runtime import load, load_graph, time_limit
from savedmodel.runtime.deadline import DeadlineExceededError
from savedmodel.runtime.executor import NodeError
from savedmodel.runtime import frames
from savedmodel.runtime.frames import DEAD
from savedmodel.runtime.graph_file import read_graph
from savedmodel.runtime.kernels import frames as frame_kernels
from test_runtime_corpus import assert_matches

GRAPHS = sorted(p for p in (DATA / "tf1").iterdir() if p.suffix in (".pb", ".pbtxt"))


def _runs(path: Path) -> dict[str, tuple[dict, dict, str | None]]:
    """Each recorded run of a graph: (feeds, expected outputs, TensorFlow's error or None)."""
    io = np.load(path.with_name(path.name.split(".")[0] + ".io.npz"))
    runs = {}
    for run in sorted({key.split("/")[0] for key in io.files}):
        feeds = {k.split("/")[-1]: io[k] for k in io.files if k.startswith(f"{run}/in/")}
        expected = {k.split("/")[-1]: io[k] for k in io.files if k.startswith(f"{run}/out/")}
        error = str(io[f"{run}/error"].item().decode()) if f"{run}/error" in io.files else None
        runs[run] = (feeds, expected, error)
    return runs


CASES = [(path, run) for path in GRAPHS for run in _runs(path)]


@pytest.mark.parametrize("path, run", CASES, ids=[f"{p.stem}-{r}" for p, r in CASES])
def test_graph_gives_tensorflows_outputs_or_error(path, run):
    feeds, expected, error = _runs(path)[run]
    model = load_graph(path, engine="numpy")
    if error is None:
        assert_matches(model.signatures["serving_default"](**feeds), expected, f"{path.name}:{run}")
        return
    with pytest.raises(NodeError) as caught:
        model.signatures["serving_default"](**feeds)
    core = re.sub(r"^TensorArray \S+: ", "", error.splitlines()[3])
    assert core.split(": ")[-1] in str(caught.value)


def _binary(path: Path, tmp_path: Path) -> Path:
    """The graph as a binary GraphDef file (what the native engine reads)."""
    if path.suffix == ".pb":
        return path
    binary = tmp_path / f"{path.stem}.pb"
    binary.write_bytes(read_graph(path).SerializeToString())
    return binary


@pytest.mark.parametrize("path, run", CASES, ids=[f"{p.stem}-{r}" for p, r in CASES])
def test_native_engine_gives_tensorflows_outputs_or_error(path, run, tmp_path):
    """The same runs on the native engine's frame executor; an error must carry TensorFlow's
    message and name the node."""
    feeds, expected, error = _runs(path)[run]
    model = load_graph(_binary(path, tmp_path), engine="native")
    if error is None:
        assert_matches(model.signatures["serving_default"](**feeds), expected, f"{path.name}:{run}")
        return
    with pytest.raises(NodeError) as caught:
        model.signatures["serving_default"](**feeds)
    lines = error.splitlines()
    node = lines[3].removeprefix("Node: ").strip("'")
    assert f'"{node}"' in str(caught.value)
    assert re.sub(r"^TensorArray \S+: ", "", lines[4]) in str(caught.value)


def test_results_do_not_depend_on_parallel_iterations():
    """The same loops built with parallel_iterations 10 and 1 (TensorFlow recorded both)."""
    many, one = (load_graph(DATA / "tf1" / name, engine="numpy") for name in
                 ("nested_while.pbtxt", "nested_while_serial.pb"))
    feeds, _, _ = _runs(DATA / "tf1" / "nested_while.pbtxt")["three"]
    np.testing.assert_array_equal(many.signatures["serving_default"](**feeds)["acc"],
                                  one.signatures["serving_default"](**feeds)["acc"])


@pytest.mark.parametrize("engine", ["auto", "numpy"])
def test_frozen_tf1_graph_with_dynamic_rnn(engine):
    """Nested loops, a conditional inside a loop, TensorArrays: native when the engine is free
    to choose."""
    path = DATA / "frozen" / "tf1_rnn.pb"
    io = np.load(path.with_suffix(".io.npz"))
    model = load(path, engine=engine)
    assert model.engine == ("native" if engine == "auto" else "numpy")
    outputs = model.signatures["serving_default"](**{k[3:]: io[k] for k in io.files if k.startswith("in/")})
    assert_matches(outputs, {k[4:]: io[k] for k in io.files if k.startswith("out/")}, path.name)


@pytest.mark.parametrize("engine", ["numpy", "native"])
def test_tf1_saved_model_with_dynamic_rnn_and_ref_variable_in_a_loop(engine):
    """RefEnter carries the counter variable into the loop, which assigns to it once per
    iteration: each call adds max(lengths) to it."""
    io = np.load(DATA / "models" / "tf1_dynamic_rnn.io.npz")
    feeds = {k.split("/")[-1]: io[k] for k in io.files if "/in/" in k}
    model = load(DATA / "models" / "tf1_dynamic_rnn", engine=engine)
    first = model.signatures["serving_default"](**feeds)
    assert_matches(first, {k.split("/")[-1]: io[k] for k in io.files if "/out/" in k}, "tf1_dynamic_rnn")
    again = model.signatures["serving_default"](**feeds)
    assert again["count"] == first["count"] + feeds["lengths"].max()


REF_FORMS = {"Switch": "RefSwitch", "Merge": "RefMerge", "Enter": "RefEnter", "Exit": "RefExit",
             "NextIteration": "RefNextIteration"}


@pytest.mark.parametrize("name, run", [("cond_in_while.pbtxt", "seven"), ("while_in_cond.pbtxt", "loop"),
                                       ("nested_while.pbtxt", "three")])
@pytest.mark.parametrize("engine", ["numpy", "native"])
def test_the_ref_forms_route_values_as_the_plain_ones(name, run, engine, tmp_path):
    """The same graphs with every Switch, Merge, Enter, Exit and NextIteration in its Ref form
    (what TensorFlow 1 builds around reference variables)."""
    graph = read_graph(DATA / "tf1" / name)
    for node in graph.node:
        node.op = REF_FORMS.get(node.op, node.op)
    path = tmp_path / "refs.pb"
    path.write_bytes(graph.SerializeToString())
    feeds, expected, _ = _runs(DATA / "tf1" / name)[run]
    assert_matches(load_graph(path, engine=engine).signatures["serving_default"](**feeds), expected, name)


def test_a_failed_assert_is_an_error_with_tensorflows_summary_of_its_data():
    """dynamic_rnn asserts that sequence_length has one entry per batch row."""
    io = np.load(DATA / "models" / "tf1_dynamic_rnn.io.npz")
    model = load(DATA / "models" / "tf1_dynamic_rnn", engine="native")
    x = io["sig/serving_default/in/x"]
    with pytest.raises(NodeError, match=re.escape(
            "assertion failed: [Expected shape for Tensor rnn/sequence_length:0 is ] "
            f"[{x.shape[0]}] [ but saw shape: ] [1]")):
        model.signatures["serving_default"](x=x, lengths=np.array([1], np.int32))


def test_a_loop_on_the_untaken_branch_runs_one_dead_iteration_and_its_exits_are_dead(monkeypatch):
    """As in TensorFlow: the Merge fed a dead Enter is dead, so is everything after it, and the
    frame's dead Exits reach the enclosing frame once it is done."""
    ran = []
    execute = frames.FrameRun.execute

    def recording(self, node, tag, inputs, dead):
        ran.append((node.name, dead))
        return execute(self, node, tag, inputs, dead)

    monkeypatch.setattr(frames.FrameRun, "execute", recording)
    model = load_graph(DATA / "tf1" / "while_in_cond.pbtxt", outputs=["y", "cond/while/Exit_1"], engine="numpy")
    assert model.signatures["serving_default"](x=np.float32(2), p=np.bool_(True))["cond/while/Exit_1"] == 16
    ran.clear()
    with pytest.raises(NodeError, match="'cond/while/Exit_1:0' has no value"):
        model.signatures["serving_default"](x=np.float32(2), p=np.bool_(False))
    assert {"cond/while/Merge_1", "cond/while/NextIteration_1", "cond/while/Exit_1"} <= {n for n, dead in ran if dead}
    assert ("cond/Merge", False) in ran


def test_a_fetch_on_the_untaken_branch_is_an_error_naming_it():
    model = load_graph(DATA / "tf1" / "control_trigger.pbtxt", outputs=["Switch:1"], engine="numpy")
    assert model.signatures["serving_default"](x=np.float32(2), p=np.bool_(True))["Switch:1"] == 2
    with pytest.raises(NodeError, match=r"'Switch:1' has no value: .*untaken branch"):
        model.signatures["serving_default"](x=np.float32(2), p=np.bool_(False))


def test_a_fetch_inside_a_loop_is_an_error_naming_it():
    model = load_graph(DATA / "tf1" / "while_counter.pb", outputs=["while/Identity"], engine="numpy")
    with pytest.raises(NodeError, match=r"'while/Identity:0' has no value: it never ran at the top level"):
        model.signatures["serving_default"](n=np.int32(3))


def test_a_failure_inside_a_loop_names_the_node_frame_and_iteration(tmp_path):
    """tensor_array_loop with x's shape left open: rows of 5 do not fit the [2] elements of the
    TensorArray the loop writes."""
    graph = read_graph(DATA / "tf1" / "tensor_array_loop.pbtxt")
    del next(node for node in graph.node if node.name == "x").attr["shape"]
    path = tmp_path / "open.pb"
    path.write_bytes(graph.SerializeToString())
    model = load_graph(path, engine="numpy")
    with pytest.raises(NodeError, match=r"node 'while/TensorArrayWrite/TensorArrayWriteV3' \(op "
                                        r"TensorArrayWriteV3\) in frame 'while/while_context' iteration 0: "
                                        r".*value shape is \[5\] which is incompatible"):
        model.signatures["serving_default"](x=np.zeros((3, 5), np.float32))


def test_a_loop_stops_at_the_time_limit():
    model = load_graph(DATA / "tf1" / "while_counter.pb", engine="numpy")
    with pytest.raises(DeadlineExceededError, match="loop 'while/while_context'"), time_limit(0.2):
        model.signatures["serving_default"](n=np.int32(2**31 - 1))


def test_switch_rejects_a_predicate_that_is_not_a_boolean_scalar():
    with pytest.raises(ValueError, match="must be a scalar"):
        frame_kernels.switch(np.ones(2), np.array([True, False]))
    assert frame_kernels.switch(np.ones(2), np.bool_(False))[1] is DEAD
