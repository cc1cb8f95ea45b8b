"""TensorFlow Serving's REST API, against a real server on a loopback port: the curl requests of
its documentation get the documented response shapes, with TensorFlow's outputs (recorded in
tests/data/serving/half_plus_three.io.npz and tests/data/reference/savedmodels/*.io.npz)."""
from __future__ import annotations

import base64
import json
import shlex
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("uvicorn")
pytest.importorskip("starlette")
import httpx  # noqa: E402

from conftest import REFERENCE  # noqa: E402
from serve_helpers import HALF_PLUS_THREE, HALF_PLUS_THREE_IO, KERAS_MLP, model_base, running  # noqa: E402

from savedmodel.runtime.saved_model_file import find_meta_graph, read_saved_model  # noqa: E402
from savedmodel.serve.manager import ModelConfig  # noqa: E402
from savedmodel.serve.server import ServerOptions  # noqa: E402

IO = np.load(HALF_PLUS_THREE_IO)
ROOT = Path(__file__).resolve().parent.parent
MLP_IO = np.load(REFERENCE / "savedmodels" / "keras_mlp.io.npz")
SEEDS_IO = np.load(REFERENCE / "savedmodels" / "seeds.io.npz")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    models = [ModelConfig("half_plus_three", HALF_PLUS_THREE),
              ModelConfig("mlp", model_base(root, "mlp", {1: KERAS_MLP}), labels={"stable": 1}),
              ModelConfig("seeds", model_base(root, "seeds", {1: REFERENCE / "savedmodels" / "seeds"}))]
    with running(ServerOptions(models, port=0, poll_seconds=0)) as (url, _), httpx.Client(base_url=url) as client:
        yield client


