"""`savedmodel serve`: TensorFlow Serving's REST (and, when installed, gRPC) API for SavedModels,
with TensorFlow Serving's flag names (underscores; dashes work too)."""
from __future__ import annotations

from pathlib import Path

import click

from savedmodel.cli.errors import reports_errors
from savedmodel.runtime.engines import ENGINES


def _flag(name: str, **kwargs):
    """An option spelled as TensorFlow Serving spells it, and with dashes."""
    dashed = name.replace("_", "-")
    spellings = [f"--{name}"] + ([f"--{dashed}"] if dashed != name else [])
    return click.option(*spellings, name, **kwargs)


@click.command()
@_flag("model_name", default="default", show_default=True, help="Name of the model (without --model_config_file).")
@_flag("model_base_path", type=click.Path(path_type=Path), help="Folder holding the model's numeric version "
       "folders (DIR/1/saved_model.pb, ...); the highest version is served.")
@_flag("model_config_file", type=click.Path(path_type=Path, dir_okay=False),
       help="A ModelServerConfig in text format (model_config_list): several models, version "
            "policies, version labels. Replaces --model_name/--model_base_path.")
@_flag("rest_api_port", type=click.IntRange(0, 65535), default=8501, show_default=True,
       help="Port of the REST API.")
@_flag("port", type=click.IntRange(0, 65535), default=8500, show_default=True,
       help="Port of the gRPC API (0: off; needs the gRPC part of savedmodel[serve]).")
@_flag("host", default="0.0.0.0", show_default=True, help="Address to listen on (127.0.0.1: this machine only).")
@_flag("file_system_poll_wait_seconds", type=click.FloatRange(min=0), default=1.0, show_default=True,
       help="How often to look for new versions (0: load once at startup).")
@_flag("enable_batching", is_flag=True, help="Merge concurrent requests into batches on dimension 0.")
@_flag("batching_parameters_file", type=click.Path(path_type=Path, dir_okay=False),
       help="BatchingParameters in text format (max_batch_size, batch_timeout_micros, "
            "max_enqueued_batches, num_batch_threads; `max_batch_size { value: 32 }`).")
@_flag("rest_api_timeout_in_ms", type=click.IntRange(min=0), default=30000, show_default=True,
       help="Answer 504 when a request takes longer (0: no limit).")
@_flag("max_body_bytes", type=click.IntRange(min=1), default=64 << 20, show_default=True,
       help="Answer 413 to a REST request body, and RESOURCE_EXHAUSTED to a gRPC "
            "message, larger than this.")
@_flag("engine", type=click.Choice(ENGINES), default="auto", show_default=True,
       help="The engine that runs the models (as for `savedmodel run`).")
@reports_errors
def serve(model_name, model_base_path, model_config_file, rest_api_port, port, host,
          file_system_poll_wait_seconds, enable_batching, batching_parameters_file,
          rest_api_timeout_in_ms, max_body_bytes, engine):
    """Serve SavedModels with TensorFlow Serving's REST API (and gRPC API).

    Until SIGTERM or Ctrl-C; then requests in flight finish before it exits. Needs the `serve`
    extra: pip install 'savedmodel[serve]'.
    """
    from savedmodel.serve.config import read_batching_parameters, read_model_config_file
    from savedmodel.serve.manager import ModelConfig
    from savedmodel.serve.server import ServerOptions, run
    if (model_config_file is None) == (model_base_path is None):
        raise click.UsageError("give either --model_base_path or --model_config_file")
    if batching_parameters_file is not None and not enable_batching:
        raise click.UsageError("--batching_parameters_file needs --enable_batching")
    models = (read_model_config_file(model_config_file) if model_config_file is not None
              else [ModelConfig(model_name, model_base_path)])
    run(ServerOptions(models, rest_api_port=rest_api_port, port=port, host=host,
                      poll_seconds=file_system_poll_wait_seconds,
                      batching=read_batching_parameters(batching_parameters_file) if enable_batching else None,
                      timeout=rest_api_timeout_in_ms / 1000 or None, max_body_bytes=max_body_bytes,
                      engine=engine))
