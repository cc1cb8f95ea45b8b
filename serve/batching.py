"""Request batching as TensorFlow Serving's `--enable_batching` does it.

Requests for one signature of one servable queue up in a Batcher; a batch closes when it holds
`max_batch_size` rows, or `batch_timeout_micros` after its first request arrived (at once when
that is 0 and a batch thread is free), and runs on one of `num_batch_threads` threads with the
requests' inputs concatenated on dimension 0; the outputs are split back by each request's row
count. At most `max_enqueued_batches` batches wait (the open one included): a request that would
need another one is refused with RESOURCE_EXHAUSTED, so overload answers 429 instead of growing
memory. Requests whose inputs differ beyond dimension 0 cannot share a batch: such a request
closes the open batch and starts the next one.
"""
from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass

import numpy as np

from savedmodel.serve.errors import ServingError, invalid


@dataclass(frozen=True)
class BatchingParameters:
    """TensorFlow Serving's BatchingParameters; fields a parameters file leaves out keep these
    defaults."""

    max_batch_size: int = 1000
    batch_timeout_micros: int = 0
    max_enqueued_batches: int = 10
    num_batch_threads: int = 4

    def __post_init__(self):
        for name in ("max_batch_size", "max_enqueued_batches", "num_batch_threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"batching parameter {name} must be at least 1, got {getattr(self, name)}")
        if self.batch_timeout_micros < 0:
            raise ValueError(f"batching parameter batch_timeout_micros must be >= 0, got {self.batch_timeout_micros}")


class _Batch:
    __slots__ = ("key", "tasks", "rows", "deadline")

    def __init__(self, key: tuple, deadline: float):
        self.key = key
        self.tasks: list[tuple[dict, int, asyncio.Future]] = []
        self.rows = 0
        self.deadline = deadline


class Batcher:
    """Merges concurrent calls of `run` (a blocking function of a dict of arrays, returning a
    dict of arrays, every one with the batch on dimension 0); call `submit` from the event loop."""

    def __init__(self, run: Callable[[dict], dict], executor: Executor, parameters: BatchingParameters,
                 where: str):
        self._run = run
        self._executor = executor
        self._parameters = parameters
        self._where = where
        self._open: _Batch | None = None
        self._closed: collections.deque[_Batch] = collections.deque()
        self._running = 0
        self._timer: asyncio.TimerHandle | None = None

    @property
    def queued_batches(self) -> int:
        return len(self._closed) + (self._open is not None)

    async def submit(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        rows, key = _rows_and_key(inputs, self._where)
        limit = self._parameters.max_batch_size
        if rows > limit:
            raise invalid(f"{self._where}: Task size {rows} is larger than maximum input batch size {limit}")
        batch = self._open
        if batch is not None and (batch.key != key or batch.rows + rows > limit):
            self._close()
            batch = None
        if batch is None:
            if self.queued_batches >= self._parameters.max_enqueued_batches:
                raise ServingError("RESOURCE_EXHAUSTED",
                                   f"{self._where}: the batch scheduling queue is full "
                                   f"({self._parameters.max_enqueued_batches} batches waiting)")
            batch = self._open = _Batch(key, time.monotonic() + self._parameters.batch_timeout_micros / 1e6)
            if self._parameters.batch_timeout_micros:
                self._timer = asyncio.get_running_loop().call_later(
                    self._parameters.batch_timeout_micros / 1e6, self._expire, batch)
        future = asyncio.get_running_loop().create_future()
        batch.tasks.append((inputs, rows, future))
        batch.rows += rows
        if batch.rows == limit:
            self._close()
        self._dispatch()
        return await future

    def _close(self) -> None:
        if self._open is not None:
            self._closed.append(self._open)
            self._open = None
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    def _expire(self, batch: _Batch) -> None:
        """The batch's timeout has passed by the event loop's clock: close it, whatever
        time.monotonic() says (uvloop's timers have millisecond resolution and may fire before
        the deadline; the batch would then wait for the next request to be dispatched)."""
        if self._open is batch:
            self._timer = None
            self._close()
        self._dispatch()

    def _dispatch(self) -> None:
        """Start batches while threads are free: closed ones first, then the open one once its
        timeout has passed."""
        while self._running < self._parameters.num_batch_threads:
            if not self._closed and self._open is not None and time.monotonic() >= self._open.deadline:
                self._close()
            if not self._closed:
                return
            self._running += 1
            asyncio.get_running_loop().create_task(self._process(self._closed.popleft()))

    async def _process(self, batch: _Batch) -> None:
        try:
            merged = _merge([inputs for inputs, _, _ in batch.tasks])
            outputs = await asyncio.get_running_loop().run_in_executor(self._executor, self._run, merged)
            parts = _split(outputs, [rows for _, rows, _ in batch.tasks], batch.rows, self._where)
            for (_, _, future), part in zip(batch.tasks, parts):
                if not future.done():
                    future.set_result(part)
        except BaseException as err:  # every waiting request gets the batch's error
            for _, _, future in batch.tasks:
                if not future.done():
                    future.set_exception(err)
            if not isinstance(err, Exception):
                raise
        finally:
            self._running -= 1
            self._dispatch()


def _rows_and_key(inputs: dict[str, np.ndarray], where: str) -> tuple[int, tuple]:
    rows = {array.shape[0] if array.ndim else None for array in inputs.values()}
    if len(rows) != 1 or None in rows:
        raise invalid(f"{where}: batching needs every input to have the same size on dimension 0; "
                      f"got shapes {{{', '.join(f'{k}: {list(v.shape)}' for k, v in inputs.items())}}}")
    key = tuple((name, array.dtype.str, array.shape[1:]) for name, array in sorted(inputs.items()))
    return rows.pop(), key


def _merge(requests: list[dict]) -> dict:
    if len(requests) == 1:
        return requests[0]
    return {name: np.concatenate([r[name] for r in requests]) for name in requests[0]}


def _split(outputs: dict, sizes: list[int], total: int, where: str) -> list[dict]:
    for name, array in outputs.items():
        if not isinstance(array, np.ndarray) or array.ndim == 0 or array.shape[0] != total:
            shape = getattr(array, "shape", type(array).__name__)
            raise ServingError("FAILED_PRECONDITION",
                               f"{where}: output {name!r} has shape {shape}, not the batch of {total} "
                               "rows on dimension 0 that batching splits; serve this signature "
                               "without --enable_batching")
    if len(sizes) == 1:
        return [outputs]
    bounds = np.cumsum(sizes)[:-1]
    pieces = {name: np.split(array, bounds) for name, array in outputs.items()}
    return [{name: pieces[name][i] for name in outputs} for i in range(len(sizes))]
