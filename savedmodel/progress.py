"""Progress bars on long work (benchmarks, node-by-node comparisons, restoring large
checkpoints), drawn by tqdm on stderr.

Library code opens a bar with `bar(...)` wherever work is long, and never decides whether it
is shown: the caller does, for the thread or task that enters `showing(True)` (the command
line: when stderr is a terminal, or when asked, and never with --json). Without tqdm (the
`cli` extra) bars are silently absent, so nothing but the command line depends on it.
"""
from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from savedmodel.runtime import progress as runtime_progress

_SHOWN: ContextVar[bool] = ContextVar("savedmodel_progress_shown", default=False)


class _Hidden:
    """What `bar` yields when no bar is shown: updates cost nothing."""

    def update(self, n: float = 1) -> None:
        pass

    def set_postfix_str(self, text: str) -> None:
        pass


def _tqdm():
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


@contextmanager
def showing(shown: bool) -> Iterator[None]:
    """Show (or hide) the bars opened inside the block, including the runtime's restoring of
    variables (runtime.progress)."""
    token = _SHOWN.set(shown and _tqdm() is not None)
    try:
        if not _SHOWN.get():
            yield
            return
        with runtime_progress.reporting(_RuntimeBars()):
            yield
    finally:
        _SHOWN.reset(token)


def should_show(mode: str, as_json: bool = False) -> bool:
    """The command line's rule: "auto" shows bars when stderr is a terminal and the output is
    not JSON; "always" and "never" say so."""
    if mode == "always":
        return True
    return mode == "auto" and not as_json and sys.stderr.isatty()


@contextmanager
def bar(description: str, total: float | None = None, unit: str = "it") -> Iterator[object]:
    """A bar counting `unit`s towards `total` (None: a counter), with tqdm's `update(n)`."""
    tqdm = _tqdm() if _SHOWN.get() else None
    if tqdm is None:
        yield _Hidden()
        return
    with _new_bar(tqdm, description, total, unit) as shown:
        yield shown


DELAY = 0.5
"""Seconds before a bar appears: work that ends sooner never shows one."""


TIME_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {elapsed}<{remaining}"
"""A bar counting seconds (unit "s") shows time, not fractions of seconds."""


def _new_bar(tqdm, description: str, total: float | None, unit: str):
    return tqdm(desc=description, total=total, unit=unit, file=sys.stderr, leave=False,
                dynamic_ncols=True, delay=DELAY, bar_format=TIME_FORMAT if unit == "s" else None)


def note(message: str) -> None:
    """Write a line to stderr without tearing a bar that is being drawn there."""
    tqdm = _tqdm() if _SHOWN.get() else None
    if tqdm is None:
        print(message, file=sys.stderr, flush=True)
    else:
        tqdm.write(message, file=sys.stderr)


class _RuntimeBars:
    """Bars for the runtime's progress reports (runtime.progress.Reporter)."""

    def __init__(self):
        self._bars: dict[str, object] = {}

    def start(self, task: str, total: float, unit: str) -> None:
        self._bars[task] = _new_bar(_tqdm(), task, total, unit)

    def advance(self, task: str, amount: float) -> None:
        if task in self._bars:
            self._bars[task].update(amount)

    def finish(self, task: str) -> None:
        shown = self._bars.pop(task, None)
        if shown is not None:
            shown.close()
