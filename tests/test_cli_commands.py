"""The commands of `savedmodel` on every model of the corpus, a model with unsupported ops,
checkpoints, and bad input."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import CHECKPOINTS, EXTRA_MODELS, SAVEDMODELS, special_file
from savedmodel import compare as compare_module
from savedmodel.cli import main
from savedmodel.describe import describe_checkpoint
from savedmodel.runtime import load
from savedmodel.runtime.tensor_bundle import BundleReader
from test_runtime_errors import _node, _placeholder, _write

ALL_MODELS = SAVEDMODELS + EXTRA_MODELS
SEEDS = next(p for p in SAVEDMODELS if p.name == "seeds")


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _ok(*args) -> str:
    result = _run(*args)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def unsupported_model(tmp_path):
    nodes = [_placeholder("x"), _node("mystery", "FancyNewOp", ["x"])]
    return _write(tmp_path / "unsupported", nodes, {"y": "mystery:0"})


@pytest.mark.parametrize("model", ALL_MODELS, ids=lambda p: p.name)
def test_inspection_commands_work_on_every_model(model):
    text = _ok("show", model, "--all")
    for name in load(model).signatures:
        assert f"signature_def['{name}']:" in text
    assert "contains" in _ok("show", model, "--list-ops")
    shown = json.loads(_ok("show", model, "--json"))
    assert shown["schema"] == "savedmodel.show/1"
    assert {s["name"] for s in shown["meta_graphs"][0]["signatures"]} >= set(load(model).signatures)
    ops = json.loads(_ok("ops", model, "--json"))
    assert ops["schema"] == "savedmodel.ops/1" and ops["meta_graphs"][0]["ops"]
    assert "identical" in _ok("diff", model, model, "--json")
    assert _ok("diff", model, model).strip() == "no differences in signatures, ops or variables"


def test_show_all_lists_functions_variables_and_sizes():
    text = _ok("show", SEEDS, "--all")
    assert "Function Name: 'power'" in text
    assert "x: TensorSpec(shape=(10, 10), dtype=tf.int32, name='x')" in text
    assert "w/.ATTRIBUTES/VARIABLE_VALUE: DT_FLOAT (2, 2) 16 bytes" in text


def test_model_with_unsupported_ops_is_listed_not_fatal(unsupported_model):
    assert "FancyNewOp *" in _ok("show", unsupported_model, "--all")
    assert "FancyNewOp" in _ok("ops", unsupported_model) and "* not supported" in _ok("ops", unsupported_model)
    result = _run("run", unsupported_model, "--signature-def", "sig", "--input-exprs", "x=[1.0]")
    assert result.exit_code == 1
    assert "op 'FancyNewOp' (node 'mystery'" in result.output


def test_ckpt_lists_tensors_of_every_kind_of_checkpoint():
    for path in (CHECKPOINTS / "single" / "ckpt", CHECKPOINTS / "sharded" / "ckpt.index",
                 CHECKPOINTS / "managed", SEEDS):
        described = describe_checkpoint(path)
        text = _ok("ckpt", path)
        for tensor in described["tensors"]:
            assert tensor["key"] in text
        assert json.loads(_ok("ckpt", path, "--json")) == described
    assert "ckpt-4" in describe_checkpoint(CHECKPOINTS / "managed")["path"]


def test_ckpt_prints_one_tensor():
    key = "model/inner/kernel/.ATTRIBUTES/VARIABLE_VALUE"
    value = json.loads(_ok("ckpt", CHECKPOINTS / "single" / "ckpt", "--tensor", key, "--json"))
    assert value["value"] == BundleReader(CHECKPOINTS / "single" / "ckpt").read(key).tolist()
    words = json.loads(_ok("ckpt", CHECKPOINTS / "single" / "ckpt", "--tensor",
                           "model/words/.ATTRIBUTES/VARIABLE_VALUE", "--json"))
    assert words["value"] == ["alpha", "", "gamma δ"]


@pytest.mark.parametrize("path, prefix", [
    (CHECKPOINTS / "single", CHECKPOINTS / "single" / "ckpt"),
    (SEEDS / "variables", SEEDS / "variables" / "variables"),
])
def test_ckpt_of_a_directory_without_state_file_names_the_prefix(path, prefix):
    result = _run("ckpt", path)
    assert result.exit_code == 1
    assert result.output.strip().endswith(f"state file; did you mean {prefix}?")


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_ckpt_of_an_index_that_is_no_regular_file_says_so(tmp_path, kind):
    """Given as a prefix, an .index, a SavedModel or its variables/ folder, a FIFO or a device in
    place of the index is named as such (it was "no checkpoint here")."""
    model = tmp_path / "model"
    shutil.copytree(SEEDS, model)
    index = model / "variables" / "variables.index"
    what = special_file(index, kind)
    for path in (model, model / "variables" / "variables", index):
        result = _run("ckpt", path)
        assert result.exit_code == 1
        assert result.output.strip() == f"Error: {index} is {what}, not a regular file", path
    result = _run("ckpt", model / "variables")
    assert result.output.strip().endswith(f"did you mean {model / 'variables' / 'variables'}?")


def test_ckpt_of_a_directory_with_several_checkpoints_lists_them(tmp_path):
    for name in ("a.index", "b.index"):
        (tmp_path / name).write_bytes(b"")
    result = _run("ckpt", tmp_path)
    assert result.exit_code == 1
    assert result.output.strip().endswith(f"it holds the checkpoints {tmp_path / 'a'}, {tmp_path / 'b'}: name one")


@pytest.mark.parametrize("key, hint", [
    ("model/big", "; did you mean 'model/big/.ATTRIBUTES/VARIABLE_VALUE'?"),
    ("model/bgi/.ATTRIBUTES/VARIABLE_VALUE", "; did you mean 'model/big/.ATTRIBUTES/VARIABLE_VALUE' or "),
    ("nothing like it", ""),
])
def test_ckpt_unknown_tensor_suggests_keys(key, hint):
    result = _run("ckpt", CHECKPOINTS / "single" / "ckpt", "--tensor", key)
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: {CHECKPOINTS / 'single' / 'ckpt.index'}: no tensor named {key!r}{hint}")
    assert hint or result.output.strip().endswith(repr(key))


def test_diff_reports_signature_op_and_variable_changes():
    mlp, cnn = (next(p for p in SAVEDMODELS if p.name == n) for n in ("keras_mlp", "keras_cnn"))
    result = json.loads(_ok("diff", mlp, cnn, "--json"))
    changes = result["meta_graphs"][0]
    assert not result["identical"]
    assert "Conv2D" in changes["ops"]["added"] and "Softmax" in changes["ops"]["removed"]
    assert {c["name"] for c in changes["signatures"]["changed"]} == {"serve", "serving_default"}
    assert changes["variables"]["added"] or changes["variables"]["changed"]


def test_run_prints_outputs():
    text = _ok("run", SEEDS, "--signature-def", "dense", "--input-exprs", "x=[[1.0, 2.0]]")
    expected = load(SEEDS).signatures["dense"](x=np.array([[1.0, 2.0]], np.float32))
    assert f"Result for output key y:\n{expected['y']!r}" in text


def test_run_reads_npy_and_npz_and_writes_outdir(tmp_path):
    np.save(tmp_path / "x.npy", np.array([[1.0, 2.0]], np.float32))
    np.savez(tmp_path / "many.npz", a=np.array([1, 2, 3], np.int32), b=np.array([0], np.int32))
    out = tmp_path / "out"
    _ok("run", SEEDS, "--signature-def", "dense", "--inputs", f"x={tmp_path / 'x.npy'}", "--outdir", out)
    assert np.load(out / "y.npy").tolist() == [[2.25, 3.5]]
    refused = _run("run", SEEDS, "--signature-def", "dense", "--inputs", f"x={tmp_path / 'x.npy'}", "--outdir", out)
    assert refused.exit_code == 1 and "use --overwrite" in refused.output
    _ok("run", SEEDS, "--signature-def", "dense", "--inputs", f"x={tmp_path / 'x.npy'}", "--outdir", out, "--overwrite")
    text = _ok("run", SEEDS, "--signature-def", "next_collatz", "--inputs", f"x={tmp_path / 'many.npz'}[a]")
    assert "array([ 4,  1, 10], dtype=int32)" in text


@pytest.mark.parametrize("args, message", [
    (["--input-exprs", "x=__import__('os').getcwd()"], "is not a Python literal"),
    (["--input-exprs", "x"], "expected NAME=VALUE"),
    (["--inputs", "x=/nonexistent.npy"], "no such file"),
    (["--input-exprs", "y=[1.0]"], "missing ['x']"),
    (["--input-exprs", "x=[[1.5, 2.0, 3.0]]"], "expects shape (None, 2)"),
])
def test_run_errors_are_one_line(args, message):
    result = _run("run", SEEDS, "--signature-def", "dense", *args)
    assert result.exit_code == 1
    assert message in result.output and len(result.output.strip().splitlines()) == 1


def test_run_unknown_signature_lists_available():
    result = _run("run", SEEDS, "--signature-def", "nope", "--input-exprs", "x=[1]")
    assert result.exit_code == 1 and "available: dense, next_collatz" in result.output


def test_compare_without_tensorflow_runs_ours_only_and_exits_2(monkeypatch):
    monkeypatch.setattr(compare_module, "import_tensorflow", lambda: None)
    monkeypatch.setattr("savedmodel.cli.run_commands.import_tensorflow", lambda: None)
    result = _run("compare", SEEDS, "--signature-def", "dense")
    assert result.exit_code == 2
    assert "dense/y: float32 [2, 2] (not compared)" in result.output
    assert "TensorFlow is not installed" in result.output


RECORDED_FEEDS = {"ragged_map", "ragged_rows", "sparse_matmul", "segments_search", "image_bytes_serving"}
"""Models whose inputs random values cannot fill validly (the components of ragged or sparse
tensors, segment ids, encoded images: TensorFlow and we reject them), so compare gets the
recorded inputs of each signature."""


def _recorded_runs(model: Path) -> list[list[str]]:
    """compare's arguments for each signature recorded in the model's .io.npz, fed its inputs."""
    record = model.with_suffix(".io.npz")
    inputs: dict[str, list[str]] = {}
    for key in np.load(record):
        _, signature, side, name = key.split("/", 3)
        if side == "in":
            inputs.setdefault(signature, []).append(f"{name}={record}[{key}]")
    return [["--signature-def", signature, "--inputs", ";".join(feeds)] for signature, feeds in inputs.items()]


@pytest.mark.parametrize("model", ALL_MODELS, ids=lambda p: p.name)
def test_compare_agrees_with_tensorflow(tf, model):
    runs = _recorded_runs(model) if model.name in RECORDED_FEEDS else [[]]
    for extra in runs:
        report = _json_tail(_ok("compare", model, *extra, "--json", "--atol", "1e-5", "--rtol", "1e-4"))
        assert report["compared_with_tensorflow"]
        for entry in report["signatures"]:
            for row in entry["outputs"]:
                assert row["within"], (entry["signature"], row)


def _json_tail(output: str) -> dict:
    return json.loads(output[output.index("{"):])


def test_compare_exits_1_beyond_tolerance(tf, tmp_path):
    copy = tmp_path / "seeds"
    shutil.copytree(SEEDS, copy)
    result = _run("compare", copy, "--signature-def", "dense", "--atol", "-1", "--rtol", "0")
    assert result.exit_code == 1 and "DIFFERENT" in result.output


BLOCK_TENSORFLOW = ("import sys; sys.modules['tensorflow'] = None; sys.argv[0] = 'savedmodel'; "
                    "from savedmodel.cli import main; main()")


@pytest.mark.parametrize("args, status", [
    (["show", SEEDS, "--all"], 0), (["graph", SEEDS, "--expand"], 0), (["ops", SEEDS], 0),
    (["ckpt", SEEDS], 0), (["diff", SEEDS, SEEDS], 0),
    (["run", SEEDS, "--signature-def", "sum_even", "--input-exprs", "items=[1, 2]"], 0),
    (["compare", SEEDS, "--signature-def", "sum_even"], 2),  # runs ours, but compared nothing
])
def test_every_command_works_without_tensorflow(args, status):
    done = subprocess.run([sys.executable, "-c", BLOCK_TENSORFLOW, *map(str, args)],
                          capture_output=True, text=True)
    assert done.returncode == status, done.stderr
    assert done.stdout.strip()


def test_graph_works_on_a_model_with_unsupported_ops(unsupported_model):
    assert "%mystery = FancyNewOp(%x)" in _ok("graph", unsupported_model, "--signature-def", "sig")
