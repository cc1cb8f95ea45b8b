"""TensorFlow Serving's gRPC API over the serving core, on grpcio's asyncio server.

    /tensorflow.serving.PredictionService/Predict            run a signature on TensorProtos
    /tensorflow.serving.PredictionService/GetModelMetadata   signature defs (metadata_field "signature_def")
    /tensorflow.serving.PredictionService/Classify, Regress  tf.Examples through a classify/regress signature
    /tensorflow.serving.PredictionService/MultiInference     several of those over the same examples
    /tensorflow.serving.ModelService/GetModelStatus          the versions of a model and their states
    /tensorflow.serving.ModelService/HandleReloadConfigRequest   UNIMPLEMENTED (models come from the
                                                             command line or --model_config_file)

The wire paths are TensorFlow Serving's, so its clients (tensorflow-serving-api's stubs, or stubs
generated from its protos in any language) call this server unchanged; the messages are our own
copies of its protos (savedmodel.protos, package savedmodel.serving), byte-compatible with them.
No service classes are generated: handlers are registered by method path, and take the request
as bytes so that one that does not parse is answered INVALID_ARGUMENT like any other bad request.

Errors are gRPC status codes of the same name as the core's ServingError codes (NOT_FOUND for
an unknown model or version, INVALID_ARGUMENT for bad inputs or signatures, RESOURCE_EXHAUSTED
when batching queues are full, ...). A message larger than `max_message_bytes` is refused by
gRPC itself with RESOURCE_EXHAUSTED before any of it reaches a handler.
"""
from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import grpc
import numpy as np
from google.protobuf.message import DecodeError, Message

from savedmodel.protos import (classification_pb2, get_model_metadata_pb2, get_model_status_pb2, inference_pb2,
                               predict_pb2, regression_pb2)
from savedmodel.serve.errors import ServingError, invalid
from savedmodel.serve.grpc_messages import (check_dtypes, metadata_response, model_spec_of, request_tensors,
                                            response_tensors, serialized_examples, status_response)
from savedmodel.serve.manager import ModelManager
from savedmodel.serve.metrics import Metrics
from savedmodel.serve.servable import CLASSIFY_METHOD, DEFAULT_SIGNATURE, REGRESS_METHOD

log = logging.getLogger("savedmodel.serve")

PREDICTION_SERVICE = "tensorflow.serving.PredictionService"
MODEL_SERVICE = "tensorflow.serving.ModelService"
DEFAULT_MAX_MESSAGE_BYTES = 64 << 20
DEFAULT_MAX_CONCURRENT_RPCS = 1024
UNKNOWN = "(unknown)"


@dataclass
class GrpcServer:
    """A running gRPC API: `port` is the bound port (useful when 0 was asked for)."""

    server: grpc.aio.Server
    port: int

    async def stop(self, grace_seconds: float | None) -> None:
        """Refuse new calls, let calls in flight finish for up to `grace_seconds`, then stop."""
        await self.server.stop(grace_seconds)


async def start(manager: ModelManager, host: str, port: int, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                max_concurrent_rpcs: int = DEFAULT_MAX_CONCURRENT_RPCS, metrics: Metrics | None = None) -> GrpcServer:
    """Serve TensorFlow Serving's gRPC services for `manager` on host:port (port 0: any free
    port), on the running event loop. Calls beyond `max_concurrent_rpcs` in progress are refused
    with RESOURCE_EXHAUSTED, so that a flood of requests cannot grow memory without bound."""
    server = grpc.aio.server(options=[("grpc.max_receive_message_length", max_message_bytes),
                                      ("grpc.max_send_message_length", max_message_bytes),
                                      ("grpc.so_reuseport", 0)],
                             maximum_concurrent_rpcs=max_concurrent_rpcs)
    api = _Api(manager, max_message_bytes, metrics)
    server.add_generic_rpc_handlers([
        grpc.method_handlers_generic_handler(PREDICTION_SERVICE, {
            "Predict": api.handler(predict_pb2.PredictRequest, "predict", api.predict),
            "GetModelMetadata": api.handler(get_model_metadata_pb2.GetModelMetadataRequest, "metadata",
                                            api.metadata),
            "Classify": api.handler(classification_pb2.ClassificationRequest, "classify", api.classify),
            "Regress": api.handler(regression_pb2.RegressionRequest, "regress", api.regress),
            "MultiInference": api.handler(inference_pb2.MultiInferenceRequest, "multi_inference",
                                          api.multi_inference),
        }),
        grpc.method_handlers_generic_handler(MODEL_SERVICE, {
            "GetModelStatus": api.handler(get_model_status_pb2.GetModelStatusRequest, "status", api.status),
            "HandleReloadConfigRequest": _unimplemented("HandleReloadConfigRequest"),
        }),
    ])
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        bound = server.add_insecure_port(address)
    except RuntimeError as err:
        raise OSError(f"gRPC API: cannot listen on {address}: {err}") from None
    await server.start()
    log.info("gRPC API listening on %s:%d", host, bound)
    return GrpcServer(server, bound)


