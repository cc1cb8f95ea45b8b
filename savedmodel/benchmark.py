"""Timing a signature on one of our engines (`savedmodel bench`): latency percentiles and
throughput per batch size, warm-up runs excluded.

Each batch size gets its own random inputs (unknown dimensions set to the batch size, as
`compare` makes them), a few untimed warm-up calls (the first calls of a plan fill caches and
allocate), then timed calls until `iterations` calls or `seconds` have passed, whichever comes
first. Latency is wall-clock time per call; throughput is rows (the batch size) per second
over the timed calls.
"""
from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from savedmodel.compare import random_feeds
from savedmodel.progress import bar
from savedmodel.runtime import load

DEFAULT_SECONDS = 2.0


@dataclass(frozen=True)
class BatchTiming:
    batch: int
    iterations: int
    p50_ms: float
    p90_ms: float
    p99_ms: float
    mean_ms: float
    throughput: float
    """Rows per second: batch size times calls per second."""


@dataclass
class BenchReport:
    model: str
    signature: str
    engine: str
    """The engine that ran (auto resolves to one)."""
    engine_reason: str
    threads: str | None
    """How many threads, and for what (see bounded_threads); None: the engines' defaults."""
    warmup: int
    timings: list[BatchTiming] = field(default_factory=list)


class BenchError(ValueError):
    """A benchmark that cannot be run as asked."""


@contextmanager
def bounded_threads(threads: int | None) -> Iterator[str | None]:
    """Bound the threads the engines compute with inside the block; yields what was bounded,
    for the report (None: nothing, the engines' defaults). numpy's BLAS is bounded through
    threadpoolctl, when installed, and restored afterwards; the native engine's pool reads
    RAYON_NUM_THREADS once, when it starts, so it is bounded only in a process that has not
    run native kernels yet, and stays so (the command line's case)."""
    if threads is None:
        yield None
        return
    os.environ["RAYON_NUM_THREADS"] = str(threads)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield (f"{threads} for the native engine; numpy's BLAS is not bounded without threadpoolctl "
               "(pip install 'savedmodel[cli]')")
        return
    with threadpool_limits(limits=threads):
        yield f"{threads} for the native engine and numpy's BLAS"


def bench(export_dir: str | Path, signature: str = "serving_default", batches: Iterable[int] = (1,), *,
          engine: str = "auto", tags: Iterable[str] = ("serve",), iterations: int | None = None,
          seconds: float | None = None, warmup: int = 3, seed: int = 0, threads: int | None = None,
          allow_file_access: bool = False) -> BenchReport:
    """Time `signature` of the model at `export_dir` for each batch size (see the module
    docstring); `seconds` defaults to DEFAULT_SECONDS when `iterations` is not given.
    `threads` bounds the engines' threads (see bounded_threads)."""
    if seconds is None and iterations is None:
        seconds = DEFAULT_SECONDS
    with bounded_threads(threads) as bounded:
        model = load(export_dir, set(tags), engine=engine, allow_file_access=allow_file_access)
        run = model.signatures[signature]
        batches = list(batches)
        if len(batches) > 1 or batches != [1]:
            _check_batchable(run, signature)
        report = BenchReport(str(export_dir), signature, model.engine, model.engine_reason, bounded, warmup)
        for batch in batches:
            report.timings.append(_batch_timing(run, batch, iterations, seconds, warmup, seed))
    return report


def _batch_timing(run, batch: int, iterations: int | None, seconds: float | None, warmup: int,
                  seed: int) -> BatchTiming:
    feeds = random_feeds(run, batch, seed)
    with bar(f"batch {batch} warm-up", warmup, "calls") as shown:
        for _ in range(warmup):
            run(**feeds)
            shown.update(1)
    return _timing(batch, _timed(run, feeds, iterations, seconds, f"batch {batch}"))


def _check_batchable(run, signature: str) -> None:
    if not any(spec.shape is None or None in spec.shape for spec in run.inputs.values()):
        raise BenchError(f"signature {signature!r} has inputs of fixed shapes only "
                         f"({', '.join(f'{k}: {s.shape}' for k, s in run.inputs.items())}): a batch "
                         "size cannot change them; leave --batch out")


def _timed(run, feeds: dict, iterations: int | None, seconds: float | None, label: str) -> list[float]:
    """Seconds per call, for calls until `iterations` calls or `seconds` have passed."""
    latencies: list[float] = []
    clock = time.perf_counter
    start = clock()
    total, unit = (iterations, "calls") if iterations is not None else (seconds, "s")
    drawn = 0.0
    with bar(label, total, unit) as shown:
        while True:
            before = clock()
            run(**feeds)
            after = clock()
            latencies.append(after - before)
            done = len(latencies) if iterations is not None else min(after - start, seconds)
            shown.update(done - drawn)  # never past the total: the last call may end after it
            drawn = done
            if iterations is not None and len(latencies) >= iterations:
                break
            if seconds is not None and after - start >= seconds:
                break
    return latencies


def _timing(batch: int, latencies: list[float]) -> BatchTiming:
    ms = np.asarray(latencies) * 1000.0
    p50, p90, p99 = np.percentile(ms, [50, 90, 99])
    mean = float(ms.mean())
    return BatchTiming(batch, len(latencies), float(p50), float(p90), float(p99), mean,
                       batch * 1000.0 / mean if mean > 0 else float("inf"))
