"""TensorFlow Serving's gRPC API (savedmodel.serve.grpc_api) against a real server on a loopback
port: Predict, GetModelMetadata, GetModelStatus, Classify and Regress with TensorFlow's recorded
outputs (tests/data/reference/savedmodels/*.io.npz, tests/data/serving/half_plus_three.io.npz);
bad requests get a clear status and the server keeps serving; and TensorFlow Serving's own
client (tensorflow-serving-api, unchanged) against `savedmodel serve`."""
from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

grpc = pytest.importorskip("grpc")

from conftest import REFERENCE  # noqa: E402
from serve_helpers import HALF_PLUS_THREE, HALF_PLUS_THREE_IO, KERAS_MLP, model_base  # noqa: E402

from savedmodel.protos import (classification_pb2, example_pb2, get_model_metadata_pb2,  # noqa: E402
                               get_model_status_pb2, inference_pb2, input_pb2, model_management_pb2,
                               predict_pb2, regression_pb2, tensor_pb2, types_pb2)
from savedmodel.runtime.saved_model_file import find_meta_graph, read_saved_model  # noqa: E402
from savedmodel.runtime.tensor_proto import from_numpy, to_numpy  # noqa: E402
from savedmodel.serve import grpc_api  # noqa: E402
from savedmodel.serve.batching import BatchingParameters  # noqa: E402
from savedmodel.serve.errors import ServingError  # noqa: E402
from savedmodel.serve.manager import ModelConfig, ModelManager  # noqa: E402

KERAS_CNN = REFERENCE / "savedmodels" / "keras_cnn"
IO = {"mlp": np.load(REFERENCE / "savedmodels" / "keras_mlp.io.npz"),
      "cnn": np.load(REFERENCE / "savedmodels" / "keras_cnn.io.npz")}
HALF_IO = np.load(HALF_PLUS_THREE_IO)
MAX_MESSAGE_BYTES = 1 << 20
"""Small, so that the oversized-message test sends only a few MB."""

PREDICTION = "/tensorflow.serving.PredictionService/"
MODEL = "/tensorflow.serving.ModelService/"
METHODS = {
    "Predict": (PREDICTION, predict_pb2.PredictResponse),
    "GetModelMetadata": (PREDICTION, get_model_metadata_pb2.GetModelMetadataResponse),
    "Classify": (PREDICTION, classification_pb2.ClassificationResponse),
    "Regress": (PREDICTION, regression_pb2.RegressionResponse),
    "MultiInference": (PREDICTION, inference_pb2.MultiInferenceResponse),
    "GetModelStatus": (MODEL, get_model_status_pb2.GetModelStatusResponse),
    "HandleReloadConfigRequest": (MODEL, model_management_pb2.ReloadConfigResponse),
}


class ServerThread:
    """A ModelManager and the gRPC API on an event loop of their own, in a background thread."""

    def __init__(self, configs: list[ModelConfig], **manager_options):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.manager, self.server = self.run(self._start(configs, manager_options))

    async def _start(self, configs, manager_options):
        manager = ModelManager(configs, **manager_options)
        await manager.poll_once()
        return manager, await grpc_api.start(manager, "127.0.0.1", 0, max_message_bytes=MAX_MESSAGE_BYTES)

    def run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(60)

    def close(self):
        self.run(self.server.stop(5))
        self.manager.close()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)


class Client:
    """Calls by TensorFlow Serving's method paths with our message classes."""

    def __init__(self, port: int):
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")

    def __call__(self, method: str, request, timeout: float = 60):
        service, response_type = METHODS[method]
        call = self.channel.unary_unary(service + method, request_serializer=_serialize,
                                        response_deserializer=response_type.FromString)
        return call(request, timeout=timeout)


def _serialize(request) -> bytes:
    return request if isinstance(request, bytes) else request.SerializeToString()


