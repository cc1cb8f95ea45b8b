"""Time limits on running a model: `with time_limit(seconds): signature(**feeds)`.

A While loop whose trip count comes from its input runs as long as the input says (TensorFlow
runs it until the process is killed). A server or a batch job bounds a call with `time_limit`:
the runtime checks the deadline once per While iteration and once per function call, so the
check costs nothing per node, and raises DeadlineExceededError naming where it stopped. A
single kernel (one large MatMul) is not interrupted: the check comes after it.

The deadline is a context variable, so it holds for the thread (or asyncio task) that set it
and for every signature, function and graph it runs, including the authoring side's loaded
objects and traced functions; nested limits keep the earliest deadline. What ran before the interruption stays
done, as when TensorFlow cancels a step: variables assigned and tables filled keep their new
values, and the model stays usable.
"""
from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from savedmodel.runtime.errors import SavedModelError


class DeadlineExceededError(SavedModelError, TimeoutError):
    """A run took longer than the `time_limit` around it."""


@dataclass(frozen=True)
class Deadline:
    at: float
    """time.monotonic() when the limit runs out."""
    seconds: float

    def check(self, where: str) -> None:
        """Raise DeadlineExceededError, naming `where`, once the deadline has passed."""
        if time.monotonic() > self.at:
            raise DeadlineExceededError(f"{where}: the time limit of {self.seconds:g} s ran out")


_CURRENT: ContextVar[Deadline | None] = ContextVar("savedmodel_runtime_deadline", default=None)


def current() -> Deadline | None:
    """The deadline of the running call, or None when it has no time limit."""
    return _CURRENT.get()


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Bound every model run inside the block to `seconds` (None: no limit)."""
    if seconds is None:
        yield
        return
    if not (isinstance(seconds, (int, float)) and math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"time_limit: seconds must be a positive number, got {seconds!r}")
    deadline = Deadline(time.monotonic() + seconds, seconds)
    outer = _CURRENT.get()
    token = _CURRENT.set(outer if outer is not None and outer.at <= deadline.at else deadline)
    try:
        yield
    finally:
        _CURRENT.reset(token)
