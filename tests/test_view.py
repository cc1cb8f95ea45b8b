"""`savedmodel view` without a browser: the page is self-contained, its document names weights
after their variables with TensorFlow's values, labels edges with the signature's shapes, and
lays boxes out without overlaps; the command writes the file atomically and reports bad input.
(tests/test_view_browser.py opens the pages in Chromium.)"""
from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import DATA, EXTRA_MODELS, GRAPHS, REFERENCE, SAVEDMODELS
from savedmodel.cli import main
from savedmodel.model_summary import summarize
from savedmodel.runtime.saved_model_file import read_saved_model
from savedmodel.views.viewer_page import render_page, view_model

MODELS = {
    "keras_cnn": REFERENCE / "savedmodels" / "keras_cnn",
    "attention": DATA / "models" / "attention",
    "lstm_stacked": DATA / "models" / "lstm_stacked",
}
CORPUS = SAVEDMODELS + EXTRA_MODELS + sorted((DATA / "frozen").glob("*.pb")) + sorted(
    p for p in (DATA / "tf1").iterdir() if p.suffix in (".pb", ".pbtxt"))
"""Every TensorFlow-written model the tests hold: SavedModels (TensorFlow 1 and 2, Keras) and
GraphDef files (frozen Keras models, TensorFlow 1 control flow)."""
DATA_ELEMENT = re.compile(r'<script type="application/json" id="model-data">(.*?)</script>', re.S)


def _document(page: str) -> dict:
    return json.loads(DATA_ELEMENT.search(page).group(1))


@pytest.fixture(scope="module", params=sorted(MODELS))
def model(request):
    path = MODELS[request.param]
    page = view_model(path)
    return path, page, _document(page)


def test_the_page_loads_nothing_from_elsewhere(model):
    _, page, _ = model
    assert not re.search(r"<(link|img|iframe)\b|<script[^>]*\bsrc=|@import|url\(\s*['\"]?(https?:|//)", page)
    # the only address is the SVG namespace, which browsers never fetch
    assert set(re.findall(r"https?://[^\s\"'<>)]+", page)) == {"http://www.w3.org/2000/svg"}


def test_edges_carry_the_signature_shapes(model):
    path, _, document = model
    signature = read_saved_model(path).meta_graphs[0].signature_def["serving_default"]
    declared = {key: [None if d.size == -1 else d.size for d in info.tensor_shape.dim]
                for key, info in signature.outputs.items()}
    labels = {_edge_label(document, i) for i, n in enumerate(document["nodes"]) if n["kind"] == "output"}
    assert labels == {"\u00d7".join("?" if d is None else str(d) for d in shape) for shape in declared.values()}
    inputs = [n for n in document["nodes"] if n["kind"] == "input"]
    assert {n["outputs"][0]["shape"] for n in inputs} == {
        "[" + ",".join("?" if d.size == -1 else str(d.size) for d in info.tensor_shape.dim) + "]"
        for info in signature.inputs.values()}


def _edge_label(document: dict, target: int) -> str:
    """The label of the edge ending at the top of box `target` (a top-level node)."""
    item = next(i for i in document["items"] if i.get("node") == target)
    top = (item["x"], item["y"])
    ends = [e for e in document["edges"] if abs(e["points"][-1][1] - top[1]) < 1e-6
            and top[0] <= e["points"][-1][0] <= top[0] + item["w"]]
    assert len(ends) == 1
    return ends[0]["label"]


def test_weights_are_named_after_their_variables(model):
    path, _, document = model
    objects = read_saved_model(path).meta_graphs[0].object_graph_def
    names = {n.variable.name for n in objects.nodes if n.HasField("variable")}
    assert document["variables"] and {v["name"] for v in document["variables"]} <= names
    for node in document["nodes"]:
        weights = [document["variables"][v] for v in node["variables"]]
        sources = {i["source"]: i for i in node["inputs"]}
        for weight in weights:
            # the panel lists the weight input under the variable's name, not `unknown_N`
            if weight["name"] in sources:
                assert sources[weight["name"]]["shape"] == weight["shape"]
        assert not any(s.startswith("unknown") for s in sources)


def test_layers_are_described_as_the_summary_command_describes_them(model):
    path, _, document = model
    summary = {layer["name"]: layer for layer in summarize(path)["layers"]}
    for layer in document["layers"]:
        expected = summary[layer["name"]]
        assert (layer["type"], layer["params"], layer["trainable"]) == (
            expected["type"], expected["params"], expected["trainable_params"])
        assert layer["flops"] == (expected["flops"] if expected["flops_known"] else None)
        assert layer["outputs"] == ["?" if shape is None else "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"
                                    for shape in expected["output_shapes"]]
        assert [document["variables"][v]["name"] for v in layer["variables"]] == expected["variables"]


