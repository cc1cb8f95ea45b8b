"""The one registry of kernels: op type name -> the function that computes it.

Kernels take their inputs positionally (numpy arrays, or runtime values such as variable
handles and tensor lists) and the node's attrs as keyword arguments (decoded by
`savedmodel.runtime.attrs`), and return a tuple with one value per output tensor. Every kernel
accepts `**_` so that attrs it does not need (such as an inferred `T`) can be passed uniformly.
Kernels that call functions or touch state declare `context=True` and receive the execution
context first. Registration is explicit and rejects duplicates, so an op has exactly one kernel.

A kernel may also have a fast path (`fast_path`): given a node's attrs when a plan is compiled,
it returns a callable of the inputs alone, for the run loop to call instead of the kernel. A
fast path is the same kernel with the common case inlined, not a second implementation: for
inputs it does not handle it calls the kernel, so results and errors stay the kernel's.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from savedmodel.runtime.errors import SavedModelError


@dataclass(frozen=True)
class Kernel:
    op: str
    fn: Callable[..., tuple]
    context: bool
    stateful: bool
    named: bool = False
    specialize: Callable[[dict], Callable[..., tuple] | None] | None = None
    """The fast path's factory: attrs -> a callable of the inputs, or None (use the kernel)."""


class DuplicateKernelError(SavedModelError):
    """Two kernels registered for one op type."""


class UnsupportedOpError(SavedModelError):
    """A graph uses an op type that has no kernel."""


_KERNELS: dict[str, Kernel] = {}


def kernel(*ops: str, context: bool = False, stateful: bool = False, named: bool = False):
    """Register the decorated function as the kernel of each op type in `ops`.

    `stateful` marks ops with side effects (variable writes, printing), which a function body
    runs even when no output needs them. `named` kernels also receive `node_name`, for ops
    whose meaning depends on it (a TensorFlow 1 variable without a shared name is shared by
    its node name), and `node_function`, the function the node is in (None outside one):
    a stateful random op keeps one generator per node."""
    if not ops:
        raise ValueError("kernel() needs at least one op type name")

    def register(fn: Callable[..., tuple]) -> Callable[..., tuple]:
        for op in ops:
            if op in _KERNELS:
                raise DuplicateKernelError(f"op {op!r} already has the kernel "
                                           f"{_KERNELS[op].fn.__module__}.{_KERNELS[op].fn.__name__}")
            _KERNELS[op] = Kernel(op, fn, context, stateful, named)
        return fn

    return register


def fast_path(*ops: str):
    """Register the decorated factory as the fast path of each op's kernel (see the module
    docstring). The factory is called once per node, with the node's decoded attrs, and returns
    a callable taking the inputs positionally, or None when those attrs get no fast path."""
    def register(factory: Callable[[dict], Callable[..., tuple] | None]):
        for op in ops:
            found = _KERNELS.get(op)
            if found is None:
                raise ValueError(f"fast path for {op!r}, which has no kernel yet")
            if found.specialize is not None:
                raise DuplicateKernelError(f"op {op!r} already has a fast path")
            _KERNELS[op] = replace(found, specialize=factory)
        return factory

    return register


def lookup(op: str, where: str = "") -> Kernel:
    """The kernel of `op`; an unsupported op is an error naming it, the node and the supported ops."""
    _load_kernels()
    found = _KERNELS.get(op)
    if found is None:
        at = f" (node {where})" if where else ""
        raise UnsupportedOpError(f"op {op!r}{at} is not supported by the savedmodel runtime; "
                                 f"supported ops: {', '.join(supported_ops())}")
    return found


def is_supported(op: str) -> bool:
    _load_kernels()
    return op in _KERNELS


def supported_ops() -> list[str]:
    _load_kernels()
    return sorted(_KERNELS)


def all_kernels() -> list[Kernel]:
    _load_kernels()
    return [_KERNELS[op] for op in sorted(_KERNELS)]


def _load_kernels() -> None:
    """Import the kernel modules once; importing them registers their kernels."""
    from savedmodel.runtime import kernels  # noqa: F401  (import for its registrations)
