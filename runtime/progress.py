"""Reporting the progress of long work inside the runtime (restoring a model's variables) to
whoever asked for it, without the runtime knowing how, or whether, it is shown.

A caller enters `reporting(reporter)` for the thread or asyncio task that loads a model (the
command line draws bars with it; see savedmodel.progress); the runtime opens a `task` around
long loops and advances it. With no reporter, a task costs one context-variable read.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol


class Reporter(Protocol):
    def start(self, task: str, total: float, unit: str) -> None: ...

    def advance(self, task: str, amount: float) -> None: ...

    def finish(self, task: str) -> None: ...


_REPORTER: ContextVar[Reporter | None] = ContextVar("savedmodel_progress_reporter", default=None)


@contextmanager
def reporting(reporter: Reporter) -> Iterator[None]:
    """Send the progress of the runtime's tasks inside the block to `reporter`."""
    token = _REPORTER.set(reporter)
    try:
        yield
    finally:
        _REPORTER.reset(token)


def _ignore(amount: float = 1) -> None:
    pass


@contextmanager
def task(name: str, total: float, unit: str) -> Iterator[Callable[[float], None]]:
    """A task of `total` units; yields `advance(amount=1)`."""
    reporter = _REPORTER.get()
    if reporter is None:
        yield _ignore
        return
    reporter.start(name, total, unit)
    try:
        yield lambda amount=1: reporter.advance(name, amount)
    finally:
        reporter.finish(name)