@contextlib.contextmanager
def serving(configs: list[ModelConfig], **manager_options):
    server = ServerThread(configs, **manager_options)
    client = Client(server.server.port)
    try:
        yield client
    finally:
        client.channel.close()
        server.close()


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    return [ModelConfig("half_plus_three", HALF_PLUS_THREE),
            ModelConfig("mlp", model_base(root, "mlp", {1: KERAS_MLP}), labels={"stable": 1}),
            ModelConfig("cnn", model_base(root, "cnn", {1: KERAS_CNN})),
            ModelConfig("seeds", model_base(root, "seeds", {1: REFERENCE / "savedmodels" / "seeds"}))]


@pytest.fixture(scope="module")
def client(models):
    with serving(models) as client:
        yield client


def predict_request(model: str, inputs: dict, signature: str = "", version: int | None = None,
                    label: str | None = None, output_filter=()) -> predict_pb2.PredictRequest:
    request = predict_pb2.PredictRequest(output_filter=list(output_filter))
    request.model_spec.name = model
    request.model_spec.signature_name = signature
    if version is not None:
        request.model_spec.version.value = version
    if label is not None:
        request.model_spec.version_label = label
    for key, value in inputs.items():
        request.inputs[key].CopyFrom(value if isinstance(value, tensor_pb2.TensorProto) else from_numpy(value))
    return request


def reference_request(model: str, **kwargs) -> tuple[predict_pb2.PredictRequest, np.ndarray]:
    """The recorded inputs of a reference model's serving_default, and TensorFlow's output."""
    io = IO[model]
    inputs = {key.split("/")[-1]: io[key] for key in io if "/in/" in key}
    return predict_request(model, inputs, **kwargs), io["sig/serving_default/out/output_0"]


def examples_request(request_type, model: str, signature: str, examples=None, context=None):
    """A Classify or Regress request; by default the examples TensorFlow's outputs were recorded for."""
    request = request_type()
    request.model_spec.name = model
    request.model_spec.signature_name = signature
    if examples is None:
        examples = [example_pb2.Example.FromString(s) for s in HALF_IO[f"sig/{signature}/in/inputs"]]
    if context is None:
        request.input.example_list.examples.extend(examples)
    else:
        request.input.example_list_with_context.examples.extend(examples)
        request.input.example_list_with_context.context.CopyFrom(context)
    return request


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_predict_gives_tensorflows_outputs(client, model):
    request, expected = reference_request(model)
    response = client("Predict", request)
    assert list(response.outputs) == ["output_0"]
    np.testing.assert_allclose(to_numpy(response.outputs["output_0"]), expected, rtol=1e-5, atol=1e-6)
    assert (response.model_spec.name, response.model_spec.version.value,
            response.model_spec.signature_name) == (model, 1, "serving_default")


def test_predict_by_version_label_and_signature(client):
    request, expected = reference_request("mlp", version=1)
    np.testing.assert_allclose(to_numpy(client("Predict", request).outputs["output_0"]), expected, rtol=1e-5, atol=1e-6)
    request, expected = reference_request("mlp", label="stable", signature="serving_default")
    response = client("Predict", request)
    np.testing.assert_allclose(to_numpy(response.outputs["output_0"]), expected, rtol=1e-5, atol=1e-6)
    assert response.model_spec.version.value == 1


def test_predict_output_filter(client):
    x = HALF_IO["sig/two_outputs/in/x"]
    both = client("Predict", predict_request("half_plus_three", {"x": x}, "two_outputs"))
    assert sorted(both.outputs) == ["doubled", "y"]
    np.testing.assert_array_equal(to_numpy(both.outputs["y"]), HALF_IO["sig/two_outputs/out/y"])
    filtered = client("Predict", predict_request("half_plus_three", {"x": x}, "two_outputs", output_filter=["doubled"]))
    assert list(filtered.outputs) == ["doubled"]
    np.testing.assert_array_equal(to_numpy(filtered.outputs["doubled"]), HALF_IO["sig/two_outputs/out/doubled"])
    assert filtered.model_spec.version.value == 123 and filtered.model_spec.signature_name == "two_outputs"