def test_boxes_do_not_overlap(model):
    _, _, document = model
    boxes = []
    for item in document["items"]:
        source = document["layers"][item["layer"]] if "layer" in item else item
        boxes.append((source["x"], source["y"], source["w"], source["h"]))
    assert not any(_overlap(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    for layer in document["layers"]:
        inner = list(layer["positions"].values())
        assert sorted(map(int, layer["positions"])) == sorted(layer["nodes"])
        assert not any(_overlap(a, b) for i, a in enumerate(inner) for b in inner[i + 1:])
        assert all(x + w <= layer["open_w"] and y + h <= layer["open_h"] for x, y, w, h in inner)


def _overlap(a, b) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def test_weight_statistics_and_parameters_equal_tensorflows(model, tf):
    path, _, document = model
    loaded = tf.saved_model.load(str(path))  # owns the variables: keep it alive
    function = loaded.signatures["serving_default"]
    values = {v.name.removesuffix(":0"): v.numpy() for v in function.variables}
    assert {v["name"] for v in document["variables"]} == set(values)
    for variable in document["variables"]:
        value = values[variable["name"]].astype(np.float64)
        assert variable["shape"] == "[" + ",".join(map(str, value.shape)) + "]"
        expected = {"min": value.min(), "max": value.max(), "mean": value.mean(), "std": value.std()}
        for key, number in expected.items():
            assert float(variable["stats"][key]) == pytest.approx(number, rel=1e-5, abs=1e-7), (variable["name"], key)
    assert sum(layer["params"] for layer in document["layers"]) == sum(v.size for v in values.values())


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_every_model_of_the_corpus_has_a_page(path):
    document = _document(view_model(path))
    drawn = set()
    for index, layer in enumerate(document["layers"]):
        assert layer["nodes"] and all(document["nodes"][i]["layer"] == index for i in layer["nodes"])
        drawn |= set(layer["nodes"])
    drawn |= {item["node"] for item in document["items"] if "node" in item}
    assert drawn == set(range(len(document["nodes"])))
    for node in document["nodes"]:
        # wrapper arguments (`unknown`, `unknown_0`, ...) are shown as what they bind
        assert not any(re.search(r"(^|/)unknown(_\d+)?(:\d+)?$", i["source"]) for i in node["inputs"]), node
    for variable in document["variables"]:
        assert "stats" in variable or variable["dtype"] in ("string", "resource"), variable


def test_without_a_checkpoint_the_weights_say_so(tmp_path):
    model = shutil.copytree(MODELS["keras_cnn"], tmp_path / "cnn")
    shutil.rmtree(model / "variables")
    document = _document(view_model(model))
    assert document["variables"] and all(v["error"] == "no checkpoint" and "stats" not in v
                                         for v in document["variables"])


def test_string_weights_have_no_statistics():
    document = _document(view_model(DATA / "models" / "asset_vocab"))
    strings = [v for v in document["variables"] if v["dtype"] == "string"]
    assert strings and all("stats" not in v and v["error"] for v in strings)


def test_names_cannot_end_the_script_element():
    document = _document(view_model(MODELS["keras_cnn"]))
    document["title"] = document["nodes"][0]["name"] = "x</script><script>alert(1)</script>"
    page = render_page(document)
    assert page.count("</script>") == 2
    assert _document(page) == document
    assert "<title>x&lt;/script&gt;" in page


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_the_command_writes_the_page_and_prints_its_size(tmp_path):
    out = tmp_path / "cnn.html"
    result = _run("view", MODELS["keras_cnn"], "--output", out)
    assert result.exit_code == 0, result.output
    size = out.stat().st_size
    assert result.output == f"wrote {out} ({size / 1024:.1f} KiB)\n"
    assert _document(out.read_text())["signature"] == "serving_default"


def test_the_command_views_a_graphdef_file(tmp_path):
    graph = GRAPHS[0]
    out = tmp_path / "graph.html"
    result = _run("view", graph, "-o", out)
    assert result.exit_code == 0, result.output
    document = _document(out.read_text())
    assert document["nodes"] and document["variables"] == []


def test_an_unknown_signature_is_an_error_and_writes_nothing(tmp_path):
    out = tmp_path / "x.html"
    result = _run("view", MODELS["keras_cnn"], "--signature", "nope", "-o", out)
    assert result.exit_code == 1
    assert "no signature 'nope'" in result.output and "serving_default" in result.output
    assert list(tmp_path.iterdir()) == []


def test_a_missing_model_is_an_error(tmp_path):
    result = _run("view", tmp_path / "missing", "-o", tmp_path / "x.html")
    assert result.exit_code == 1 and "missing" in result.output and "Traceback" not in result.output


def test_the_page_is_named_after_the_model_by_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = _run("view", MODELS["attention"], "--tag-set", "serve", "--signature", "serving_default")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("wrote attention.html (")
    assert _document((tmp_path / "attention.html").read_text())["title"] == "attention"


def test_an_unknown_tag_set_is_an_error(tmp_path):
    result = _run("view", MODELS["attention"], "--tag-set", "train", "-o", tmp_path / "x.html")
    assert result.exit_code == 1 and "train" in result.output and "serve" in result.output
    assert list(tmp_path.iterdir()) == []
