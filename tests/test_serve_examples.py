"""Classify and regress on models that really parse their tf.Example inputs, on both engines.

`half_plus_three` parses feature "x" with tf.io.parse_example (ParseExampleV2); `fruit` is a
TensorFlow 1 classifier parsing a dense and a sparse feature with ParseExample (version 1).
Both were written by TensorFlow, which recorded their outputs (tests/data/serving/make_models.py).
Each engine serves them over REST and gRPC; TensorFlow Serving's own client makes the gRPC
calls when it is installed. `engine="auto"` must pick the native engine for both.
"""
from __future__ import annotations

import socket

import numpy as np
import pytest

pytest.importorskip("uvicorn")
pytest.importorskip("starlette")
grpc = pytest.importorskip("grpc")
import httpx  # noqa: E402

from conftest import DATA  # noqa: E402
from serve_helpers import HALF_PLUS_THREE, HALF_PLUS_THREE_IO, running  # noqa: E402

from savedmodel.protos import (classification_pb2, example_pb2, inference_pb2, model_pb2,  # noqa: E402
                               regression_pb2)
from savedmodel.serve.manager import ModelConfig  # noqa: E402
from savedmodel.serve.server import ServerOptions  # noqa: E402

HALF = np.load(HALF_PLUS_THREE_IO)
FRUIT = DATA / "serving" / "fruit"
FRUIT_IO = np.load(DATA / "serving" / "fruit.io.npz")
REGRESS, CLASSIFY = "tensorflow/serving/regress", "tensorflow/serving/classify"
PREDICTION = "/tensorflow.serving.PredictionService/"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module", params=["numpy", "auto"])
def server(request):
    """(REST client, gRPC channel, manager, engine) of a server on one engine."""
    models = [ModelConfig("half_plus_three", HALF_PLUS_THREE), ModelConfig("fruit", FRUIT)]
    options = ServerOptions(models, port=_free_port(), host="127.0.0.1", poll_seconds=0, engine=request.param)
    with running(options) as (url, manager), httpx.Client(base_url=url) as client:
        channel = grpc.insecure_channel(f"127.0.0.1:{options.port}")
        yield client, channel, manager, request.param
        channel.close()


def _call(channel, method: str, request, response_type):
    call = channel.unary_unary(PREDICTION + method, request_serializer=lambda m: m.SerializeToString(),
                               response_deserializer=response_type.FromString)
    return call(request, timeout=60)


def _examples(io, signature: str) -> list:
    return [example_pb2.Example.FromString(s) for s in io[f"sig/{signature}/in/inputs"]]


def _input(examples) -> inference_pb2.MultiInferenceRequest:
    request = inference_pb2.MultiInferenceRequest()
    request.input.example_list.examples.extend(examples)
    return request


def _scores(classifications) -> list:
    return [[c.score for c in row.classes] for row in classifications]


def _labels(classifications) -> list:
    return [[c.label for c in row.classes] for row in classifications]


def _recorded_labels(io, signature: str) -> list:
    return [[b.decode() for b in row] for row in io[f"sig/{signature}/out/classes"]]


def test_auto_picks_the_native_engine(server):
    _, _, manager, engine = server
    engines = {getattr(manager.resolve(name).model, "engine", "numpy") for name in ("half_plus_three", "fruit")}
    assert engines <= {"numpy", "native"} and len(engines) == 1
    if engine == "auto":
        assert engines == {"native"}


def test_rest_regress_as_documented(server):
    client, _, _, _ = server
    body = {"signature_name": REGRESS, "examples": [{"x": 1.0}, {"x": 2.0}, {"x": 5.0, "tag": "seaside"}]}
    response = client.post("/v1/models/half_plus_three:regress", json=body)
    assert response.status_code == 200, response.text
    np.testing.assert_allclose(response.json()["results"], HALF[f"sig/{REGRESS}/out/outputs"].ravel(), rtol=1e-6)


def test_rest_classify(server):
    client, _, _, _ = server
    body = {"signature_name": CLASSIFY, "examples": [{"x": 1.0}, {"x": 2.0}, {"x": 5.0, "tag": "seaside"}]}
    results = client.post("/v1/models/half_plus_three:classify", json=body).json()["results"]
    assert [[label for label, _ in row] for row in results] == _recorded_labels(HALF, CLASSIFY)
    np.testing.assert_allclose([[s for _, s in row] for row in results], HALF[f"sig/{CLASSIFY}/out/scores"], rtol=1e-6)


def test_rest_classify_with_a_sparse_feature_and_defaults(server):
    """fruit: "weight" defaults to 0 when missing; "tags" is a variable-length (sparse) list."""
    client, _, _, _ = server
    body = {"examples": [{"weight": 4.0, "tags": "round"}, {"weight": 1.0}, {"tags": ["green", "long"]}]}
    results = client.post("/v1/models/fruit:classify", json=body).json()["results"]
    assert [[label for label, _ in row] for row in results] == _recorded_labels(FRUIT_IO, "serving_default")
    np.testing.assert_allclose([[s for _, s in row] for row in results],
                               FRUIT_IO["sig/serving_default/out/scores"], rtol=1e-6)


