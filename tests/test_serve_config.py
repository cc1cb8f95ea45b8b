"""`savedmodel serve`'s configuration: TensorFlow Serving's model config file (several models,
version policies, labels) and batching parameters file, and the command's argument errors."""
from __future__ import annotations

import asyncio

import pytest
from click.testing import CliRunner

pytest.importorskip("uvicorn")

from serve_helpers import HALF_PLUS_THREE, KERAS_MLP, model_base  # noqa: E402

from savedmodel.cli import main  # noqa: E402
from savedmodel.serve.batching import BatchingParameters  # noqa: E402
from savedmodel.serve.config import ConfigError, read_batching_parameters, read_model_config_file  # noqa: E402
from savedmodel.serve.errors import ServingError  # noqa: E402
from savedmodel.serve.manager import ModelManager  # noqa: E402

CONFIG = """
model_config_list {
  config {
    name: 'mlp'
    base_path: 'mlp'
    model_platform: 'tensorflow'
    model_version_policy { specific { versions: 1 versions: 2 } }
    version_labels { key: 'stable' value: 1 }
    version_labels { key: 'canary' value: 2 }
  }
  config {
    name: 'half_plus_three'
    base_path: '%s'
  }
}
""" % HALF_PLUS_THREE


def test_model_config_file_serves_its_policies_and_labels(tmp_path):
    model_base(tmp_path, "mlp", {1: KERAS_MLP, 2: KERAS_MLP, 3: KERAS_MLP})
    path = tmp_path / "models.config"
    path.write_text(CONFIG)
    configs = read_model_config_file(path)
    assert [c.name for c in configs] == ["mlp", "half_plus_three"]
    assert configs[0].base_path == tmp_path / "mlp"  # relative to the config file

    async def scenario():
        manager = ModelManager(configs)
        try:
            await manager.poll_once()
            return ([s.version for s in manager.status("mlp")], manager.resolve("mlp").version,
                    manager.resolve("mlp", label="stable").version, manager.resolve("mlp", label="canary").version,
                    manager.resolve("half_plus_three").version)
        finally:
            manager.close()
    assert asyncio.run(scenario()) == ([2, 1], 2, 1, 2, 123)


@pytest.mark.parametrize("text, message", [
    ("model_config_list { config { name: 'x' } }", "needs a name and a base_path"),
    ("model_config_list { config { name: 'x' base_path: '/m' model_platform: 'onnx' } }", "model_platform 'onnx'"),
    ("model_config_list {}", "names no models"),
    ("model_config_lis {}", "not a ModelServerConfig in text format"),
])
def test_bad_model_config_file(tmp_path, text, message):
    path = tmp_path / "models.config"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        read_model_config_file(path)


def test_batching_parameters_file(tmp_path):
    path = tmp_path / "batching.txt"
    path.write_text("# TensorFlow Serving's format\nmax_batch_size { value: 32 }\n"
                    "batch_timeout_micros { value: 500 }\nnum_batch_threads { value: 2 }\n")
    assert read_batching_parameters(path) == BatchingParameters(max_batch_size=32, batch_timeout_micros=500,
                                                                num_batch_threads=2)
    path.write_text("max_batch_size { value: 32 }\npad_variable_length_inputs { value: true }\n")
    with pytest.raises(ConfigError, match="'pad_variable_length_inputs' is not supported"):
        read_batching_parameters(path)
    path.write_text("max_batch_size { value: 0 }\n")
    with pytest.raises(ConfigError, match="max_batch_size must be at least 1"):
        read_batching_parameters(path)


def test_unknown_version_and_label_errors():
    async def scenario():
        from savedmodel.serve.manager import ModelConfig
        manager = ModelManager([ModelConfig("h", HALF_PLUS_THREE, labels={"stable": 7})])
        try:
            await manager.poll_once()
            errors = []
            for call in (lambda: manager.resolve("h", 1), lambda: manager.resolve("h", label="stable"),
                         lambda: manager.resolve("other"), lambda: manager.status("h", 1)):
                with pytest.raises(ServingError) as err:
                    call()
                errors.append((err.value.code, str(err.value)))
            return errors
        finally:
            manager.close()
    assert asyncio.run(scenario()) == [
        ("NOT_FOUND", "Servable not found for request: Specific(h, 1)"),
        ("NOT_FOUND", "Servable not found for request: Specific(h, 7)"),
        ("NOT_FOUND", "Servable not found for request: Latest(other)"),
        ("NOT_FOUND", "Could not find version 1 of model h"),
    ]


@pytest.mark.parametrize("args, message, status", [
    ([], "give either --model_base_path or --model_config_file", 2),
    (["--model_base_path", "m", "--batching_parameters_file", "b"], "needs --enable_batching", 2),
    (["--model_config_file", "/nonexistent/models.config"], "Error: cannot read /nonexistent/models.config", 1),
])
def test_command_line_errors(args, message, status):
    result = CliRunner().invoke(main, ["serve", *args])
    assert result.exit_code == status
    assert message in result.output