def test_predict_strings(client):
    data = HALF_IO["sig/echo_bytes/in/data"].astype(object)
    response = client("Predict", predict_request("half_plus_three", {"data": data}, "echo_bytes"))
    assert response.outputs["data_bytes"].dtype == types_pb2.DT_STRING
    assert to_numpy(response.outputs["data_bytes"]).tolist() == HALF_IO["sig/echo_bytes/out/data_bytes"].tolist()


def test_metadata_packs_the_signature_defs_as_tensorflow_serving_does(client):
    request = get_model_metadata_pb2.GetModelMetadataRequest(metadata_field=["signature_def"])
    request.model_spec.name = "half_plus_three"
    response = client("GetModelMetadata", request)
    assert (response.model_spec.name, response.model_spec.version.value) == ("half_plus_three", 123)
    packed = response.metadata["signature_def"]
    assert packed.type_url == "type.googleapis.com/tensorflow.serving.SignatureDefMap"
    signature_map = get_model_metadata_pb2.SignatureDefMap.FromString(packed.value)
    written = find_meta_graph(read_saved_model(HALF_PLUS_THREE / "00000123"), {"serve"}, "").signature_def
    assert dict(signature_map.signature_def) == dict(written)
    assert "tensorflow/serving/classify" in signature_map.signature_def


def test_model_status(client):
    request = get_model_status_pb2.GetModelStatusRequest()
    request.model_spec.name = "mlp"
    (status,) = client("GetModelStatus", request).model_version_status
    assert (status.version, status.state, status.status.error_code, status.status.error_message) == (
        1, get_model_status_pb2.ModelVersionStatus.AVAILABLE, 0, "")
    request.model_spec.version_label = "stable"
    assert [s.version for s in client("GetModelStatus", request).model_version_status] == [1]


def test_classify_gives_tensorflows_results(client):
    signature = "tensorflow/serving/classify"
    response = client("Classify", examples_request(classification_pb2.ClassificationRequest, "half_plus_three",
                                                   signature))
    labels = [[c.label for c in row.classes] for row in response.result.classifications]
    scores = [[c.score for c in row.classes] for row in response.result.classifications]
    assert labels == [[b.decode() for b in row] for row in HALF_IO[f"sig/{signature}/out/classes"]]
    np.testing.assert_allclose(scores, HALF_IO[f"sig/{signature}/out/scores"], rtol=1e-6)
    assert response.model_spec.signature_name == signature and response.model_spec.version.value == 123


def test_regress_gives_tensorflows_results(client):
    signature = "tensorflow/serving/regress"
    response = client("Regress", examples_request(regression_pb2.RegressionRequest, "half_plus_three", signature))
    np.testing.assert_allclose([r.value for r in response.result.regressions],
                               HALF_IO[f"sig/{signature}/out/outputs"].ravel(), rtol=1e-6)


def test_examples_with_context_are_merged(client):
    """The last recorded example is {x: 5.0, tag: "seaside"}: sent as {x: 5.0} with the context
    {tag: "seaside"}, it gives the same result."""
    signature = "tensorflow/serving/regress"
    recorded = example_pb2.Example.FromString(HALF_IO[f"sig/{signature}/in/inputs"][-1])
    context, own = example_pb2.Example(), example_pb2.Example()
    context.features.feature["tag"].CopyFrom(recorded.features.feature["tag"])
    own.features.feature["x"].CopyFrom(recorded.features.feature["x"])
    response = client("Regress", examples_request(regression_pb2.RegressionRequest, "half_plus_three", signature,
                                                  [own], context))
    np.testing.assert_allclose([r.value for r in response.result.regressions],
                               HALF_IO[f"sig/{signature}/out/outputs"].ravel()[-1:], rtol=1e-6)


def multi_inference_request(tasks, method=None) -> inference_pb2.MultiInferenceRequest:
    """Tasks (model, signature) over the examples recorded for the regress signature."""
    request = inference_pb2.MultiInferenceRequest()
    for model, signature in tasks:
        request.tasks.add(model_spec={"name": model, "signature_name": signature},
                          method_name=method or signature)
    examples = HALF_IO["sig/tensorflow/serving/regress/in/inputs"]
    request.input.example_list.examples.extend(example_pb2.Example.FromString(s) for s in examples)
    return request


