"""Every signature of every reference SavedModel gives TensorFlow's outputs on our runtime."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import EXTRA_MODELS, SAVEDMODELS
from savedmodel.runtime import load
from savedmodel.runtime.saved_model_file import read_saved_model

INIT_OP = "__saved_model_init_op"


ALL_MODELS = SAVEDMODELS + EXTRA_MODELS
RECORDED_AS = {("seeds", "serving_default"): "dense", ("keras_mlp", "serve"): "serving_default",
               ("keras_cnn", "serve"): "serving_default"}
"""The reference corpus records one signature of each of these pairs; both wrap the same function
(test_unrecorded_signatures_wrap_the_recorded_function checks it), so they share the record."""


def _io(model_dir):
    return dict(np.load(model_dir.parent / f"{model_dir.name}.io.npz"))


def _recorded(model_dir) -> set[str]:
    return {key.split("/")[1] for key in _io(model_dir)}


def _signature_cases():
    cases = []
    for model_dir in ALL_MODELS:
        signatures = sorted(_recorded(model_dir) | {s for m, s in RECORDED_AS if m == model_dir.name})
        cases += [pytest.param(model_dir, sig, id=f"{model_dir.name}:{sig}") for sig in signatures]
    return cases


def _feeds_and_expected(model_dir, signature):
    io = _io(model_dir)
    signature = RECORDED_AS.get((model_dir.name, signature), signature)
    feeds = {k.rsplit("/", 1)[1]: v for k, v in io.items() if k.startswith(f"sig/{signature}/in/")}
    expected = {k.rsplit("/", 1)[1]: v for k, v in io.items() if k.startswith(f"sig/{signature}/out/")}
    return feeds, expected


def assert_matches(outputs: dict, expected: dict, where: str) -> None:
    assert sorted(outputs) == sorted(expected), where
    for key, want in expected.items():
        got = outputs[key]
        assert got.dtype == want.dtype and got.shape == want.shape, f"{where}: {key}"
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"{where}: {key}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{where}: {key}")


@pytest.mark.parametrize("model_dir, signature", _signature_cases())
def test_signature_gives_tensorflows_outputs(model_dir, signature):
    """Expected outputs are each signature's first call on a freshly loaded model."""
    feeds, expected = _feeds_and_expected(model_dir, signature)
    outputs = load(model_dir).signatures[signature](**feeds)
    assert_matches(outputs, expected, f"{model_dir.name}:{signature}")


@pytest.mark.parametrize("model_dir", ALL_MODELS, ids=lambda p: p.name)
def test_every_signature_is_covered_by_the_corpus(model_dir):
    aliases = {s for m, s in RECORDED_AS if m == model_dir.name}
    assert set(load(model_dir).signatures) == _recorded(model_dir) | aliases


def _wrapped_function(model_dir, signature: str) -> str:
    meta = read_saved_model(model_dir).meta_graphs[0]
    call = meta.signature_def[signature].outputs
    node_name = next(iter(call.values())).name.split(":")[0]
    wrapper = next(n for n in meta.graph_def.node if n.name == node_name).attr["f"].func.name
    body = next(f for f in meta.graph_def.library.function if f.signature.name == wrapper)
    return next(n.attr["f"].func.name for n in body.node_def if "PartitionedCall" in n.op)


@pytest.mark.parametrize("model_name, signature", sorted(RECORDED_AS))
def test_unrecorded_signatures_wrap_the_recorded_function(model_name, signature):
    model_dir = next(p for p in SAVEDMODELS if p.name == model_name)
    recorded = RECORDED_AS[(model_name, signature)]
    assert _wrapped_function(model_dir, signature) == _wrapped_function(model_dir, recorded)


def test_state_persists_across_calls():
    model = load(next(p for p in SAVEDMODELS if p.name == "seeds"))
    x = np.array([[1.0, 2.0]], np.float32)
    counts = [int(model.signatures["dense"](x=x)["calls"]) for _ in range(3)]
    counts.append(int(model.signatures["serving_default"](x=x)["calls"]))
    assert counts == [1, 2, 3, 4]
    assert int(model.variables["calls"]) == 4


def test_runs_in_a_clean_process_without_tensorflow():
    script = textwrap.dedent("""
        import sys, numpy as np
        from pathlib import Path
        from savedmodel.runtime import load
        for model_dir in map(Path, sys.argv[1:]):
            io = np.load(model_dir.parent / f"{model_dir.name}.io.npz")
            for sig in sorted({k.split("/")[1] for k in io}):
                feeds = {k.rsplit("/", 1)[1]: io[k] for k in io if k.startswith(f"sig/{sig}/in/")}
                out = load(model_dir).signatures[sig](**feeds)
                for k, v in out.items():
                    want = io[f"sig/{sig}/out/{k}"]
                    assert v.dtype == want.dtype, (model_dir.name, sig, k)
                    assert np.allclose(v, want, rtol=1e-5, atol=1e-6), (model_dir.name, sig, k)
        assert "tensorflow" not in sys.modules
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script, *map(str, ALL_MODELS)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


@pytest.mark.parametrize("name", ["tf1_resource", "tf1_ref"])
def test_tensorflow1_variables_are_restored_by_name(name):
    model = load(next(p for p in EXTRA_MODELS if p.name == name))
    assert sorted(model.variables) == ["b", "w"]
    np.testing.assert_array_equal(model.variables["b"], np.array([0.5, -0.25], np.float32))