@pytest.mark.parametrize("model, signature, example, key", [
    ("half_plus_three", REGRESS, {"x": "seaside"}, "x"),
    ("half_plus_three", CLASSIFY, {"x": 3}, "x"),
    ("half_plus_three", REGRESS, {"y": 1.0}, "x"),
    ("fruit", "serving_default", {"tags": [1.5]}, "tags"),
])
def test_rest_example_with_a_wrong_or_missing_feature_is_a_400_naming_the_key(server, model, signature,
                                                                               example, key):
    client, _, _, _ = server
    method = "regress" if signature == REGRESS else "classify"
    response = client.post(f"/v1/models/{model}:{method}", json={"signature_name": signature, "examples": [example]})
    assert response.status_code == 400
    error = response.json()["error"]
    assert f"Key: {key}," in error or f"Feature: {key} " in error, error
    assert client.post(f"/v1/models/{model}:{method}",
                       json={"signature_name": signature, "examples": [{"x": 1.0, "weight": 1.0}]}).status_code == 200


def test_grpc_regress_classify_and_multi_inference(server):
    _, channel, _, _ = server
    examples = _examples(HALF, REGRESS)
    regress = regression_pb2.RegressionRequest(model_spec={"name": "half_plus_three", "signature_name": REGRESS})
    regress.input.example_list.examples.extend(examples)
    regressions = _call(channel, "Regress", regress, regression_pb2.RegressionResponse).result.regressions
    np.testing.assert_allclose([r.value for r in regressions], HALF[f"sig/{REGRESS}/out/outputs"].ravel(), rtol=1e-6)
    classify = classification_pb2.ClassificationRequest(model_spec={"name": "fruit"})
    classify.input.example_list.examples.extend(_examples(FRUIT_IO, "serving_default"))
    result = _call(channel, "Classify", classify, classification_pb2.ClassificationResponse).result
    assert _labels(result.classifications) == _recorded_labels(FRUIT_IO, "serving_default")
    np.testing.assert_allclose(_scores(result.classifications), FRUIT_IO["sig/serving_default/out/scores"], rtol=1e-6)
    multi = _input(examples)
    for signature in (REGRESS, CLASSIFY):
        multi.tasks.add(model_spec={"name": "half_plus_three", "signature_name": signature}, method_name=signature)
    regression, classification = _call(channel, "MultiInference", multi, inference_pb2.MultiInferenceResponse).results
    np.testing.assert_allclose([r.value for r in regression.regression_result.regressions],
                               HALF[f"sig/{REGRESS}/out/outputs"].ravel(), rtol=1e-6)
    np.testing.assert_allclose(_scores(classification.classification_result.classifications),
                               HALF[f"sig/{CLASSIFY}/out/scores"], rtol=1e-6)


def test_grpc_wrong_feature_type_is_invalid_argument_naming_the_key(server):
    _, channel, _, _ = server
    example = example_pb2.Example()
    example.features.feature["x"].int64_list.value.append(3)
    request = regression_pb2.RegressionRequest(model_spec={"name": "half_plus_three", "signature_name": REGRESS})
    request.input.example_list.examples.append(example)
    with pytest.raises(grpc.RpcError) as raised:
        _call(channel, "Regress", request, regression_pb2.RegressionResponse)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "Key: x," in raised.value.details() and "Data types don't match" in raised.value.details()


def test_tensorflow_serving_client(tf, tf_serving, server):
    """TensorFlow Serving's own Python client: Classify, Regress and MultiInference."""
    from tensorflow_serving.apis import (classification_pb2 as tf_classification, inference_pb2 as tf_inference,
                                         prediction_service_pb2_grpc, regression_pb2 as tf_regression)
    _, channel, _, _ = server
    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)

    def request(request_type, model: str, signature: str, io):
        message = request_type()
        message.model_spec.name, message.model_spec.signature_name = model, signature
        for serialized in io[f"sig/{signature}/in/inputs"]:
            message.input.example_list.examples.add().ParseFromString(serialized)
        return message

    result = stub.Regress(request(tf_regression.RegressionRequest, "half_plus_three", REGRESS, HALF), 60).result
    np.testing.assert_allclose([r.value for r in result.regressions], HALF[f"sig/{REGRESS}/out/outputs"].ravel(),
                               rtol=1e-6)
    for model, signature, io in (("half_plus_three", CLASSIFY, HALF), ("fruit", "serving_default", FRUIT_IO)):
        result = stub.Classify(request(tf_classification.ClassificationRequest, model, signature, io), 60).result
        assert _labels(result.classifications) == _recorded_labels(io, signature)
        np.testing.assert_allclose(_scores(result.classifications), io[f"sig/{signature}/out/scores"], rtol=1e-6)
    multi = tf_inference.MultiInferenceRequest()
    multi.input.CopyFrom(request(tf_regression.RegressionRequest, "half_plus_three", REGRESS, HALF).input)
    for signature in (REGRESS, CLASSIFY):
        multi.tasks.add(model_spec={"name": "half_plus_three", "signature_name": signature}, method_name=signature)
    regression, classification = stub.MultiInference(multi, 60).results
    np.testing.assert_allclose([r.value for r in regression.regression_result.regressions],
                               HALF[f"sig/{REGRESS}/out/outputs"].ravel(), rtol=1e-6)
    np.testing.assert_allclose(_scores(classification.classification_result.classifications),
                               HALF[f"sig/{CLASSIFY}/out/scores"], rtol=1e-6)


def test_model_spec_names_the_served_version(server):
    _, channel, _, _ = server
    request = classification_pb2.ClassificationRequest(model_spec=model_pb2.ModelSpec(name="fruit"))
    request.input.example_list.examples.extend(_examples(FRUIT_IO, "serving_default"))
    response = _call(channel, "Classify", request, classification_pb2.ClassificationResponse)
    assert (response.model_spec.name, response.model_spec.version.value) == ("fruit", 1)