def test_multi_inference_gives_each_signatures_results(client):
    classify, regress = "tensorflow/serving/classify", "tensorflow/serving/regress"
    assert (HALF_IO[f"sig/{classify}/in/inputs"] == HALF_IO[f"sig/{regress}/in/inputs"]).all()
    response = client("MultiInference", multi_inference_request([("half_plus_three", regress),
                                                                 ("half_plus_three", classify)]))
    regression, classification = response.results
    np.testing.assert_allclose([r.value for r in regression.regression_result.regressions],
                               HALF_IO[f"sig/{regress}/out/outputs"].ravel(), rtol=1e-6)
    np.testing.assert_allclose([[c.score for c in row.classes] for row in classification.classification_result.classifications],
                               HALF_IO[f"sig/{classify}/out/scores"], rtol=1e-6)
    assert [(r.model_spec.signature_name, r.model_spec.version.value) for r in response.results] == [
        (regress, 123), (classify, 123)]


def _bad_requests():
    good, _ = reference_request("mlp")
    features = IO["mlp"]["sig/serving_default/in/features"]

    def edited(edit, request=None):
        request = predict_pb2.PredictRequest.FromString((request or good).SerializeToString())
        edit(request)
        return request

    short_content = from_numpy(features)
    short_content.tensor_content = short_content.tensor_content[:-4]
    unknown_dtype = from_numpy(features)
    unknown_dtype.dtype = 999
    huge_compact = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, float_val=[1.0])
    huge_compact.tensor_shape.dim.add().size = 1 << 40
    huge_compact.tensor_shape.dim.add().size = 8
    no_model_spec = predict_pb2.PredictRequest()
    no_model_spec.inputs["features"].CopyFrom(from_numpy(features))
    metadata = get_model_metadata_pb2.GetModelMetadataRequest()
    metadata.model_spec.name = "mlp"
    status = get_model_status_pb2.GetModelStatusRequest()
    status.model_spec.name = "nope"
    return [
        ("unknown model", "Predict", edited(lambda r: setattr(r.model_spec, "name", "nope")),
         "NOT_FOUND", "Servable not found for request: Latest(nope)"),
        ("unknown version", "Predict", edited(lambda r: r.model_spec.version.__setattr__("value", 7)),
         "NOT_FOUND", "Specific(mlp, 7)"),
        ("unknown label", "Predict", edited(lambda r: setattr(r.model_spec, "version_label", "canary")),
         "INVALID_ARGUMENT", "canary"),
        ("unknown signature", "Predict", edited(lambda r: setattr(r.model_spec, "signature_name", "nope")),
         "INVALID_ARGUMENT", '"nope" not found'),
        ("no model spec", "Predict", no_model_spec, "INVALID_ARGUMENT", "Missing ModelSpec"),
        ("wrong input name", "Predict", predict_request("mlp", {"x": features}), "INVALID_ARGUMENT", "Sent extra: {x}"),
        ("missing input", "Predict", predict_request("mlp", {}), "INVALID_ARGUMENT", "Missing but required: {features}"),
        ("wrong dtype", "Predict", predict_request("mlp", {"features": features.astype(np.int32)}),
         "INVALID_ARGUMENT", "expects float but the TensorProto holds int32"),
        ("dtype not in DataType", "Predict", predict_request("mlp", {"features": unknown_dtype}),
         "INVALID_ARGUMENT", "expects float but the TensorProto holds unknown dtype 999"),
        ("wrong shape", "Predict", predict_request("mlp", {"features": features[:, :5]}), "INVALID_ARGUMENT",
         "features"),
        ("content shorter than the shape", "Predict", predict_request("mlp", {"features": short_content}),
         "INVALID_ARGUMENT", "tensor_content holds 92 bytes, but 24 elements of float32 need 96"),
        ("compact tensor too large", "Predict", predict_request("mlp", {"features": huge_compact}),
         "INVALID_ARGUMENT", f"the server's limit of {MAX_MESSAGE_BYTES} bytes per request tensor"),
        ("unknown output", "Predict", edited(lambda r: r.output_filter.append("nope")), "INVALID_ARGUMENT",
         "output tensor alias not found"),
        ("not a request", "Predict", b"\x0a\xff\xff\xff\xff", "INVALID_ARGUMENT",
         "Could not parse the request as a tensorflow.serving.PredictRequest"),
        ("no metadata field", "GetModelMetadata", metadata, "INVALID_ARGUMENT", "at least one metadata_field"),
        ("unknown metadata field", "GetModelMetadata",
         get_model_metadata_pb2.GetModelMetadataRequest(model_spec=metadata.model_spec, metadata_field=["graph"]),
         "INVALID_ARGUMENT", "Metadata field graph is not supported"),
        ("status of an unknown model", "GetModelStatus", status, "NOT_FOUND", "nope"),
        ("classify with a predict signature", "Classify",
         examples_request(classification_pb2.ClassificationRequest, "half_plus_three", "serving_default",
                          examples=[example_pb2.Example()]), "INVALID_ARGUMENT", "method_name"),
        ("regress without examples", "Regress",
         regression_pb2.RegressionRequest(model_spec={"name": "half_plus_three",
                                                      "signature_name": "tensorflow/serving/regress"}),
         "INVALID_ARGUMENT", "Input is empty"),
        ("oversized message", "Predict", predict_request("mlp", {"features": np.zeros((40000, 8), np.float32)}),
         "RESOURCE_EXHAUSTED", "larger than max"),
        ("multi-inference without tasks", "MultiInference", inference_pb2.MultiInferenceRequest(),
         "INVALID_ARGUMENT", "no tasks"),
        ("multi-inference over two models", "MultiInference", multi_inference_request(
            [("half_plus_three", "tensorflow/serving/regress"), ("mlp", "tensorflow/serving/regress")]),
         "INVALID_ARGUMENT", "same model name and version"),
        ("multi-inference repeating a signature", "MultiInference", multi_inference_request(
            [("half_plus_three", "tensorflow/serving/regress")] * 2),
         "INVALID_ARGUMENT", "Duplicate evaluation of signature: tensorflow/serving/regress"),
        ("multi-inference of a predict method", "MultiInference", multi_inference_request(
            [("half_plus_three", "serving_default")], method="tensorflow/serving/predict"),
         "INVALID_ARGUMENT", "Unsupported signature method_name"),
        ("reload config", "HandleReloadConfigRequest", model_management_pb2.ReloadConfigRequest(), "UNIMPLEMENTED",
         "HandleReloadConfigRequest"),
    ]


