"""`savedmodel compare --per-node`: every intermediate tensor compared, on our engines and
against TensorFlow, with a difference injected into a copy of keras_cnn (one weight changed) to
be found at the node that reads it."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import DATA, SAVEDMODELS
from savedmodel.cli import main
from savedmodel.compare import random_feeds
from savedmodel.runtime import load
from savedmodel.runtime import native
from savedmodel.runtime.bundle_writer import write_bundle
from savedmodel.runtime.tensor_bundle import BundleReader

KERAS_CNN = next(p for p in SAVEDMODELS if p.name == "keras_cnn")
SECOND_CONV_KERNEL = "variables.6"
"""keras_cnn's variables, in Keras' order: conv kernel, bias; batch norm gamma, beta, moving
mean, moving variance; the second conv's kernel, bias; ..."""
MOVING_VARIANCE = "variables.5"


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _json(output: str) -> dict:
    return json.loads(output[output.index("{"):])


def _changed_copy(tmp_path, variable: str, change) -> object:
    """A copy of keras_cnn with `change` applied to one variable (by its path in the model's
    `variables`), in every checkpoint entry that holds it."""
    copy = tmp_path / f"keras_cnn_{variable}"
    shutil.copytree(KERAS_CNN, copy)
    target = load(KERAS_CNN, engine="numpy").variables[variable]
    prefix = copy / "variables" / "variables"
    reader = BundleReader(prefix)
    tensors = {key: reader.read(key) for key in reader.keys()}
    changed = [key for key, value in tensors.items()
               if value.dtype == target.dtype and value.shape == target.shape and np.array_equal(value, target)]
    assert changed, f"no checkpoint entry holds {variable}"
    for key in changed:
        tensors[key] = change(tensors[key])
    write_bundle(prefix, tensors)
    assert not np.array_equal(load(copy, engine="numpy").variables[variable], target)
    return copy


def _per_node(*args, against: str = "numpy", engine: str = "numpy"):
    return _run("compare", *args, "--per-node", "--signature-def", "serving_default",
                "--against", against, "--engine", engine, "--json")


def _perturbed(value):
    return value + np.float32(0.5)


def _check_found_at_second_conv(report: dict) -> None:
    (entry,) = report["signatures"]
    keys = [row["key"] for row in entry["diverging"]]
    first = entry["diverging"][0]
    assert first["key"].endswith("/conv2d_1_2/convolution/ReadVariableOp:0"), keys
    assert first["op"] == "ReadVariableOp" and first["origin"]
    second = entry["diverging"][1]
    assert second["key"].endswith("/conv2d_1_2/convolution:0") and second["op"] == "Conv2D"
    assert not second["origin"]  # it inherits the difference of the weight it reads
    assert sum(row["origin"] for row in entry["diverging"]) == 1, keys
    assert entry["compared"] > len(keys)  # what runs before the second conv agrees
    assert entry["non_finite"] is None


def test_finds_a_changed_weight_at_the_node_reading_it(tmp_path):
    copy = _changed_copy(tmp_path, SECOND_CONV_KERNEL, _perturbed)
    result = _per_node(KERAS_CNN, "--other-model", copy)
    assert result.exit_code == 1, result.output
    report = _json(result.output)
    assert report["ours"] == "numpy" and report["theirs"] == "numpy"
    _check_found_at_second_conv(report)


@pytest.mark.skipif(not native.available(), reason="the native engine is not built")
def test_finds_a_changed_weight_across_engines(tmp_path):
    copy = _changed_copy(tmp_path, SECOND_CONV_KERNEL, _perturbed)
    result = _per_node(KERAS_CNN, "--other-model", copy, against="numpy", engine="native")
    assert result.exit_code == 1, result.output
    report = _json(result.output)
    assert report["ours"] == "native"
    _check_found_at_second_conv(report)


