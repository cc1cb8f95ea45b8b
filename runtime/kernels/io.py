"""File ops: ReadFile, and the file reading that table initializers share with it.

A model reads the files its graph names (usually its own assets, whose paths the loader
feeds); a file that cannot be read is an error naming it, never an empty result.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from savedmodel.runtime import protofiles
from savedmodel.runtime.errors import FileFormatError, KernelError
from savedmodel.runtime.registry import kernel
from savedmodel.runtime.tensor_proto import string_text


def scalar_path(filename, op: str) -> Path:
    """The path in a scalar string tensor."""
    if np.ndim(filename) != 0:
        raise KernelError(f"{op}: the file name must be a scalar string, got shape "
                          f"{list(np.shape(filename))}")
    return Path(string_text(filename))


def read_bytes(path: Path, op: str) -> bytes:
    """A file's contents, or a KernelError naming the file (TensorFlow's NotFound and
    FailedPrecondition). Only regular files are read: a FIFO or device in place of an asset
    would block or never end."""
    try:
        return protofiles.read_file(path)
    except FileFormatError as err:
        raise KernelError(f"{op}: {err}") from None


@kernel("ReadFile")
def read_file(filename, **_):
    return (np.array(read_bytes(scalar_path(filename, "ReadFile"), "ReadFile"), dtype=object),)