BAD_REQUESTS = _bad_requests()


@pytest.mark.parametrize("what, method, request_, code, message", BAD_REQUESTS, ids=[b[0] for b in BAD_REQUESTS])
def test_bad_requests_get_a_clear_status_and_the_server_keeps_serving(client, what, method, request_, code, message):
    with pytest.raises(grpc.RpcError) as raised:
        client(method, request_)
    assert raised.value.code() == grpc.StatusCode[code], raised.value.details()
    assert message in raised.value.details()
    request, expected = reference_request("mlp")
    np.testing.assert_allclose(to_numpy(client("Predict", request).outputs["output_0"]), expected, rtol=1e-5, atol=1e-6)


class _FailingServable:
    name, version = "failing", 1

    def __init__(self, code: str):
        self.code = code

    def signature(self, name):
        raise ServingError(self.code, f"core says {self.code}") if self.code != "BUG" else KeyError("bug")


class _FailingManager:
    def __init__(self, code: str):
        self.code = code

    def resolve(self, name, version=None, label=None):
        return _FailingServable(self.code)


@pytest.mark.parametrize("code", ["RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "DEADLINE_EXCEEDED", "UNAVAILABLE",
                                  "BUG"])
def test_core_errors_become_the_status_code_of_the_same_name(code):
    async def call():
        server = await grpc_api.start(_FailingManager(code), "127.0.0.1", 0)
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                predict = channel.unary_unary(PREDICTION + "Predict")
                with pytest.raises(grpc.aio.AioRpcError) as raised:
                    await predict(predict_request("failing", {}).SerializeToString())
                return raised.value
        finally:
            await server.stop(None)
    error = asyncio.run(call())
    if code == "BUG":
        assert error.code() == grpc.StatusCode.INTERNAL and "Internal error: KeyError" in error.details()
    else:
        assert error.code() == grpc.StatusCode[code] and error.details() == f"core says {code}"