def check_port(host: str, port: int) -> None:
    """OSError naming the address when the gRPC port cannot be listened on (in use, say). Called
    before the server starts, so the command fails with that one line rather than with a
    traceback from inside the web server's startup."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC binds
        try:
            probe.bind((host, port))
        except OSError as err:
            raise OSError(f"gRPC API: cannot listen on {host}:{port} (--port): {err.strerror or err}") from None


class _Call:
    """What one call reports to the metrics: the model and signature once known."""

    __slots__ = ("model", "signature")

    def __init__(self):
        self.model = UNKNOWN
        self.signature = UNKNOWN


class _Api:
    def __init__(self, manager: ModelManager, max_message_bytes: int, metrics: Metrics | None):
        self.manager = manager
        self.max_tensor_bytes = max_message_bytes
        self.metrics = metrics

    def handler(self, request_type: type[Message], api: str,
                method: Callable[[Message, _Call], Awaitable[Message]]) -> grpc.RpcMethodHandler:
        """A unary handler taking the request's bytes: parse, call `method`, answer its response
        serialized, or the status of the ServingError it raised."""
        async def handle(data: bytes, context: grpc.aio.ServicerContext) -> bytes:
            started = time.perf_counter()
            call = _Call()
            code = "OK"
            try:
                response = await method(_parse(request_type, data), call)
                return response.SerializeToString()
            except ServingError as err:
                code = err.code
                await context.abort(grpc.StatusCode[err.code], err.message)
            except asyncio.CancelledError:  # the client went away or its deadline passed
                code = "CANCELLED"
                raise
            except Exception as err:  # a bug: answer it, log it, keep serving
                code = "INTERNAL"
                log.exception("internal error serving gRPC %s", api)
                await context.abort(grpc.StatusCode.INTERNAL, f"Internal error: {type(err).__name__}: {err}")
            finally:
                if self.metrics is not None:
                    self.metrics.observe(call.model, call.signature, api, code, time.perf_counter() - started)
        return grpc.unary_unary_rpc_method_handler(handle)

    def _resolve(self, request: Message, call: _Call):
        if not request.HasField("model_spec"):
            raise invalid("Missing ModelSpec")
        name, version, label = model_spec_of(request.model_spec)
        servable = self.manager.resolve(name, version, label)
        call.model = servable.name
        return servable

    async def predict(self, request: predict_pb2.PredictRequest, call: _Call) -> predict_pb2.PredictResponse:
        servable = self._resolve(request, call)
        signature = servable.signature(request.model_spec.signature_name)
        call.signature = signature.name
        check_dtypes(signature, request.inputs)
        inputs = request_tensors(request.inputs, self.max_tensor_bytes)
        signature_name, outputs = await servable.predict(signature.name, inputs, list(request.output_filter))
        response = predict_pb2.PredictResponse()
        _fill_spec(response.model_spec, servable, signature_name)
        response_tensors(outputs, response.outputs)
        return response

    async def metadata(self, request: get_model_metadata_pb2.GetModelMetadataRequest,
                       call: _Call) -> get_model_metadata_pb2.GetModelMetadataResponse:
        servable = self._resolve(request, call)
        response = metadata_response(servable.signature_defs(), list(request.metadata_field))
        _fill_spec(response.model_spec, servable, None)
        return response

    async def classify(self, request: classification_pb2.ClassificationRequest,
                       call: _Call) -> classification_pb2.ClassificationResponse:
        servable = self._resolve(request, call)
        examples = serialized_examples(request.input)
        call.signature = servable.signature(request.model_spec.signature_name).name
        signature_name, classes, scores = await servable.classify(request.model_spec.signature_name, examples)
        response = classification_pb2.ClassificationResponse()
        _fill_spec(response.model_spec, servable, signature_name)
        _fill_classifications(response.result, classes, scores, len(examples))
        return response

    async def regress(self, request: regression_pb2.RegressionRequest,
                      call: _Call) -> regression_pb2.RegressionResponse:
        servable = self._resolve(request, call)
        examples = serialized_examples(request.input)
        call.signature = servable.signature(request.model_spec.signature_name).name
        signature_name, values = await servable.regress(request.model_spec.signature_name, examples)
        response = regression_pb2.RegressionResponse()
        _fill_spec(response.model_spec, servable, signature_name)
        for value in values.tolist():
            response.result.regressions.add(value=value)
        return response

    async def multi_inference(self, request: inference_pb2.MultiInferenceRequest,
                              call: _Call) -> inference_pb2.MultiInferenceResponse:
        """Several classify and regress signatures of one model version over the same examples."""
        servable = self._multi_inference_servable(request.tasks, call)
        examples = serialized_examples(request.input)
        response = inference_pb2.MultiInferenceResponse()
        for task in request.tasks:
            result = response.results.add()
            if task.method_name == CLASSIFY_METHOD:
                name, classes, scores = await servable.classify(task.model_spec.signature_name, examples)
                _fill_classifications(result.classification_result, classes, scores, len(examples))
            else:
                name, values = await servable.regress(task.model_spec.signature_name, examples)
                for value in values.tolist():
                    result.regression_result.regressions.add(value=value)
            _fill_spec(result.model_spec, servable, name)
        return response

    def _multi_inference_servable(self, tasks, call: _Call):
        if not tasks:
            raise invalid("MultiInferenceRequest has no tasks")
        if len({model_spec_of(t.model_spec) for t in tasks}) != 1:
            raise invalid("All ModelSpecs in a MultiInferenceRequest must access the same model name and version")
        signatures = [t.model_spec.signature_name or DEFAULT_SIGNATURE for t in tasks]
        repeated = sorted({n for n in signatures if signatures.count(n) > 1})
        if repeated:
            raise invalid(f"Duplicate evaluation of signature: {repeated[0]}")
        for task in tasks:
            if task.method_name not in (CLASSIFY_METHOD, REGRESS_METHOD):
                raise invalid(f"Unsupported signature method_name: {task.method_name!r} (expected "
                              f"{CLASSIFY_METHOD} or {REGRESS_METHOD})")
        servable = self.manager.resolve(*model_spec_of(tasks[0].model_spec))
        call.model = servable.name
        return servable

    async def status(self, request: get_model_status_pb2.GetModelStatusRequest,
                     call: _Call) -> get_model_status_pb2.GetModelStatusResponse:
        if not request.HasField("model_spec"):
            raise invalid("Missing ModelSpec")
        name, version, label = model_spec_of(request.model_spec)
        if not name:
            raise invalid("Missing model name in request.")
        response = status_response(self.manager.status(name, version, label))
        if name in self.manager.model_names():
            call.model = name
        return response


def _parse(request_type: type[Message], data: bytes) -> Message:
    try:
        return request_type.FromString(data)
    except DecodeError as err:
        raise invalid(f"Could not parse the request as a tensorflow.serving.{request_type.DESCRIPTOR.name}: "
                      f"{err}") from None


def _fill_spec(spec, servable, signature_name: str | None) -> None:
    """The response's model_spec: the model, the version that served and the signature that ran."""
    spec.name = servable.name
    spec.version.value = servable.version
    if signature_name is not None:
        spec.signature_name = signature_name


def _fill_classifications(result: classification_pb2.ClassificationResult, classes: np.ndarray | None,
                          scores: np.ndarray | None, count: int) -> None:
    """One Classifications per example; a label without a score scores 0, a score without a
    label has an empty label (as TensorFlow Serving answers)."""
    given = classes if classes is not None else scores
    if given.ndim != 2:
        raise invalid(f"Expected the classify signature's outputs to have shape [batch_size, num_classes], "
                      f"got {list(given.shape)}")
    width = given.shape[1]
    for row in range(count):
        per_example = result.classifications.add()
        for column in range(width):
            entry = per_example.classes.add()
            if classes is not None:
                label = classes[row, column]
                entry.label = label.decode("utf-8", "replace") if isinstance(label, bytes) else str(label)
            if scores is not None:
                entry.score = float(scores[row, column])


def _unimplemented(method: str) -> grpc.RpcMethodHandler:
    async def handle(data: bytes, context: grpc.aio.ServicerContext) -> bytes:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, f"{method} is not implemented by this server")
    return grpc.unary_unary_rpc_method_handler(handle)

