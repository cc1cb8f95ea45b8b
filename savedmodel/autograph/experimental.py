"""`sm.autograph.experimental`: per-function control over conversion."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from savedmodel.autograph.operators import autograph_artifact


def do_not_convert(func: Callable | None = None):
    """A decorator (with or without a call) that makes AutoGraph run `func` as it is: it
    returns a wrapper marked as already converted (`func` itself is left unmarked)."""
    if func is None:
        return do_not_convert

    @functools.wraps(func)
    def unconverted(*args, **kwargs):
        return func(*args, **kwargs)
    return autograph_artifact(unconverted)


def set_loop_options(parallel_iterations: Any = None, swap_memory: Any = None,
                     maximum_iterations: Any = None, shape_invariants: Any = None) -> None:
    """Options of the loop whose body starts with this call (`shape_invariants` as pairs
    `(variable, shape)`). Conversion takes the call out and hands them to the loop; unconverted,
    it does nothing."""


__all__ = ["do_not_convert", "set_loop_options"]
