"""TensorFlow Serving's REST API over the serving core, as an ASGI application (run by uvicorn;
Starlette for the lifespan, metrics and liveness routes).

    GET  /v1/models/NAME[/versions/V|/labels/L]            model status
    GET  /v1/models/NAME[/versions/V|/labels/L]/metadata   signature defs
    POST /v1/models/NAME[/versions/V|/labels/L]:predict    (also :classify, :regress)
    GET  /monitoring/prometheus/metrics                    Prometheus metrics
    GET  /healthz                                          liveness: 200 while the server runs

Errors are `{"error": "..."}` with TensorFlow Serving's HTTP status for the error's code. Each
request body is bounded in size (413 beyond `max_body_bytes`) and in time (408 when the client
stops sending it for `body_timeout` seconds), and each request in total by `timeout` seconds (504).
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import time

from google.protobuf import json_format
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from savedmodel.serve import tensor_json
from savedmodel.serve.errors import ServingError, invalid
from savedmodel.serve.manager import ModelManager
from savedmodel.serve.metrics import CONTENT_TYPE, Metrics

log = logging.getLogger("savedmodel.serve")

_SELECTOR = r"(?:/versions/(?P<version>-?\d+)|/labels/(?P<label>[^/:]+))?"
PREDICTION_PATH = re.compile(rf"/v1/models/(?P<name>[^/:]+){_SELECTOR}:(?P<method>classify|regress|predict)",
                             re.IGNORECASE)
STATUS_PATH = re.compile(rf"/v1/models(?:/(?P<name>[^/:]+))?{_SELECTOR}(?P<metadata>/metadata)?", re.IGNORECASE)
JSON = "application/json"
UNKNOWN = "(unknown)"


class BodyError(Exception):
    """A request body refused before it is parsed: too large (413) or too slow (408)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def create_app(manager: ModelManager, *, max_body_bytes: int = 64 << 20, body_timeout: float = 30.0,
               timeout: float | None = None, metrics: Metrics | None = None, lifespan=None):
    """The REST application over `manager` (an ASGI app); `lifespan` (an async context manager
    factory) starts and stops what runs beside it (model polling, the gRPC server)."""
    api = _Api(manager, max_body_bytes, body_timeout, timeout, metrics or Metrics())
    return _RestApp(api, Starlette(routes=[
        Route("/monitoring/prometheus/metrics", api.prometheus, methods=["GET"]),
        Route("/healthz", api.healthz, methods=["GET"]),
    ], lifespan=lifespan))


class _RestApp:
    """/v1/... straight to the API, as plain ASGI (the requests that carry the load skip the
    framework's routing, middleware and request objects: about 40 us each); everything else
    (lifespan, metrics, liveness, unknown paths) to Starlette."""

    def __init__(self, api: _Api, other: Starlette):
        self.api = api
        self.other = other

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["path"][:4].lower() == "/v1/":
            await self.api.v1(scope, receive, send)
        else:
            await self.other(scope, receive, send)


