"""`savedmodel diff --values`: per-variable differences of two models' weights (before, two
models differing only in weights were reported identical)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from savedmodel.cli import main
from savedmodel.runtime.bundle_writer import write_bundle
from savedmodel.runtime.tensor_bundle import BundleReader

CNN = Path(__file__).parent / "data" / "reference" / "savedmodels" / "keras_cnn"
KERNEL = "variables/6/.ATTRIBUTES/VARIABLE_VALUE"
"""The second convolution's kernel in keras_cnn's checkpoint (float32 [3, 3, 8, 16])."""


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _copy_with(tmp_path: Path, changes: dict) -> Path:
    """A copy of keras_cnn whose checkpoint holds `changes` (key -> function of the value)."""
    copy = tmp_path / "changed"
    shutil.copytree(CNN, copy)
    prefix = copy / "variables" / "variables"
    reader = BundleReader(prefix)
    tensors = {key: reader.read(key) for key in reader.keys()}
    for key, change in changes.items():
        tensors[key] = change(tensors[key])
    for path in (copy / "variables").iterdir():
        path.unlink()
    write_bundle(prefix, tensors)
    return copy


def _perturbed(value: np.ndarray) -> np.ndarray:
    changed = value.copy()
    changed[1, 2, 3, 4] += np.float32(0.25)
    return changed


@pytest.fixture
def perturbed(tmp_path):
    return _copy_with(tmp_path, {KERNEL: _perturbed})


def test_a_changed_weight_is_found_with_its_difference(perturbed):
    result = _run("diff", CNN, perturbed, "--values", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["identical"] is False
    values = {v["key"]: v for v in report["values"]}
    original = BundleReader(CNN / "variables" / "variables").read(KERNEL)
    expected_abs = float(np.max(np.abs(original.astype(np.float64) - _perturbed(original))))
    changed = values.pop(KERNEL)
    assert changed["max_abs"] == pytest.approx(expected_abs)
    assert changed["max_rel"] == pytest.approx(
        expected_abs / abs(float(_perturbed(original)[1, 2, 3, 4])))
    assert changed["equal"] is False and changed["shape"] == [3, 3, 8, 16]
    assert all(v["equal"] and v["max_abs"] == 0 for v in values.values())


def test_without_values_the_same_models_look_identical(perturbed):
    result = _run("diff", CNN, perturbed)
    assert result.output.strip() == "no differences in signatures, ops or variables"


def test_text_names_the_changed_variable(perturbed):
    result = _run("diff", CNN, perturbed, "--values")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    total = len(BundleReader(CNN / "variables" / "variables").keys()) - 1
    assert lines[0] == f"values: 1 of {total} variables differ"
    assert lines[1].startswith(f"values: ~ {KERNEL}: max abs 0.25")


def test_identical_values_say_so():
    result = _run("diff", CNN, CNN, "--values")
    assert result.output.strip() == "no differences in signatures, ops, variables or their values"


def test_nan_against_nan_is_equal_and_nan_against_a_number_is_not(tmp_path):
    def with_nan(value):
        changed = value.copy()
        changed[0] = np.nan
        return changed
    left = _copy_with(tmp_path / "l", {"variables/1/.ATTRIBUTES/VARIABLE_VALUE": with_nan})
    right = _copy_with(tmp_path / "r", {"variables/1/.ATTRIBUTES/VARIABLE_VALUE": with_nan})
    same = json.loads(_run("diff", left, right, "--values", "--json").output)
    assert same["identical"] is True
    differ = json.loads(_run("diff", CNN, right, "--values", "--json").output)
    (bias,) = [v for v in differ["values"] if not v["equal"]]
    assert bias["max_abs"] == "nan" and bias["equal"] is False


def test_a_changed_shape_is_a_variable_change_not_a_value(tmp_path):
    reshaped = _copy_with(tmp_path, {KERNEL: lambda v: v.reshape(9, 8, 16)})
    report = json.loads(_run("diff", CNN, reshaped, "--values", "--json").output)
    (changed,) = report["meta_graphs"][0]["variables"]["changed"]
    assert changed["name"] == KERNEL
    assert KERNEL not in {v["key"] for v in report["values"]}


def test_graph_files_have_no_variables_to_compare():
    frozen = Path(__file__).parent / "data" / "frozen" / "keras_cnn.pb"
    report = json.loads(_run("diff", frozen, frozen, "--values", "--json").output)
    assert report["values"] == [] and report["identical"] is True