def test_text_report_marks_where_the_difference_starts(tmp_path):
    copy = _changed_copy(tmp_path, SECOND_CONV_KERNEL, _perturbed)
    result = _run("compare", KERAS_CNN, "--per-node", "--signature-def", "serving_default", "--against",
                  "numpy", "--engine", "numpy", "--other-model", copy, "--max-nodes", "2")
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.startswith("  ")]
    assert lines[0].endswith("<- starts here") and "conv2d_1_2/convolution/ReadVariableOp:0" in lines[0]
    assert "conv2d_1_2/convolution:0 (op Conv2D" in lines[1]
    assert "more (--max-nodes)" in lines[2]


@pytest.mark.skipif(not native.available(), reason="the native engine is not built")
@pytest.mark.parametrize("model", [KERAS_CNN, KERAS_CNN.parent / "keras_mlp"], ids=lambda p: p.name)
def test_engines_agree_node_by_node(model):
    result = _per_node(model, against="numpy", engine="native")
    assert result.exit_code == 0, result.output
    (entry,) = _json(result.output)["signatures"]
    assert entry["compared"] > 10 and entry["diverging"] == []


def test_reports_the_first_node_with_nan_the_other_side_lacks(tmp_path):
    copy = _changed_copy(tmp_path, MOVING_VARIANCE, lambda v: -np.abs(v) - 1)
    result = _per_node(KERAS_CNN, "--other-model", copy)
    assert result.exit_code == 1
    found = _json(result.output)["signatures"][0]["non_finite"]
    assert found["key"].endswith("/batch_normalization_1/batchnorm/Rsqrt:0"), found
    assert found["op"] == "Rsqrt" and found["side"] == "theirs"
    assert found["nan"] == load(KERAS_CNN, engine="numpy").variables[MOVING_VARIANCE].size
    text = _run("compare", KERAS_CNN, "--per-node", "--signature-def", "serving_default", "--against",
                "numpy", "--engine", "numpy", "--other-model", copy).output
    assert "first NaN/Inf: " in text and "(op Rsqrt): theirs has 8 NaN and 0 Inf where ours is finite" in text


def test_against_tensorflow_without_it_is_a_usage_error(monkeypatch, tmp_path):
    monkeypatch.setattr("savedmodel.cli.run_commands.import_tensorflow", lambda: None)
    saved = tmp_path / "inputs.npz"
    result = _run("compare", KERAS_CNN, "--per-node", "--save-inputs", saved)
    assert result.exit_code == 2
    assert "needs TensorFlow, which is not installed" in result.output
    assert not saved.exists()  # refused before any work