class _Api:
    def __init__(self, manager: ModelManager, max_body_bytes: int, body_timeout: float,
                 timeout: float | None, metrics: Metrics):
        self.manager = manager
        self.max_body_bytes = max_body_bytes
        self.body_timeout = body_timeout
        self.timeout = timeout
        self.metrics = metrics

    async def healthz(self, request: Request) -> Response:
        return Response(b'{"status":"ok"}', media_type=JSON)

    async def prometheus(self, request: Request) -> Response:
        return Response(self.metrics.page(), media_type=CONTENT_TYPE)

    async def v1(self, scope, receive, send) -> None:
        started = time.perf_counter()
        method, path = scope["method"], scope["path"]
        labels = [UNKNOWN, UNKNOWN, "status" if method == "GET" else "predict"]
        headers = [(b"content-type", b"application/json")]
        try:
            body = await self._read_body(scope, receive) if method == "POST" else b""
            async with _time_limit(self.timeout):
                document = await self._handle(method, path, body, labels)
            status_code, payload, status = 200, tensor_json.dumps(document), "OK"
        except ServingError as err:
            status_code, payload, status = err.http_status, _error(err.message), err.code
        except asyncio.TimeoutError:
            status_code, payload, status = 504, _error(f"Request timed out after {self.timeout:g} s "
                                                       "(--rest_api_timeout_in_ms)"), "DEADLINE_EXCEEDED"
        except BodyError as err:
            status_code, payload, status = err.status, _error(str(err)), "INVALID_ARGUMENT"
            # The rest of the body may still come (or never): the connection cannot carry another request.
            headers.append((b"connection", b"close"))
        except ClientDisconnect:
            return
        except Exception as err:  # a bug: answer it, log it, keep serving
            log.exception("internal error serving %s %s", method, path)
            status_code, payload, status = 500, _error(f"Internal error: {type(err).__name__}: {err}"), "INTERNAL"
        self.metrics.observe(labels[0], labels[1], labels[2], status, time.perf_counter() - started)
        headers.append((b"content-length", str(len(payload)).encode()))
        await send({"type": "http.response.start", "status": status_code, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    async def _read_body(self, scope, receive) -> bytes:
        length = next((v for k, v in scope["headers"] if k == b"content-length"), None)
        if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
            raise BodyError(413, f"Request body of {int(length)} bytes is larger than the limit of "
                                 f"{self.max_body_bytes} bytes")
        chunks, size = [], 0
        while True:
            try:
                async with _time_limit(self.body_timeout):
                    message = await receive()
            except asyncio.TimeoutError:
                raise BodyError(408, f"The client sent no part of the request body for "
                                     f"{self.body_timeout:g} s") from None
            if message["type"] == "http.disconnect":
                raise ClientDisconnect()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                raise BodyError(413, f"Request body is larger than the limit of {self.max_body_bytes} bytes")
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def _handle(self, method: str, path: str, body: bytes, labels: list) -> dict:
        match = PREDICTION_PATH.fullmatch(path) if method == "POST" else STATUS_PATH.fullmatch(path)
        if match is None:
            raise invalid(f"Malformed request: {method} {path}")
        name, label = match["name"], match["label"]
        version = None if match["version"] is None else _version(match["version"])
        if name is None:
            raise invalid("Missing model name in request.")
        if name in self.manager.model_names():
            labels[0] = name
        if method == "GET":
            if match["metadata"]:
                labels[2] = "metadata"
                return self._metadata(name, version, label)
            return _status_json(self.manager.status(name, version, label))
        verb = match["method"].lower()
        labels[2] = verb
        document = tensor_json.parse_body(body)
        servable = self.manager.resolve(name, version, label)
        signature = servable.signature(tensor_json.signature_name(document))
        labels[1] = signature.name
        if verb == "predict":
            return await self._predict(servable, signature, document)
        return await self._classify_or_regress(servable, signature.name, document, verb)

    async def _predict(self, servable, signature, document: dict) -> dict:
        strings = {k for k, spec in signature.inputs.items() if spec.dtype == "DT_STRING"}
        inputs, rows = tensor_json.predict_inputs(document, list(signature.inputs), strings)
        _, outputs = await servable.predict(signature.name, inputs)
        return tensor_json.predict_response(outputs, rows)

    async def _classify_or_regress(self, servable, signature_name: str, document: dict, verb: str) -> dict:
        from savedmodel.serve import example_json
        examples = example_json.serialized_examples(document)
        if verb == "regress":
            _, values = await servable.regress(signature_name, examples)
            return {"results": values.tolist()}
        _, classes, scores = await servable.classify(signature_name, examples)
        return {"results": example_json.classification_results(classes, scores)}

    def _metadata(self, name: str, version: int | None, label: str | None) -> dict:
        servable = self.manager.resolve(name, version, label)
        defs = {key: json_format.MessageToDict(value, always_print_fields_with_no_presence=True,
                                               preserving_proto_field_name=True)
                for key, value in sorted(servable.signature_defs().items())}
        return {"model_spec": {"name": servable.name, "signature_name": "", "version": str(servable.version)},
                "metadata": {"signature_def": {"signature_def": defs}}}


@contextlib.asynccontextmanager
async def _fallback_timeout(seconds: float | None):
    """asyncio.timeout for Python 3.10, through a watchdog that cancels the current task."""
    if seconds is None:
        yield
        return
    task = asyncio.current_task()
    expired = False

    def expire():
        nonlocal expired
        expired = True
        task.cancel()
    handle = asyncio.get_running_loop().call_later(seconds, expire)
    try:
        yield
    except asyncio.CancelledError:
        if expired:
            raise asyncio.TimeoutError from None
        raise
    finally:
        handle.cancel()


_time_limit = getattr(asyncio, "timeout", _fallback_timeout)
"""A time limit on the awaits inside a block, without the extra task asyncio.wait_for makes."""


def _version(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not -(1 << 63) <= value < (1 << 63):
        raise invalid(f"Failed to convert version: {text} to numeric.")
    return value


def _status_json(statuses) -> dict:
    return {"model_version_status": [
        {"version": str(s.version), "state": s.state,
         "status": {"error_code": s.error_code, "error_message": s.error_message}} for s in statuses]}


def _error(message: str) -> bytes:
    return json.dumps({"error": message}).encode()
