"""`savedmodel summary` on TensorFlow-written models: its table, totals and JSON (the live
comparison with Keras and TensorFlow's profiler is tests/test_model_summary_live.py)."""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from savedmodel.cli import main
from savedmodel.describe import describe_checkpoint
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
