"""`savedmodel summary` on TensorFlow-written models: its table, totals and JSON (the live
comparison with Keras and TensorFlow's profiler is tests/test_model_summary_live.py)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from conftest import fuzz_settings

from savedmodel.cli import main
from savedmodel.describe import describe_checkpoint
from savedmodel.protos import saved_model_pb2
from savedmodel.static_shapes import analyze

DATA = Path(__file__).parent / "data"
CNN = DATA / "reference" / "savedmodels" / "keras_cnn"


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _json(*args) -> dict:
    result = _run("summary", *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_params_are_the_checkpoints_variables():
    """The variables the signature reads, as stored in the checkpoint (which also holds a
    dropout layer's seed, read by no signature, and a second copy of every variable)."""
    summary = _json(CNN)
    read = {v.checkpoint_key for v in analyze(CNN).variables.values()}
    stored = [t for t in describe_checkpoint(CNN)["tensors"] if t["key"] in read]
    assert summary["total_params"] == sum(t["elements"] for t in stored)
    assert summary["weights"] == [{"dtype": "float32", "variables": len(stored),
                                   "elements": sum(t["elements"] for t in stored),
                                   "bytes": sum(t["bytes"] for t in stored)}]
    assert sum(layer["params"] for layer in summary["layers"]) == summary["total_params"]
    assert summary["trainable_params"] + summary["non_trainable_params"] == summary["total_params"]


def test_non_trainable_params_are_the_object_graphs():
    summary = _json(CNN)
    frozen = [layer for layer in summary["layers"] if layer["params"] != layer["trainable_params"]]
    assert [layer["name"] for layer in frozen] == ["batch_normalization"]
    assert summary["non_trainable_params"] == frozen[0]["params"] - frozen[0]["trainable_params"]


def test_table_uses_kerass_wording():
    result = _run("summary", CNN)
    assert result.exit_code == 0, result.output
    summary = _json(CNN)
    lines = result.output.splitlines()
    assert lines[0] == 'Model: "serving_default"'
    assert f"Total params: {summary['total_params']:,} (" in result.output
    assert f"Trainable params: {summary['trainable_params']:,}" in lines
    assert f"Non-trainable params: {summary['non_trainable_params']:,}" in lines
    assert any(line.startswith(f"Total FLOPs: {summary['flops']:,}") for line in lines)
    for layer in summary["layers"]:
        row = next(line for line in lines if line.startswith(f"{layer['name']} ({layer['type']})"))
        assert row.split()[-2:] == [f"{layer['params']:,}", f"{layer['flops']:,}"]


def test_graph_files_and_saved_models_agree_on_shapes_and_flops():
    frozen, saved = _json(DATA / "frozen" / "keras_cnn.pb"), _json(CNN)
    assert frozen["flops"] == saved["flops"]
    assert [l["output_shapes"] for l in frozen["layers"]] == [l["output_shapes"] for l in saved["layers"]]
    assert frozen["outputs"][0]["shape"] == saved["outputs"][0]["shape"]


def test_an_unknown_signature_is_one_error_line():
    result = _run("summary", CNN, "--signature", "nope")
    assert result.exit_code == 1
    assert result.output.startswith("Error:") and "serving_default" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_missing_model_is_one_error_line(tmp_path):
    result = _run("summary", tmp_path / "absent")
    assert result.exit_code == 1 and result.output.startswith("Error:")


def test_help_states_the_flops_convention():
    result = _run("summary", "--help")
    assert "a multiply-add is 2 FLOPs" in " ".join(result.output.split())


def _attr_values(value):
    """Hostile replacements for an attr value of the same kind."""
    kind = value.WhichOneof("value")
    if kind == "i":
        return st.sampled_from([0, -1, -(2**62), 2**62, 3])
    if kind == "list" and value.list.i:
        return st.lists(st.sampled_from([0, -1, 2**40, 1, 7]), max_size=6)
    if kind == "shape":
        return st.lists(st.sampled_from([-1, -7, 0, 2**40, 5]), max_size=5)
    if kind == "s":
        return st.sampled_from([b"", b"SAME", b"VALID", b"EXPLICIT", b"NCHW", b"a,b->", b"\xff"])
    return st.just(None)


@fuzz_settings(25)
@given(data=st.data())
def test_hostile_attrs_give_a_summary_or_one_error_line(tmp_path_factory, data):
    """Attrs of the keras CNN's nodes (strides, kernel sizes, shapes, paddings, formats, ...)
    replaced with zeros, negatives, huge numbers and nonsense: the summary is printed with
    unknown shapes where they make no sense, or the error is one line."""
    copy = tmp_path_factory.mktemp("hostile") / "model"
    shutil.copytree(CNN, copy)
    model = saved_model_pb2.SavedModel.FromString((copy / "saved_model.pb").read_bytes())
    graph = model.meta_graphs[0].graph_def
    nodes = list(graph.node) + [n for f in graph.library.function for n in f.node_def]
    for _ in range(data.draw(st.integers(1, 6))):
        node = data.draw(st.sampled_from(nodes))
        names = sorted(node.attr)
        if not names:
            continue
        value = node.attr[data.draw(st.sampled_from(names))]
        new = data.draw(_attr_values(value))
        kind = value.WhichOneof("value")
        if new is None:
            continue
        if kind == "i":
            value.i = new
        elif kind == "list":
            del value.list.i[:]
            value.list.i.extend(new)
        elif kind == "shape":
            value.shape.Clear()
            for size in new:
                value.shape.dim.add(size=size)
        elif kind == "s":
            value.s = new
    (copy / "saved_model.pb").write_bytes(model.SerializeToString())
    result = CliRunner().invoke(main, ["summary", str(copy)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code in (0, 1), result.output
    if result.exit_code == 1:
        assert len(result.output.strip().splitlines()) == 1 and result.output.startswith("Error: ")
        assert "internal error" not in result.output, result.output


def test_strides_of_zero_and_huge_windows_are_no_internal_error(tmp_path):
    copy = tmp_path / "model"
    shutil.copytree(CNN, copy)
    model = saved_model_pb2.SavedModel.FromString((copy / "saved_model.pb").read_bytes())
    for function in model.meta_graphs[0].graph_def.library.function:
        for node in function.node_def:
            if node.op in ("Conv2D", "MaxPool"):
                del node.attr["strides"].list.i[:]
                node.attr["strides"].list.i.extend([1, 0, 0, 1])
            if node.op == "MaxPool":
                del node.attr["ksize"].list.i[:]
                node.attr["ksize"].list.i.extend([1, 2**40, 2**40, 1])
    (copy / "saved_model.pb").write_bytes(model.SerializeToString())
    summary = _json(copy)
    assert [layer["name"] for layer in summary["layers"]] == [layer["name"] for layer in _json(CNN)["layers"]]
    structure = analyze(copy, recorded_shapes=False)
    convolution = next(n for n in structure.nodes.values() if n.op == "Conv2D")
    assert convolution.outputs[0].shape is None
