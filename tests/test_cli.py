"""The `savedmodel` command, in process with CliRunner and as the installed console script."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import SAVEDMODELS
from savedmodel.cli import main
from savedmodel.runtime.saved_model_file import read_saved_model, signatures

SEEDS = next(p for p in SAVEDMODELS if p.name == "seeds")


def _script(name: str) -> str | None:
    """A console script of this interpreter's environment, else one on PATH."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name)


def _run(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_show_lists_tag_sets():
    result = _run("show", SEEDS)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == ["The given SavedModel contains the following tag-sets:", "'serve'"]


def test_show_tag_set_lists_every_signature_key():
    result = _run("show", SEEDS, "--tag-set", "serve")
    assert result.exit_code == 0, result.output
    keys = sorted(read_saved_model(SEEDS).meta_graphs[0].signature_def)
    assert result.output.splitlines()[1:] == [f'SignatureDef key: "{k}"' for k in keys]


def test_show_signature_describes_inputs_and_outputs():
    result = _run("show", SEEDS, "--tag_set", "serve", "--signature_def", "dense")
    assert result.exit_code == 0, result.output
    text = result.output
    assert "inputs['x'] tensor_info:\n      dtype: DT_FLOAT\n      shape: (-1, 2)\n      name: dense_x:0" in text
    assert "outputs['calls'] tensor_info:\n      dtype: DT_INT64\n      shape: ()" in text
    assert text.rstrip().endswith("Method name is: tensorflow/serving/predict")


@pytest.mark.parametrize("model", SAVEDMODELS, ids=lambda p: p.name)
def test_show_all_covers_every_signature(model):
    result = _run("show", model, "--all")
    assert result.exit_code == 0, result.output
    for info in signatures(read_saved_model(model).meta_graphs[0]):
        assert f"signature_def['{info.name}']:" in result.output


@pytest.mark.parametrize("args, message", [
    (["show", "/nonexistent/dir"], "/nonexistent/dir: not a directory"),
    (["show", str(SEEDS), "--tag-set", "train"], "no MetaGraphDef with tag-set 'train' (tag-sets present: serve)"),
    (["show", str(SEEDS), "--tag-set", "serve", "--signature-def", "nope"], "no SignatureDef 'nope'"),
])
def test_errors_are_one_line_with_exit_status_1(args, message):
    result = _run(*args)
    assert result.exit_code == 1
    assert message in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_damaged_saved_model_is_a_clear_error(tmp_path):
    (tmp_path / "saved_model.pb").write_bytes(b"\xff\xff\xff garbage")
    result = _run("show", tmp_path)
    assert result.exit_code == 1
    assert "saved_model.pb: not a valid savedmodel.SavedModel message" in result.output


def test_show_matches_saved_model_cli(tf):
    tool = _script("saved_model_cli")
    assert tool, "TensorFlow is installed but saved_model_cli is not on PATH"
    for args in (["--tag_set", "serve", "--signature_def", "power"], []):
        theirs = subprocess.run([tool, "show", "--dir", str(SEEDS), *args], capture_output=True,
                                text=True, check=True).stdout
        assert _run("show", SEEDS, *args).output == theirs


def _unknown_rank_model(tf, export_dir):
    """A tf.Module with an unknown-rank input signature and a method traced twice."""
    class Module(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec(None, tf.float32)])
        def f(self, x):
            return x * 2.0

        @tf.function
        def g(self, x, y):
            return x + y

    module = Module()
    module.g.get_concrete_function(tf.TensorSpec(None, tf.float32), tf.TensorSpec([2, None], tf.float32))
    module.g.get_concrete_function(tf.TensorSpec([3], tf.float32), y=tf.TensorSpec([], tf.float32, name="why"))
    tf.saved_model.save(module, str(export_dir))
    return export_dir


def test_show_all_matches_saved_model_cli(tf, tmp_path):
    """Signatures and concrete functions as saved_model_cli prints them (then ours adds the
    variables and a sorted op list where saved_model_cli prints the op set unordered)."""
    tool = _script("saved_model_cli")
    for model in (SEEDS, _unknown_rank_model(tf, tmp_path / "unknown_rank")):
        theirs = subprocess.run([tool, "show", "--dir", str(model), "--all"], capture_output=True,
                                text=True, check=True).stdout.splitlines()
        theirs = [line for line in theirs if "contains the following ops:" not in line]
        ours = _run("show", model, "--all").output.splitlines()
        end = next(i for i, line in enumerate(ours) if line.startswith(("Variables (", "The MetaGraph")))
        assert "\n".join(ours[:end]).rstrip() == "\n".join(theirs).rstrip()


def test_installed_console_script():
    tool = _script("savedmodel")
    assert tool, "the savedmodel console script is not installed"
    done = subprocess.run([tool, "show", str(SEEDS), "--all"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "signature_def['serving_default']:" in done.stdout
    failed = subprocess.run([tool, "show", "/nonexistent/dir"], capture_output=True, text=True)
    assert failed.returncode == 1 and failed.stdout == ""
    assert failed.stderr.strip() == "Error: /nonexistent/dir: not a directory"
