"""The `sm.train` namespace: checkpoints, their manager, and reading checkpoint files.

`load_checkpoint`, `list_variables` and `load_variable` accept a checkpoint prefix or a
directory with a `checkpoint` state file (its latest checkpoint), as TensorFlow's do.
"""
from __future__ import annotations

import os

import numpy as np

from savedmodel.checkpoint import (Checkpoint, CheckpointLoadStatus, CheckpointNotFoundError,
                                   CheckpointOptions, RestoreError, checkpoint_prefix)
from savedmodel.checkpoint_management import (CheckpointManager, CheckpointState,
                                              get_checkpoint_state, latest_checkpoint,
                                              update_checkpoint_state)
from savedmodel.runtime import dtypes
from savedmodel.runtime.errors import FileFormatError
from savedmodel.runtime.tensor_bundle import BundleReader, index_path
from savedmodel.runtime.tensor_proto import shape_from_proto

__all__ = ["Checkpoint", "CheckpointLoadStatus", "CheckpointManager", "CheckpointNotFoundError",
           "CheckpointOptions", "CheckpointReader", "CheckpointState", "RestoreError",
           "get_checkpoint_state", "latest_checkpoint", "list_variables", "load_checkpoint",
           "load_variable", "update_checkpoint_state"]


class CheckpointReader:
    """The tensors of one checkpoint by key, as `tf.train.load_checkpoint` returns them."""

    def __init__(self, prefix: str):
        self._bundle = BundleReader(prefix)

    def has_tensor(self, key: str) -> bool:
        return key in self._bundle.entries

    def get_tensor(self, key: str):
        """The value under `key`; a scalar comes back as a numpy scalar (bytes for strings)."""
        return self._bundle.read(key)[()]

    def get_variable_to_shape_map(self) -> dict[str, list[int]]:
        return {key: self._shape(key, entry) for key, entry in self._bundle.entries.items()}

    def _shape(self, key: str, entry) -> list[int]:
        """A stored tensor's shape: a saved tensor always has a defined one, so anything else
        is a damaged index (TensorFlow's reader fails on it too)."""
        shape = shape_from_proto(entry.shape)
        if shape is None or None in shape:
            raise FileFormatError(f"{index_path(self._bundle.prefix)}: tensor {key!r}: stored shape "
                                  f"{'of unknown rank' if shape is None else list(shape)} is not fully defined")
        return list(shape)

    def get_variable_to_dtype_map(self) -> dict[str, dtypes.DType]:
        return {key: dtypes.from_enum(entry.dtype) for key, entry in self._bundle.entries.items()}


def load_checkpoint(ckpt_dir_or_file: str | os.PathLike) -> CheckpointReader:
    return CheckpointReader(_prefix(ckpt_dir_or_file))


def list_variables(ckpt_dir_or_file: str | os.PathLike) -> list[tuple[str, list[int]]]:
    """(key, shape) of every tensor, sorted by key (the object graph included), as TF lists."""
    return sorted(load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map().items())


def load_variable(ckpt_dir_or_file: str | os.PathLike, name: str) -> np.ndarray:
    """The value under `name` (a trailing `:0` is ignored)."""
    if name.endswith(":0"):
        name = name[:-2]
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)


def _prefix(ckpt_dir_or_file: str | os.PathLike) -> str:
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        latest = latest_checkpoint(path)
        if latest is None:
            raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given "
                             f"directory {path}")
        return latest
    return checkpoint_prefix(path)
