"""Running the server: the model manager, the REST application on uvicorn, model polling, and
the gRPC API beside them when it is installed (`savedmodel.serve.grpc_api`).

On SIGTERM or SIGINT uvicorn stops accepting connections and lets requests in flight finish
(up to `graceful_seconds`), then the gRPC server stops the same way and the workers exit.
"""
from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
from dataclasses import dataclass, field

from savedmodel.serve.batching import BatchingParameters
from savedmodel.serve.manager import ModelConfig, ModelManager
from savedmodel.serve.metrics import Metrics
from savedmodel.serve.rest import create_app

log = logging.getLogger("savedmodel.serve")


@dataclass
class ServerOptions:
    models: list[ModelConfig]
    rest_api_port: int = 8501
    port: int = 8500
    """gRPC port; 0 leaves gRPC off."""
    host: str = "0.0.0.0"
    poll_seconds: float = 1.0
    batching: BatchingParameters | None = None
    timeout: float | None = None
    max_body_bytes: int = 64 << 20
    body_timeout: float = 30.0
    header_timeout: float = 30.0
    graceful_seconds: float = 30.0
    engine: str = "auto"
    metrics: Metrics = field(default_factory=Metrics)


def build(options: ServerOptions):
    """(the REST application, its model manager): the application's lifespan loads the models
    before the first request is accepted, polls for new versions, and runs the gRPC API."""
    manager = ModelManager(options.models, batching=options.batching, timeout=options.timeout,
                           engine=options.engine)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        await manager.poll_once()
        poller = (asyncio.get_running_loop().create_task(manager.poll_forever(options.poll_seconds))
                  if options.poll_seconds > 0 else None)
        grpc_server = await _start_grpc(manager, options)
        try:
            yield
        finally:
            if poller is not None:
                poller.cancel()
            if grpc_server is not None:
                await grpc_server.stop(options.graceful_seconds)
            manager.close()

    app = create_app(manager, max_body_bytes=options.max_body_bytes, body_timeout=options.body_timeout,
                     timeout=options.timeout, metrics=options.metrics, lifespan=lifespan)
    return app, manager


def _grpc_on(options: ServerOptions) -> bool:
    if not options.port:
        return False
    if importlib.util.find_spec("savedmodel.serve.grpc_api") is None or importlib.util.find_spec("grpc") is None:
        log.warning("gRPC API not available (install savedmodel[serve]); serving REST only")
        return False
    return True


async def _start_grpc(manager: ModelManager, options: ServerOptions):
    if not _grpc_on(options):
        return None
    from savedmodel.serve import grpc_api
    return await grpc_api.start(manager, options.host, options.port, max_message_bytes=options.max_body_bytes,
                                metrics=options.metrics)


def run(options: ServerOptions) -> None:
    """Serve until SIGTERM or SIGINT."""
    import uvicorn
    if _grpc_on(options):
        from savedmodel.serve import grpc_api
        grpc_api.check_port(options.host, options.port)  # a busy port: one clear error, before loading models
    app, _ = build(options)
    uvicorn.Server(uvicorn_config(app, options, port=options.rest_api_port)).run()


def uvicorn_config(app, options: ServerOptions, **kwargs):
    """uvicorn's configuration for the REST application (quiet, bounded header time)."""
    import uvicorn
    try:
        from savedmodel.serve.http_protocol import with_header_timeout
        http = with_header_timeout(options.header_timeout)
    except ImportError:  # no httptools: uvicorn's pure-Python parser, without the header limit
        log.warning("httptools is not installed: request headers have no time limit")
        http = "auto"
    return uvicorn.Config(app, host=options.host, log_level="warning", access_log=False, lifespan="on",
                          timeout_graceful_shutdown=int(options.graceful_seconds), http=http, **kwargs)
