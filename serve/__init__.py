"""A model server that speaks TensorFlow Serving's REST and gRPC APIs (`savedmodel serve`).

It deploys only `savedmodel.runtime` (models load with `runtime.load(dir, engine="auto")`) and
the protos, never the authoring side. Install with `pip install savedmodel[serve]`.

The core, shared by the REST front end (serve.rest) and the gRPC one (serve.grpc_api), all of
it called from one asyncio event loop:

- `errors.ServingError(code, message)`: `code` is a canonical name, INVALID_ARGUMENT,
  NOT_FOUND, FAILED_PRECONDITION, RESOURCE_EXHAUSTED, UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL
  or UNIMPLEMENTED; `.http_status` is TensorFlow Serving's HTTP status for it.
- `manager.ModelManager(configs, batching=None, timeout=None)`:
  `resolve(name, version=None, label=None) -> Servable` (NOT_FOUND "Servable not found for
  request: Latest(name)" / "Specific(name, 3)"; an unknown label is INVALID_ARGUMENT),
  `status(name, version=None, label=None) -> list[VersionStatus]` (`version: int`, `state` one
  of START/LOADING/AVAILABLE/UNLOADING/END, `error_code` "OK" or a code, `error_message`),
  `model_names()`, `await poll_once()` (load/unload versions to match the folders).
- `servable.Servable`: `.name`, `.version`, `.signature_defs() -> dict[str, SignatureDef]`,
  `await predict(signature_name, inputs: dict[str, np.ndarray], output_filter=None) ->
  (signature name used, outputs dict)`, `await classify(signature_name, serialized_examples:
  list[bytes]) -> (signature name, classes [n, k] bytes or None, scores [n, k] float32 or None)`,
  `await regress(signature_name, serialized_examples) -> (signature name, float32 [n])`.
  A None or empty signature name means "serving_default". Inputs are checked against the
  signature (names, dtypes, shapes) with INVALID_ARGUMENT errors before anything runs; the model
  runs on a worker thread, through the batcher when batching is on.
- `batching.BatchingParameters(max_batch_size, batch_timeout_micros, max_enqueued_batches,
  num_batch_threads)`; a full queue is RESOURCE_EXHAUSTED.
- `server.ServerOptions` and `server.run(options)`; `server.build(options)` gives the ASGI app
  and its manager. When gRPC is on (`options.port`), the server calls
  `await savedmodel.serve.grpc_api.start(manager, host, port)` at startup and `await
  returned.stop(grace_seconds)` at shutdown.
"""
from savedmodel.serve.batching import BatchingParameters
from savedmodel.serve.errors import ServingError
from savedmodel.serve.manager import ModelConfig, ModelManager, VersionPolicy, VersionStatus
from savedmodel.serve.servable import Servable

__all__ = ["BatchingParameters", "ModelConfig", "ModelManager", "Servable", "ServingError", "VersionPolicy",
           "VersionStatus"]
