"""How much a file may make the runtime read, allocate or nest, before it has to say so.

A SavedModel or checkpoint states sizes that the runtime would otherwise trust: a 5 GB
`saved_model.pb`, a Const whose compact form (one value and a shape) claims 2**40 elements, a
chain of thousands of nested function calls. Each of these is checked against a limit here
before anything is read or allocated, and the error names the limit and how to raise it:
`load(export_dir, limits=Limits(max_const_bytes=...))`. The defaults admit every model
TensorFlow itself can write and load.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields, replace

from savedmodel.runtime.errors import SavedModelError

PROTOBUF_MAX_BYTES = 2**31 - 1
"""Protobuf cannot parse a message of 2 GiB or more; TensorFlow cannot write one either."""


@dataclass(frozen=True)
class Limits:
    """Bounds on what a model's files may claim; pass one to `savedmodel.runtime.load`."""

    max_file_bytes: int = PROTOBUF_MAX_BYTES
    """Largest `saved_model.pb`, `.pbtxt` or checkpoint `.index` file read into memory
    (data shards are read tensor by tensor and are bounded by the tensors' own sizes)."""
    max_const_bytes: int = 1 << 30
    """Largest array a tensor's compact form may expand to: a Const that stores fewer values
    than its shape holds (the last one repeats, or zeros), whose bytes are not in the file."""
    max_function_depth: int = 64
    """Deepest nesting of function calls (calls inlined into each other when a plan is
    compiled, and calls made at run time: branches, loop bodies, recursion)."""

    def exceeded(self, field: str) -> str:
        """How an error message names limit `field` and says how to raise it."""
        return (f"the limit {field}={getattr(self, field)} (raise it with "
                f"limits=savedmodel.runtime.Limits({field}=...), or `--limit {field}=N` on the "
                f"command line)")

    def raised(self, settings: Iterable[str]) -> Limits:
        """These limits with `NAME=N` settings applied (the command line's `--limit`)."""
        known = [f.name for f in fields(self)]
        changes = {}
        for setting in settings:
            name, _, value = setting.partition("=")
            name = name.strip()
            if name not in known:
                raise LimitError(f"--limit {setting!r}: no limit named {name!r}; the limits are "
                                 f"{', '.join(known)}")
            try:
                changes[name] = int(value.strip().replace("_", ""))
            except ValueError:
                raise LimitError(f"--limit {setting!r}: {name} takes a whole number, as in "
                                 f"{name}={getattr(self, name)}") from None
            if changes[name] < 1:
                raise LimitError(f"--limit {setting!r}: {name} must be at least 1")
        return replace(self, **changes)


class LimitError(SavedModelError, ValueError):
    """A limit set to something that is not one."""


DEFAULT = Limits()