def test_model_status_as_documented(server):
    """`curl http://localhost:8501/v1/models/half_plus_three` (the docs' example)."""
    response = server.get("/v1/models/half_plus_three")
    assert response.status_code == 200
    assert response.json() == {"model_version_status": [
        {"version": "123", "state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}}]}
    assert server.get("/v1/models/half_plus_three/versions/123").json() == response.json()
    assert server.get("/v1/models/mlp/labels/stable").json()["model_version_status"][0]["version"] == "1"


def test_predict_row_format_as_documented(server):
    """`curl -d '{"instances": [1.0,2.0,5.0]}' -X POST .../half_plus_three:predict`."""
    response = server.post("/v1/models/half_plus_three:predict", content='{"instances": [1.0,2.0,5.0]}')
    assert response.status_code == 200
    assert list(response.json()) == ["predictions"]
    np.testing.assert_array_equal(response.json()["predictions"], IO["sig/serving_default/out/y"])
    assert IO["sig/serving_default/in/x"].tolist() == [1.0, 2.0, 5.0]


def test_predict_columnar_format_and_versions(server):
    features = MLP_IO["sig/serving_default/in/features"]
    expected = MLP_IO["sig/serving_default/out/output_0"]
    for path in ("/v1/models/mlp:predict", "/v1/models/mlp/versions/1:predict", "/v1/models/mlp/labels/stable:predict"):
        outputs = server.post(path, json={"inputs": {"features": features.tolist()}}).json()["outputs"]
        np.testing.assert_allclose(outputs, expected, rtol=1e-5, atol=1e-6)
    rows = server.post("/v1/models/mlp:predict", json={"instances": features.tolist()}).json()["predictions"]
    np.testing.assert_allclose(rows, expected, rtol=1e-5, atol=1e-6)


def test_several_outputs_in_both_formats(server):
    x = IO["sig/two_outputs/in/x"].tolist()
    body = {"signature_name": "two_outputs", "instances": [{"x": v} for v in x]}
    predictions = server.post("/v1/models/half_plus_three:predict", json=body).json()["predictions"]
    assert [sorted(p) for p in predictions] == [["doubled", "y"]] * 3
    np.testing.assert_array_equal([p["y"] for p in predictions], IO["sig/two_outputs/out/y"])
    np.testing.assert_array_equal([p["doubled"] for p in predictions], IO["sig/two_outputs/out/doubled"])
    outputs = server.post("/v1/models/half_plus_three:predict",
                          json={"signature_name": "two_outputs", "inputs": {"x": x}}).json()["outputs"]
    np.testing.assert_array_equal(outputs["doubled"], IO["sig/two_outputs/out/doubled"])


def test_inputs_without_a_common_batch_use_the_columnar_format(server):
    body = {"signature_name": "power", "inputs": {"x": SEEDS_IO["sig/power/in/x"].tolist(),
                                                  "n": SEEDS_IO["sig/power/in/n"].tolist()}}
    outputs = server.post("/v1/models/seeds:predict", json=body).json()["outputs"]
    np.testing.assert_array_equal(outputs, SEEDS_IO["sig/power/out/y"])


def test_b64_inputs_and_bytes_outputs(server):
    data = IO["sig/echo_bytes/in/data"].tolist()
    body = {"signature_name": "echo_bytes", "instances": [{"b64": base64.b64encode(d).decode()} for d in data]}
    predictions = server.post("/v1/models/half_plus_three:predict", json=body).json()["predictions"]
    assert [base64.b64decode(p["b64"]) for p in predictions] == IO["sig/echo_bytes/out/data_bytes"].tolist()


def test_nan_and_infinity_tokens(server):
    response = server.post("/v1/models/half_plus_three:predict", content='{"instances": [NaN, Infinity, -Infinity]}')
    assert response.status_code == 200
    assert response.text.replace(" ", "") == '{"predictions":[NaN,Infinity,-Infinity]}'


def test_regress_as_documented(server):
    """`curl -d '{"signature_name": "tensorflow/serving/regress", "examples": [{"x": 1.0}, {"x": 2.0}]}'
    -X POST .../half_plus_three:regress`; a third example shares a context feature."""
    body = {"signature_name": "tensorflow/serving/regress", "context": {"tag": "seaside"},
            "examples": [{"x": 5.0}]}
    documented = {"signature_name": "tensorflow/serving/regress", "examples": [{"x": 1.0}, {"x": 2.0}]}
    results = [server.post("/v1/models/half_plus_three:regress", json=b).json() for b in (documented, body)]
    assert [list(r) for r in results] == [["results"], ["results"]]
    np.testing.assert_array_equal(results[0]["results"] + results[1]["results"],
                                  IO["sig/tensorflow/serving/regress/out/outputs"].ravel())


def test_classify(server):
    body = {"signature_name": "tensorflow/serving/classify", "examples": [{"x": 1.0}, {"x": 2.0}, {"x": 5.0, "tag": "seaside"}]}
    results = server.post("/v1/models/half_plus_three:classify", json=body).json()["results"]
    classes = IO["sig/tensorflow/serving/classify/out/classes"].astype(str).tolist()
    scores = IO["sig/tensorflow/serving/classify/out/scores"]
    assert [[label for label, _ in row] for row in results] == classes
    np.testing.assert_allclose([[score for _, score in row] for row in results], scores, rtol=1e-6)


def test_examples_serialize_as_tensorflow_does():
    from savedmodel.serve.example_json import serialized_examples
    ours = serialized_examples({"context": {"tag": "seaside"}, "examples": [{"x": 5.0}]})
    assert ours == IO["sig/tensorflow/serving/regress/in/inputs"].tolist()[2:]


def test_metadata(server):
    response = server.get("/v1/models/half_plus_three/metadata").json()
    assert response["model_spec"] == {"name": "half_plus_three", "signature_name": "", "version": "123"}
    defs = response["metadata"]["signature_def"]["signature_def"]
    assert sorted(defs) == ["echo_bytes", "serving_default", "tensorflow/serving/classify",
                            "tensorflow/serving/regress", "two_outputs"]
    assert defs["serving_default"]["inputs"]["x"]["dtype"] == "DT_FLOAT"
    assert defs["tensorflow/serving/regress"]["method_name"] == "tensorflow/serving/regress"


def test_metadata_lists_the_init_op_pseudo_signature_as_tensorflow_serving_does(server):
    """TensorFlow 2 SavedModels carry `__saved_model_init_op`; TensorFlow Serving's metadata shows
    it as it is written, default-valued fields included (`defaults` is the map TensorFlow 2.9
    added to SignatureDef)."""
    defs = server.get("/v1/models/mlp/metadata").json()["metadata"]["signature_def"]["signature_def"]
    written = find_meta_graph(read_saved_model(KERAS_MLP), {"serve"}, "").signature_def
    assert sorted(defs) == sorted(written)
    init_op = written["__saved_model_init_op"].outputs["__saved_model_init_op"]
    assert defs["__saved_model_init_op"] == {
        "inputs": {}, "method_name": "", "defaults": {},
        "outputs": {"__saved_model_init_op": {"dtype": "DT_INVALID", "name": init_op.name,
                                              "tensor_shape": {"dim": [], "unknown_rank": True}}}}


def test_metrics_count_requests_per_model_and_signature(server):
    server.post("/v1/models/mlp:predict", json={"instances": MLP_IO["sig/serving_default/in/features"].tolist()})
    page = server.get("/monitoring/prometheus/metrics").text
    assert 'api="predict",model_name="mlp",signature_name="serving_default",status="OK"' in page
    assert "savedmodel_serve_request_latency_seconds_bucket" in page
    assert server.get("/healthz").status_code == 200


def test_errors_are_json_with_tensorflow_servings_http_codes(server):
    """The docs' example: an unknown model is 404 with TensorFlow Serving's message."""
    response = server.post("/v1/models/half:predict", content='{"instances": [1.0,5.0]}')
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"error": "Servable not found for request: Latest(half)"}


BAD_REQUESTS = [
    ("malformed JSON", "/v1/models/mlp:predict", '{"instances": [1, 2', 400, "JSON Parse error"),
    ("not an object", "/v1/models/mlp:predict", "[1, 2]", 400, "must be a JSON object"),
    ("unknown version", "/v1/models/mlp/versions/7:predict", '{"instances": [[1,2,3,4,5,6,7,8]]}', 404,
     "Specific(mlp, 7)"),
    ("unknown label", "/v1/models/mlp/labels/canary:predict", '{"instances": [[1,2,3,4,5,6,7,8]]}', 400,
     "Unrecognized servable version label: canary"),
    ("unknown signature", "/v1/models/mlp:predict", '{"signature_name": "nope", "instances": [[1]]}', 400,
     'Serving signature name: "nope" not found'),
    ("wrong input name", "/v1/models/mlp:predict", '{"inputs": {"feature": [[1,2,3,4,5,6,7,8]]}}', 400,
     "Missing but required: {features}"),
    ("wrong dtype", "/v1/models/mlp:predict", '{"instances": [["a","b","c","d","e","f","g","h"]]}', 400,
     "expects float32, got a non-numeric value"),
    ("wrong shape", "/v1/models/mlp:predict", '{"instances": [[1,2,3]]}', 400, "expects shape (None, 8)"),
    ("ragged instances", "/v1/models/mlp:predict", '{"instances": [[1,2,3,4,5,6,7,8], [1,2]]}', 400, "ragged"),
    ("numbers nested too deeply", "/v1/models/half_plus_three:predict",
     '{"instances": ' + "[" * 900 + "1.0" + "]" * 900 + "}", 400, "nested too deeply for a tensor"),
    ("strings nested too deeply", "/v1/models/half_plus_three:predict",
     '{"signature_name": "echo_bytes", "instances": ' + "[" * 900 + '"a"' + "]" * 900 + "}", 400,
     "nested too deeply for a tensor"),
    ("JSON nested too deeply", "/v1/models/half_plus_three:predict", "[" * 100_000, 400, "nested too deeply"),
    ("both formats", "/v1/models/mlp:predict", '{"instances": [], "inputs": []}', 400, "not both"),
    ("no batch in row format", "/v1/models/seeds:predict",
     '{"signature_name": "dense", "instances": [[1.0, 2.0]]}', 400, "inconsistent batch size"),
    ("regress on a predict signature", "/v1/models/half_plus_three:regress", '{"examples": [{"x": 1.0}]}', 400,
     "Expected regress signature method_name"),
    ("bad path", "/v1/models/mlp:explain", "{}", 400, "Malformed request"),
]


@pytest.mark.parametrize("what, path, body, status, message", BAD_REQUESTS, ids=[b[0] for b in BAD_REQUESTS])
def test_bad_request_gets_a_clear_error_and_the_server_keeps_serving(server, what, path, body, status, message):
    response = server.post(path, content=body)
    assert response.status_code == status, response.text
    assert message in response.json()["error"]
    assert server.post("/v1/models/half_plus_three:predict", content='{"instances": [1.0]}').json() == {
        "predictions": IO["sig/serving_default/out/y"][:1].tolist()}


def test_unknown_model_status(server):
    response = server.get("/v1/models/nope")
    assert (response.status_code, response.json()) == (404, {"error": "Could not find any versions of model nope"})
    assert json.loads(server.get("/v1/models/mlp/versions/x").text)["error"]


def _readme_curls() -> list[tuple[str, str]]:
    """(curl command, the answer shown) from the README's Serving section."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Serving"):readme.index("\n## ", readme.index("## Serving") + 1)]
    lines = section.replace("\\\n", " ").splitlines()
    return [(line[2:], lines[i + 1]) for i, line in enumerate(lines) if line.startswith("$ curl")]


def test_readme_has_the_documented_curl_requests():
    assert len(_readme_curls()) == 4


@pytest.mark.parametrize("command, shown", _readme_curls(), ids=lambda c: c[:50])
def test_readme_curl_requests_print_what_it_shows(server, command, shown):
    """The README's curl requests (TensorFlow Serving's documented ones) against the server,
    each sent as curl sends it: GET, or POST with the -d body."""
    words = shlex.split(command)
    url = next(w for w in words if w.startswith("http://")).removeprefix("http://localhost:8501")
    body = words[words.index("-d") + 1] if "-d" in words else None
    response = server.get(url) if body is None else server.post(url, content=body)
    assert response.text == shown
