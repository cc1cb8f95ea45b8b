"""Where ops go: eagerly to the kernels, or into the graph being built.

This is the only process state of the authoring side, and it is the state TensorFlow itself
keeps: a per-thread stack of graphs under construction (empty means eager execution), the
`run_functions_eagerly` switch, and a process-wide counter of unique ids (TensorFlow names
captured eager tensors and library functions with it).
"""
from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from savedmodel.graph import Graph


class _Stack(threading.local):
    def __init__(self):
        self.graphs: list[Graph] = []


_STACK = _Stack()
_UIDS = itertools.count(1)
_RUN_EAGERLY = [False]


def current_graph() -> Graph | None:
    """The graph ops are added to, or None when executing eagerly."""
    graphs = _STACK.graphs
    return graphs[-1] if graphs else None


def executing_eagerly() -> bool:
    return not _STACK.graphs


@contextmanager
def building(graph: Graph) -> Iterator[Graph]:
    """Add ops to `graph` inside the block."""
    _STACK.graphs.append(graph)
    try:
        yield graph
    finally:
        _STACK.graphs.pop()


@contextmanager
def eager_mode() -> Iterator[None]:
    """Run ops eagerly inside the block, even while a graph is being built (used to evaluate
    initial values and to run a Function's Python code when functions run eagerly)."""
    saved = _STACK.graphs
    _STACK.graphs = []
    try:
        yield
    finally:
        _STACK.graphs = saved


def uid() -> int:
    """A number unique within this process."""
    return next(_UIDS)


def run_functions_eagerly(run_eagerly: bool) -> None:
    """`tf.config.run_functions_eagerly`: Functions run their Python code as plain Python."""
    _RUN_EAGERLY[0] = bool(run_eagerly)


def functions_run_eagerly() -> bool:
    return _RUN_EAGERLY[0]
