"""GraphDef files (`.pb`, `.pbtxt`): `runtime.load_graph`, `runtime.load` on such a file, and every
command of `savedmodel` that takes a SavedModel taking one instead."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from google.protobuf import text_format

from conftest import DATA
from savedmodel import compare as compare_module
from savedmodel.cli import main
from savedmodel.runtime import load, load_graph, native
from savedmodel.runtime.errors import FileFormatError
from savedmodel.runtime.graph_file import read_graph
from test_runtime_corpus import assert_matches

MLP = DATA / "frozen" / "keras_mlp.pb"
COND = DATA / "tf1" / "cond_basic.pbtxt"
RNN = DATA / "frozen" / "tf1_rnn.pb"


def _io(path):
    io = np.load(path.with_suffix(".io.npz"))
    return ({k[3:]: io[k] for k in io.files if k.startswith("in/")},
            {k[4:]: io[k] for k in io.files if k.startswith("out/")})


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _ok(*args) -> str:
    result = _run(*args)
    assert result.exit_code == 0, result.output
    return result.output


def test_signature_takes_the_placeholders_and_gives_the_nodes_nothing_reads():
    model = load_graph(RNN, engine="numpy")
    signature = model.signatures["serving_default"]
    assert list(model.signatures) == ["serving_default"]
    assert {k: (s.dtype, s.shape) for k, s in signature.inputs.items()} == {
        "n": ("DT_INT32", ()), "x": ("DT_FLOAT", (2, 5, 3))}
    assert sorted(signature.outputs) == ["gru_outputs", "gru_state", "nested_total"]


@pytest.mark.skipif(not native.available(), reason="the native engine is not built in this installation")
def test_both_engines_present_the_same_signature_of_a_frozen_graph():
    ours, theirs = load_graph(MLP, engine="numpy"), load_graph(MLP, engine="native")
    assert theirs.engine == "native" and load(MLP).engine == "native"
    for a, b in zip(ours.signatures.values(), theirs.signatures.values()):
        assert (a.name, a.inputs, a.outputs) == (b.name, b.inputs, b.outputs)
    feeds, expected = _io(MLP)
    assert_matches(ours.signatures["serving_default"](**feeds), expected, MLP.name)


def test_a_text_graph_runs_on_the_numpy_engine(tmp_path):
    text = tmp_path / "mlp.pbtxt"
    text.write_text(text_format.MessageToString(read_graph(MLP)))
    model = load(text)
    assert model.engine == "numpy" and "binary GraphDef" in model.engine_reason
    feeds, expected = _io(MLP)
    assert_matches(model.signatures["serving_default"](**feeds), expected, text.name)


def test_inputs_and_outputs_can_be_chosen():
    model = load_graph(DATA / "tf1" / "control_trigger.pbtxt", inputs=["x", "p"], outputs=["Switch:1", "out:0"])
    signature = model.signatures["serving_default"]
    assert sorted(signature.outputs) == ["Switch:1", "out"]
    assert signature.outputs["Switch:1"].dtype == "DT_INVALID"  # only first outputs declare theirs
    result = signature(x=np.float32(2.0), p=np.bool_(True))
    assert (result["Switch:1"], result["out"]) == (2.0, 6.0)


def test_feeding_an_inner_tensor_skips_what_computes_it():
    model = load_graph(DATA / "tf1" / "while_counter.pb", inputs=["n", "while/Exit_1"], outputs=["total"])
    assert model.signatures["serving_default"](n=np.int32(0), **{"while/Exit_1": np.int32(9)})["total"] == 9


@pytest.mark.parametrize("inputs, outputs, message", [
    (None, ["nope"], "output 'nope' names no node"),
    (["y"], None, None),
    (["ghost"], None, "input 'ghost' names no node"),
])
def test_unknown_or_untyped_inputs_and_outputs_are_errors_naming_them(inputs, outputs, message):
    if message is None:  # y is an output node, fed: then it is its own output, which is fine
        assert load_graph(COND, inputs=inputs, outputs=["y"]).signatures["serving_default"](
            y=np.ones(2, np.float32))["y"].tolist() == [1, 1]
        return
    with pytest.raises(FileFormatError, match=message) as caught:
        load_graph(COND, inputs=inputs, outputs=outputs)
    assert str(COND) in str(caught.value)


@pytest.mark.parametrize("suffix, content", [(".pb", b"\x0a\xff\xff\xff\xff\x0f"), (".pbtxt", b"node { nme: 1 }")])
def test_a_damaged_graph_file_is_an_error_naming_it(tmp_path, suffix, content):
    path = tmp_path / f"bad{suffix}"
    path.write_bytes(content)
    with pytest.raises(FileFormatError, match="bad") as caught:
        load(path, engine="numpy")
    assert str(path) in str(caught.value)


def test_the_native_engine_takes_binary_files_with_their_default_signature_only():
    with pytest.raises(ValueError, match="binary GraphDef files with their default signature"):
        load_graph(COND, engine="native")


# The command line


@pytest.mark.parametrize("path", [COND, RNN, MLP], ids=lambda p: p.name)
def test_inspection_commands_take_a_graph_file(path):
    assert _ok("show", path).splitlines()[1] == "'serve'"
    assert "SignatureDef key: \"serving_default\"" in _ok("show", path, "--tag-set", "serve")
    text = _ok("show", path, "--all")
    assert "signature_def['serving_default']:" in text
    shown = json.loads(_ok("show", path, "--json"))
    assert shown["meta_graphs"][0]["signatures"][0]["name"] == "serving_default"
    assert "0 unsupported" in _ok("ops", path)
    assert _ok("diff", path, path).strip() == "no differences in signatures, ops or variables"
    assert "signature serving_default(" in _ok("graph", path)
    assert "node {" in _ok("graph", path, "--format", "pbtxt")


def test_run_and_compare_take_a_graph_file(tmp_path):
    out = _ok("run", COND, "--input-exprs", "x=[1.0, 2.0];p=False")
    assert "Result for output key y:\narray([0., 1.], dtype=float32)" in out
    assert "Result for output key z:\narray(7., dtype=float32)" in out
    feeds, expected = _io(RNN)
    np.savez(tmp_path / "in.npz", **feeds)
    spec = ";".join(f"{k}={tmp_path / 'in.npz'}[{k}]" for k in feeds)
    _ok("run", RNN, "--inputs", spec, "--outdir", tmp_path / "out")
    for key, value in expected.items():
        np.testing.assert_allclose(np.load(tmp_path / "out" / f"{key}.npy"), value, rtol=1e-5, atol=1e-6)
    output = _ok("compare", RNN, "--against", "numpy", "--engine", "numpy", "--json")
    report = json.loads(output[output.index("{"):])
    assert [r["within"] for r in report["signatures"][0]["outputs"]] == [True] * 3


def test_compare_runs_a_graph_file_on_tensorflow_as_a_session():
    tf = compare_module.import_tensorflow()
    if tf is None:
        pytest.skip("TensorFlow is not installed (live comparison)")
    feeds, expected = _io(RNN)
    assert_matches(compare_module.run_tensorflow(tf, RNN, "serving_default", feeds), expected, RNN.name)