class _SlowServable:
    name, version = "slow", 1

    def signature(self, name):
        return SimpleNamespace(name="serving_default", inputs={})

    async def predict(self, signature_name, inputs, output_filter=None):
        await asyncio.sleep(2)
        return signature_name, {}


class _SlowManager:
    def resolve(self, name, version=None, label=None):
        return _SlowServable()


def test_calls_beyond_the_limit_are_refused_and_abandoned_calls_are_counted_as_cancelled():
    from savedmodel.serve.metrics import Metrics
    metrics = Metrics()

    async def calls():
        server = await grpc_api.start(_SlowManager(), "127.0.0.1", 0, max_concurrent_rpcs=2, metrics=metrics)
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                predict = channel.unary_unary(PREDICTION + "Predict")
                request = predict_request("slow", {}).SerializeToString()
                outcomes = await asyncio.gather(*(predict(request, timeout=0.5) for _ in range(3)),
                                                return_exceptions=True)
                await asyncio.sleep(0.2)  # the server notices the abandoned calls
                return sorted(o.code().name for o in outcomes)
        finally:
            await server.stop(None)
    assert asyncio.run(calls()) == ["DEADLINE_EXCEEDED", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED"]
    page = metrics.page().decode()
    assert 'savedmodel_serve_requests_total{api="predict",model_name="slow",signature_name="serving_default",' \
           'status="CANCELLED"} 2.0' in page


def test_concurrent_requests_are_batched_and_split_back(models):
    """With batching on, concurrent requests of different sizes each get their own rows."""
    request, expected = reference_request("mlp")
    features = IO["mlp"]["sig/serving_default/in/features"]
    with serving(models, batching=BatchingParameters(max_batch_size=16, batch_timeout_micros=20000)) as client:
        calls = [client.channel.unary_unary(PREDICTION + "Predict", request_serializer=_serialize,
                                            response_deserializer=predict_pb2.PredictResponse.FromString).future(
            predict_request("mlp", {"features": features[:1 + i % 3]}), timeout=60) for i in range(24)]
        for i, call in enumerate(calls):
            np.testing.assert_allclose(to_numpy(call.result().outputs["output_0"]), expected[:1 + i % 3],
                                       rtol=1e-5, atol=1e-6)


# TensorFlow Serving's own client, unchanged, against `savedmodel serve` in a subprocess.

def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def cli_server(models, tmp_path_factory):
    """`savedmodel serve --model_config_file ... --port P` with the module's models; yields P."""
    config = tmp_path_factory.mktemp("config") / "models.config"
    config.write_text("model_config_list {\n" + "".join(
        f'  config {{ name: "{m.name}" base_path: "{m.base_path}" model_platform: "tensorflow" }}\n'
        for m in models) + "}\n")
    port = _free_port()
    command = [sys.executable, "-c", "from savedmodel.cli import main; main()", "serve", "--model_config_file", str(config),
               "--port", str(port), "--rest_api_port", str(_free_port()), "--host", "127.0.0.1",
               "--file_system_poll_wait_seconds", "0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        _wait_until_serving(port, process)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()


def _wait_until_serving(port: int, process: subprocess.Popen) -> None:
    client = Client(port)
    request = get_model_status_pb2.GetModelStatusRequest()
    request.model_spec.name = "mlp"
    deadline = time.monotonic() + 120
    try:
        while True:
            if process.poll() is not None:
                raise AssertionError(f"`savedmodel serve` exited: {process.stdout.read().decode()}")
            try:
                client("GetModelStatus", request, timeout=5)
                return
            except grpc.RpcError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
    finally:
        client.channel.close()


@pytest.fixture(scope="module")
def stubs(tf_serving, cli_server):
    from tensorflow_serving.apis import model_service_pb2_grpc, prediction_service_pb2_grpc
    channel = grpc.insecure_channel(f"127.0.0.1:{cli_server}")
    yield prediction_service_pb2_grpc.PredictionServiceStub(channel), model_service_pb2_grpc.ModelServiceStub(channel)
    channel.close()


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_tensorflow_serving_client_predict(tf, stubs, model):
    from tensorflow_serving.apis import predict_pb2 as tf_predict_pb2
    io = IO[model]
    request = tf_predict_pb2.PredictRequest()
    request.model_spec.name = model
    request.model_spec.signature_name = "serving_default"
    for key in (k for k in io if "/in/" in k):
        request.inputs[key.split("/")[-1]].CopyFrom(tf.make_tensor_proto(io[key]))
    response = stubs[0].Predict(request, 60)
    np.testing.assert_allclose(tf.make_ndarray(response.outputs["output_0"]), io["sig/serving_default/out/output_0"],
                               rtol=1e-5, atol=1e-6)
    assert response.model_spec.version.value == 1


SEEDS_IO = np.load(REFERENCE / "savedmodels" / "seeds.io.npz")
SEEDS_SIGNATURES = sorted({key.split("/")[1] for key in SEEDS_IO})


@pytest.mark.parametrize("signature", SEEDS_SIGNATURES)
def test_tensorflow_serving_client_predict_on_every_seeds_signature(tf, stubs, signature):
    """Scalars, integer dtypes, several inputs, control flow and variables, through each of the
    reference `seeds` model's signatures. `dense/calls` counts the calls made on the model, and
    TensorFlow recorded the first one: it is compared only for being a count."""
    from tensorflow_serving.apis import predict_pb2 as tf_predict_pb2
    request = tf_predict_pb2.PredictRequest()
    request.model_spec.name = "seeds"
    request.model_spec.signature_name = signature
    for key in (k for k in SEEDS_IO if k.startswith(f"sig/{signature}/in/")):
        request.inputs[key.rsplit("/", 1)[1]].CopyFrom(tf.make_tensor_proto(SEEDS_IO[key]))
    outputs = stubs[0].Predict(request, 60).outputs
    expected = {k.rsplit("/", 1)[1]: SEEDS_IO[k] for k in SEEDS_IO if k.startswith(f"sig/{signature}/out/")}
    assert sorted(outputs) == sorted(expected)
    for name, value in expected.items():
        got = tf.make_ndarray(outputs[name])
        assert got.dtype == value.dtype and got.shape == value.shape, name
        if (signature, name) == ("dense", "calls"):
            assert got >= 1
        else:
            np.testing.assert_allclose(got, value, rtol=1e-5, atol=1e-6, err_msg=name)


def test_tensorflow_serving_client_metadata_and_status(tf, stubs):
    from tensorflow.core.protobuf import saved_model_pb2 as tf_saved_model_pb2
    from tensorflow_serving.apis import get_model_metadata_pb2 as tf_metadata_pb2
    from tensorflow_serving.apis import get_model_status_pb2 as tf_status_pb2
    request = tf_metadata_pb2.GetModelMetadataRequest(metadata_field=["signature_def"])
    request.model_spec.name = "cnn"
    response = stubs[0].GetModelMetadata(request, 60)
    signature_map = tf_metadata_pb2.SignatureDefMap()
    assert response.metadata["signature_def"].Unpack(signature_map)
    written = tf_saved_model_pb2.SavedModel.FromString((KERAS_CNN / "saved_model.pb").read_bytes())
    assert dict(signature_map.signature_def) == dict(written.meta_graphs[0].signature_def)
    status_request = tf_status_pb2.GetModelStatusRequest()
    status_request.model_spec.name = "half_plus_three"
    (status,) = stubs[1].GetModelStatus(status_request, 60).model_version_status
    assert (status.version, status.state) == (123, tf_status_pb2.ModelVersionStatus.AVAILABLE)
    with pytest.raises(grpc.RpcError) as raised:
        stubs[1].GetModelStatus(tf_status_pb2.GetModelStatusRequest(model_spec={"name": "nope"}), 60)
    assert raised.value.code() == grpc.StatusCode.NOT_FOUND


def test_tensorflow_serving_client_classify_regress_and_multi_inference(tf, stubs):
    from tensorflow_serving.apis import classification_pb2 as tf_classification_pb2
    from tensorflow_serving.apis import regression_pb2 as tf_regression_pb2

    def request(request_type, signature):
        message = request_type()
        message.model_spec.name = "half_plus_three"
        message.model_spec.signature_name = signature
        for serialized in HALF_IO[f"sig/{signature}/in/inputs"]:
            message.input.example_list.examples.add().ParseFromString(serialized)
        return message

    classify = "tensorflow/serving/classify"
    result = stubs[0].Classify(request(tf_classification_pb2.ClassificationRequest, classify), 60).result
    assert [[c.label for c in row.classes] for row in result.classifications] == [
        [b.decode() for b in row] for row in HALF_IO[f"sig/{classify}/out/classes"]]
    np.testing.assert_allclose([[c.score for c in row.classes] for row in result.classifications],
                               HALF_IO[f"sig/{classify}/out/scores"], rtol=1e-6)
    regress = "tensorflow/serving/regress"
    result = stubs[0].Regress(request(tf_regression_pb2.RegressionRequest, regress), 60).result
    np.testing.assert_allclose([r.value for r in result.regressions], HALF_IO[f"sig/{regress}/out/outputs"].ravel(), rtol=1e-6)

    from tensorflow_serving.apis import inference_pb2 as tf_inference_pb2
    multi = tf_inference_pb2.MultiInferenceRequest()
    multi.tasks.add(model_spec={"name": "half_plus_three", "signature_name": regress}, method_name=regress)
    multi.input.CopyFrom(request(tf_regression_pb2.RegressionRequest, regress).input)
    (only,) = stubs[0].MultiInference(multi, 60).results
    np.testing.assert_allclose([r.value for r in only.regression_result.regressions],
                               HALF_IO[f"sig/{regress}/out/outputs"].ravel(), rtol=1e-6)


class _EarlyTimerLoop(asyncio.SelectorEventLoop):
    """Timers that fire a millisecond early, as uvloop's (millisecond resolution) can."""

    def call_later(self, delay, callback, *args, context=None):
        return super().call_later(max(0.0, delay - 0.001), callback, *args, context=context)


def test_a_lone_request_is_answered_when_its_batch_times_out_on_a_coarse_timer():
    """`savedmodel serve` runs on uvloop: a batch timer firing before time.monotonic() reaches
    the batch's deadline must still start the batch, not leave it waiting for another request."""
    from concurrent.futures import ThreadPoolExecutor

    from savedmodel.serve.batching import Batcher

    async def lone_requests():
        with ThreadPoolExecutor(1) as executor:
            batcher = Batcher(lambda feeds: {"y": feeds["x"] * 2}, executor,
                              BatchingParameters(max_batch_size=8, batch_timeout_micros=5000), "test")
            return [await asyncio.wait_for(batcher.submit({"x": np.full((1, 2), i)}), 5) for i in range(20)]

    loop = _EarlyTimerLoop()
    try:
        answers = loop.run_until_complete(lone_requests())
    finally:
        loop.close()
    assert [a["y"].tolist() for a in answers] == [[[2 * i, 2 * i]] for i in range(20)]


def test_a_busy_grpc_port_is_one_clear_error(tmp_path):
    from click.testing import CliRunner

    from savedmodel.cli import main
    base = model_base(tmp_path, "mlp", {1: KERAS_MLP})
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(main, ["serve", "--model_base_path", str(base), "--host", "127.0.0.1",
                                           "--port", str(port), "--rest_api_port", str(_free_port())])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"Error: gRPC API: cannot listen on 127.0.0.1:{port} (--port): Address already in use"]