def test_against_tensorflow_when_it_cannot_be_imported():
    """TensorFlow made unimportable in a fresh process, as on an installation without it."""
    block = ("import sys; sys.modules['tensorflow'] = None; sys.argv[0] = 'savedmodel'; "
             "from savedmodel.cli import main; main()")
    done = subprocess.run([sys.executable, "-c", block, "compare", str(KERAS_CNN), "--per-node"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "needs TensorFlow, which is not installed" in done.stderr and done.stdout == ""


def test_other_model_needs_per_node():
    result = _run("compare", KERAS_CNN, "--other-model", KERAS_CNN, "--against", "numpy")
    assert result.exit_code == 2 and "--per-node" in result.output


def test_tensorflow_1_control_flow_is_refused():
    frozen = KERAS_CNN.parents[2] / "frozen" / "tf1_rnn.pb"
    result = _run("compare", frozen, "--per-node", "--against", "numpy", "--engine", "numpy")
    assert result.exit_code == 1
    assert "uses TensorFlow 1 control flow" in result.output and "Traceback" not in result.output


def test_graph_files_compare_node_by_node():
    frozen = KERAS_CNN.parents[2] / "frozen" / "keras_cnn.pb"
    result = _per_node(frozen, against="numpy")
    assert result.exit_code == 0, result.output
    (entry,) = _json(result.output)["signatures"]
    assert entry["compared"] > 10


def test_saved_inputs_replay_exactly(tmp_path):
    first, second = tmp_path / "first.npz", tmp_path / "second.npz"
    result = _run("compare", KERAS_CNN, "--against", "numpy", "--engine", "numpy", "--seed", "3",
                  "--save-inputs", first)
    assert result.exit_code == 0, result.output
    saved = dict(np.load(first))
    model = load(KERAS_CNN, engine="numpy")
    assert sorted(saved) == sorted(f"{name}/image" for name in model.signatures)
    expected = random_feeds(model.signatures["serving_default"], 2, 3)["image"]
    np.testing.assert_array_equal(saved["serving_default/image"], expected)
    # loaded inputs win over random ones (another seed), and are what a second save writes
    result = _run("compare", KERAS_CNN, "--per-node", "--against", "numpy", "--engine", "numpy",
                  "--seed", "4", "--load-inputs", first, "--save-inputs", second)
    assert result.exit_code == 0, result.output
    again = dict(np.load(second))
    assert again.keys() == saved.keys()
    for key in saved:
        np.testing.assert_array_equal(again[key], saved[key])


def test_bare_input_names_apply_to_every_signature_and_given_inputs_win(tmp_path):
    bare, out = tmp_path / "bare.npz", tmp_path / "out.npz"
    image = np.full((1, 28, 28, 1), 0.25, np.float32)
    np.savez(bare, image=image)
    result = _run("compare", KERAS_CNN, "--against", "numpy", "--engine", "numpy", "--load-inputs", bare,
                  "--input-exprs", "image=" + repr(np.zeros((1, 28, 28, 1)).tolist()),
                  "--signature-def", "serve", "--save-inputs", out)
    assert result.exit_code == 0, result.output
    np.testing.assert_array_equal(np.load(out)["serve/image"], np.zeros((1, 28, 28, 1), np.float32))
    result = _run("compare", KERAS_CNN, "--against", "numpy", "--engine", "numpy", "--load-inputs", bare,
                  "--save-inputs", out)
    assert result.exit_code == 0, result.output
    assert all(np.array_equal(value, image) for value in np.load(out).values())


def test_save_inputs_into_a_missing_directory_is_one_line(tmp_path):
    target = tmp_path / "missing" / "inputs.npz"
    result = _run("compare", KERAS_CNN, "--against", "numpy", "--save-inputs", target)
    assert result.exit_code == 1 and f"no directory {str(target.parent)!r}" in result.output
    assert len(result.output.strip().splitlines()) == 1 and not target.parent.exists()


def test_load_inputs_that_are_not_npz_is_one_line(tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    result = _run("compare", KERAS_CNN, "--against", "numpy", "--load-inputs", bad)
    assert result.exit_code == 1 and "is not an .npz file" in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.tensorflow
def test_agrees_with_tensorflow_node_by_node(tf):
    result = _per_node(KERAS_CNN, "--atol", "1e-5", "--rtol", "1e-4", against="tensorflow")
    assert result.exit_code == 0, result.output
    (entry,) = _json(result.output)["signatures"]
    assert entry["compared"] > 30 and entry["diverging"] == []


@pytest.mark.tensorflow
def test_finds_a_changed_weight_against_tensorflow(tf, tmp_path):
    copy = _changed_copy(tmp_path, SECOND_CONV_KERNEL, _perturbed)
    result = _per_node(KERAS_CNN, "--other-model", copy, "--atol", "1e-5", "--rtol", "1e-4",
                       against="tensorflow")
    assert result.exit_code == 1, result.output
    _check_found_at_second_conv(_json(result.output))


def test_tensorflow_1_references_are_not_exposed():
    """A ref variable's output is a reference, not a value: what reads it is compared."""
    result = _per_node(DATA / "models" / "tf1_ref")
    assert result.exit_code == 0, result.output
    (entry,) = _json(result.output)["signatures"]
    assert entry["compared"] > 0


@pytest.mark.tensorflow
@pytest.mark.parametrize("model", ["keras_string_lookup", "tf1_tables"])
def test_strings_and_tables_agree_with_tensorflow(tf, model):
    """Strings come back from a TensorFlow session as bytes; a TensorFlow 1 export's tables
    are initialized (from its asset copies) as TensorFlow's TensorFlow 2 loader and ours do."""
    result = _per_node(DATA / "models" / model, against="tensorflow")
    assert result.exit_code == 0, result.output
    (entry,) = _json(result.output)["signatures"]
    assert entry["compared"] > 0 and entry["diverging"] == []
