"""The server's configuration files, in TensorFlow Serving's text formats.

`--model_config_file`: a ModelServerConfig with a `model_config_list` (name, base_path,
model_platform "tensorflow", model_version_policy, version_labels per model).
`--batching_parameters_file`: BatchingParameters (`max_batch_size { value: 128 }`, ...).
"""
from __future__ import annotations

import re
from pathlib import Path

from savedmodel.serve.batching import BatchingParameters
from savedmodel.serve.manager import ModelConfig, VersionPolicy


class ConfigError(ValueError):
    """A configuration file that cannot be used, naming the file and what is wrong."""


def read_model_config_file(path: Path) -> list[ModelConfig]:
    from google.protobuf import text_format

    from savedmodel.protos import model_server_config_pb2
    text = _read(path)
    config = model_server_config_pb2.ModelServerConfig()
    try:
        text_format.Parse(text, config)
    except text_format.ParseError as err:
        raise ConfigError(f"{path}: not a ModelServerConfig in text format: {err}") from None
    if config.WhichOneof("config") != "model_config_list":
        raise ConfigError(f"{path}: expected a model_config_list")
    models = []
    for i, entry in enumerate(config.model_config_list.config):
        where = f"{path}: config {i}" + (f" ({entry.name})" if entry.name else "")
        if not entry.name or not entry.base_path:
            raise ConfigError(f"{where}: needs a name and a base_path")
        if entry.model_platform not in ("", "tensorflow"):
            raise ConfigError(f"{where}: model_platform {entry.model_platform!r} is not served "
                              "(only 'tensorflow' SavedModels are)")
        models.append(ModelConfig(entry.name, _base_path(entry.base_path, path), _policy(entry, where),
                                  dict(entry.version_labels)))
    if not models:
        raise ConfigError(f"{path}: the model_config_list names no models")
    return models


def _base_path(text: str, config_path: Path) -> Path:
    """Relative base paths are relative to the config file's folder."""
    base = Path(text)
    return base if base.is_absolute() else config_path.parent / base


def _policy(entry, where: str) -> VersionPolicy:
    policy = entry.model_version_policy
    kind = policy.WhichOneof("policy_choice")
    if kind == "all":
        return VersionPolicy("all")
    if kind == "specific":
        if not policy.specific.versions:
            raise ConfigError(f"{where}: a specific version policy must list versions")
        return VersionPolicy("specific", versions=tuple(policy.specific.versions))
    if kind == "latest":
        count = policy.latest.num_versions or 1
        return VersionPolicy("latest", count=count)
    return VersionPolicy()


_FIELD = re.compile(r"\s*(\w+)\s*\{\s*value\s*:\s*([^\s}]+)\s*\}\s*")
_BATCHING_FIELDS = ("max_batch_size", "batch_timeout_micros", "max_enqueued_batches", "num_batch_threads")


def read_batching_parameters(path: Path | None) -> BatchingParameters:
    """The four BatchingParameters fields this server's batcher has; others are an error (they
    would change how TensorFlow Serving batches, and silently ignoring them would mislead)."""
    if path is None:
        return BatchingParameters()
    text = re.sub(r"#[^\n]*", "", _read(path))
    values, position = {}, 0
    while position < len(text):
        match = _FIELD.match(text, position)
        if match is None:
            if not text[position:].strip():
                break
            line = text.count("\n", 0, position) + 1
            raise ConfigError(f"{path}: line {line}: expected `name {{ value: N }}`, got "
                              f"{text[position:].strip().splitlines()[0][:60]!r}")
        name = match[1]
        if name not in _BATCHING_FIELDS:
            raise ConfigError(f"{path}: batching parameter {name!r} is not supported (supported: "
                              f"{', '.join(_BATCHING_FIELDS)})")
        if not re.fullmatch(r"-?\d+", match[2]):
            raise ConfigError(f"{path}: batching parameter {name} must be an integer, got {match[2]!r}")
        values[name] = int(match[2])
        position = match.end()
    try:
        return BatchingParameters(**values)
    except ValueError as err:
        raise ConfigError(f"{path}: {err}") from None


def _read(path: Path) -> str:
    try:
        return Path(path).read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"cannot read {path}: {err}") from None
