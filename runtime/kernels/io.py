"""File ops: ReadFile and WriteFile, and the file reading that table initializers share with
them.

A model reads the files its graph names (usually its own assets, whose paths the loader
feeds); a file that cannot be read is an error naming it, never an empty result. Every path
goes through `checked_path`, so the execution context's file-access policy
(runtime.file_access) decides which files a loaded model may touch.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from savedmodel.runtime import protofiles
from savedmodel.runtime.atomic_files import write_file as write_atomically
from savedmodel.runtime.errors import FileFormatError, KernelError
from savedmodel.runtime.registry import kernel
from savedmodel.runtime.tensor_proto import string_text


def scalar_path(filename, op: str) -> Path:
    """The path in a scalar string tensor."""
    if np.ndim(filename) != 0:
        raise KernelError(f"{op}: the file name must be a scalar string, got shape "
                          f"{list(np.shape(filename))}")
    return Path(string_text(filename))


def checked_path(ctx, filename, op: str, write: bool = False) -> Path:
    """The path in a scalar string tensor, if the context lets `op` read it (or write it)."""
    return ctx.file_access.check(scalar_path(filename, op), op, write)


def read_bytes(path: Path, op: str) -> bytes:
    """A file's contents, or a KernelError naming the file (TensorFlow's NotFound and
    FailedPrecondition). Only regular files are read: a FIFO or device in place of an asset
    would block or never end."""
    try:
        return protofiles.read_file(path)
    except FileFormatError as err:
        raise KernelError(f"{op}: {err}") from None


@kernel("ReadFile", context=True)
def read_file(ctx, filename, **_):
    return (np.array(read_bytes(checked_path(ctx, filename, "ReadFile"), "ReadFile"), dtype=object),)


@kernel("WriteFile", context=True, stateful=True)
def write_file(ctx, filename, contents, **_):
    """Write a scalar string to a file, creating missing directories, as TensorFlow does; the
    file is written under a temporary name and renamed into place."""
    path = checked_path(ctx, filename, "WriteFile", write=True)
    if np.ndim(contents) != 0:
        raise KernelError(f"WriteFile: contents must be a scalar string, got shape {list(np.shape(contents))}")
    data = np.asarray(contents).item()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, lambda out: out.write(data if isinstance(data, bytes) else str(data).encode()))
    except OSError as err:
        raise KernelError(f"WriteFile: {path}: {err.strerror or err}") from None
    return ()
