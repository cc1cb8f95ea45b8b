"""`run_batch`: a SavedModel signature over a whole dataset on Ray Data, the `savedmodel batch`
command's library side.

Read (formats.read) -> `map_batches(SavedModelPredictor, compute=ActorPoolStrategy(size=actors))`
-> the driver takes the batches back in input order (`preserve_order`) and writes them to one file
(formats.OutputWriter). The driver, not the workers, writes the output, which keeps row order
exact and lets it name a bad row by its file and its index in that file: the predictor records
errors in a column (`on_error="record"`) instead of raising inside a worker, and the driver, which
sees every row in order, counts the rows of each file. The first bad row stops the run, before
anything is renamed into place.

A killed actor is restarted by Ray and its unfinished batches run again (`max_restarts`,
`max_task_retries`); Ray Data keeps only the outputs of tasks that finished, so every row is in
the output exactly once. Both are bounded, so a model that kills its worker on every try fails
the run instead of retrying forever.
"""
from __future__ import annotations

import contextlib
import logging
import os
import re
import socket
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import ray
import ray.data
import ray.exceptions

from savedmodel.ray import formats
from savedmodel.ray.predictor import ERROR_COLUMN, PATH_COLUMN, SavedModelPredictor
from savedmodel.runtime.errors import SavedModelError

BLOCK_BYTES = 8 << 20
"""The largest block Ray Data makes (see _data_context)."""
RETRIES = 3
"""How often a dead actor is restarted, and a batch it was running retried."""


class BatchError(SavedModelError, RuntimeError):
    """The run stopped: a bad row (named by file and row), or a failure Ray reported."""


@dataclass
class BatchResult:
    rows: int
    seconds: float
    output: Path
    columns: list[str] = field(default_factory=list)
    """The output's columns: the input's, then the outputs'."""

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else float("inf")


def run_batch(model_dir: str | Path, input_path: str, output: str | Path, *,
              signature: str = "serving_default", batch_size: int = 256, actors: int = 1,
              cpus_per_actor: float = 1.0, columns: Mapping[str, str | Sequence[str]] | None = None,
              address: str | None = None, engine: str = "auto", overwrite: bool = False,
              predictor: type[SavedModelPredictor] = SavedModelPredictor) -> BatchResult:
    """Run `signature` of `model_dir` over every row of `input_path` and write the rows with the
    outputs added to `output` (see the module docstring). Runs on the Ray this process has
    already joined, if any; else joins the cluster at `address`, or starts a local Ray that ends
    with the run.
    `predictor` is the class the actors run (a subclass, to test an actor that dies)."""
    output = Path(output)
    formats.check_output(output, overwrite)
    model_dir = _absolute(str(model_dir))
    input_path = _absolute(input_path)
    formats.input_format(input_path)
    _probe(model_dir, signature, engine)
    started = _join(address, actors, cpus_per_actor)
    try:
        with _data_context(), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="`ray_remote_args` is deprecated")
            dataset = formats.read(input_path).map_batches(
                predictor, **_map_options(model_dir, signature, columns, engine, batch_size, actors,
                                          cpus_per_actor))
            begin = time.perf_counter()
            rows, written = _write(dataset, output, input_path)
        return BatchResult(rows, time.perf_counter() - begin, output, written)
    finally:
        if started:
            ray.shutdown()


def parse_columns(specs: Sequence[str]) -> dict[str, str | list[str]]:
    """`INPUT=COL` or `INPUT=COL1,COL2,...` (the command line's --column) as `columns` for
    SavedModelPredictor."""
    columns: dict[str, str | list[str]] = {}
    for spec in specs:
        key, sep, names = spec.partition("=")
        parts = [n.strip() for n in names.split(",")]
        if not sep or not key.strip() or not all(parts):
            raise ValueError(f"--column {spec!r}: expected INPUT=COLUMN or INPUT=COL1,COL2,...")
        if key.strip() in columns:
            raise ValueError(f"--column: input {key.strip()!r} is given twice")
        columns[key.strip()] = parts[0] if len(parts) == 1 else parts
    return columns


def _probe(model_dir: str, signature: str, engine: str) -> None:
    """Load the model here first, so that a bad model or signature name is one clear error before
    any actor starts (the actors load it again, each once)."""
    SavedModelPredictor(model_dir, signature, engine=engine)


@contextlib.contextmanager
def _data_context() -> Iterator[None]:
    """Ray Data's settings for the run, restored after it: blocks in input order
    (`preserve_order`), and blocks of at most BLOCK_BYTES, so that the actors share the work and
    the first rows reach the output early (by default Ray reads small files into one block of up
    to 128 MiB, which one actor would then process alone)."""
    context = ray.data.DataContext.get_current()
    saved = context.execution_options.preserve_order, context.target_max_block_size
    context.execution_options.preserve_order, context.target_max_block_size = True, BLOCK_BYTES
    try:
        yield
    finally:
        context.execution_options.preserve_order, context.target_max_block_size = saved


def _map_options(model_dir, signature, columns, engine, batch_size, actors, cpus_per_actor) -> dict:
    return dict(
        fn_constructor_args=(model_dir, signature),
        fn_constructor_kwargs={"columns": dict(columns or {}), "engine": engine, "on_error": "record"},
        batch_size=batch_size, batch_format="numpy", zero_copy_batch=True,
        compute=ray.data.ActorPoolStrategy(size=actors), num_cpus=cpus_per_actor,
        # Ray 2.60 takes these only as `ray_remote_args` (deprecated, no named parameter yet); its
        # own defaults are unbounded (-1), which would retry a model that kills its worker forever.
        max_restarts=RETRIES, max_task_retries=RETRIES)


def _write(dataset: ray.data.Dataset, output: Path, source: str) -> tuple[int, list[str]]:
    """Take the mapped batches in order, stop at the first bad row, write the rest; the number of
    rows and the columns written."""
    rows_per_file: dict[str, int] = {}
    total, columns = 0, []
    with formats.OutputWriter(output) as writer:
        try:
            for batch in dataset.iter_batches(batch_format="numpy", batch_size=None):
                _check_rows(batch, rows_per_file)
                batch.pop(ERROR_COLUMN, None)
                batch.pop(PATH_COLUMN, None)
                writer.write(batch)
                total += _length(batch)
                columns = columns or list(batch)
        except ray.exceptions.RayError as err:
            raise BatchError(f"reading or mapping {source}: {_ray_failure(err)}") from None
        writer.commit()
    return total, columns


def _check_rows(batch: dict[str, np.ndarray], rows_per_file: dict[str, int]) -> None:
    """Count each file's rows; raise BatchError for the first row with an error."""
    paths = batch.get(PATH_COLUMN)
    errors = batch.get(ERROR_COLUMN)
    for row in range(_length(batch)):
        path = str(paths[row]) if paths is not None else "the input"
        index = rows_per_file.get(path, 0)
        rows_per_file[path] = index + 1
        if errors is not None and errors[row]:
            raise BatchError(f"{path}, row {index}: {errors[row]}")


def _length(batch: dict[str, np.ndarray]) -> int:
    return len(next(iter(batch.values()))) if batch else 0


def _ray_failure(err: Exception) -> str:
    """One line for a failure Ray reports, not a worker's stack trace: the exception raised in
    the worker (Ray passes it on as the text of its traceback), named by its message alone when
    it is one of ours."""
    if _chain_has(err, ray.exceptions.ActorDiedError):
        return (f"a model actor died {RETRIES + 1} times (Ray restarted it {RETRIES} times): the "
                "model may need more memory than a worker has, or crash on some input")
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    for line in lines:
        raised = _RAISED.match(line)
        if raised and raised["name"] not in _RAY_WRAPPERS:
            ours = (raised["module"] or "").startswith("savedmodel.")
            return raised["message"] if ours else f"{raised['name']}: {raised['message']}"
    return lines[-1] if lines else type(err).__name__


_RAISED = re.compile(r"^(?P<module>[\w.]+\.)?(?P<name>\w+(?:Error|Exception)): (?P<message>.+)$")
_RAY_WRAPPERS = {"UserCodeException", "RayTaskError"}


def _chain_has(err: BaseException, kind: type) -> bool:
    seen = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, kind):
            return True
        seen.add(id(err))
        err = getattr(err, "cause", None) or err.__cause__
    return False


def _join(address: str | None, actors: int, cpus_per_actor: float) -> bool:
    """Connect to Ray; True when this call started a local instance (to shut down after)."""
    if ray.is_initialized():
        return False
    if address:
        _check_reachable(address)
        ray.init(address=address, logging_level=logging.WARNING)
        return False
    # One logical CPU beyond the actors' own, so that reading is never starved behind them.
    cpus = max(os.cpu_count() or 1, int(actors * cpus_per_actor + 0.999) + 1)
    ray.init(num_cpus=cpus, include_dashboard=False, logging_level=logging.WARNING)
    return True


def _check_reachable(address: str, seconds: float = 10.0) -> None:
    """Fail fast on a cluster address nothing answers at: Ray itself keeps retrying for minutes."""
    host, sep, port = address.split("://")[-1].rpartition(":")
    if not sep or not port.isdigit():
        return  # "auto", or a form Ray resolves itself
    try:
        socket.create_connection((host, int(port)), timeout=seconds).close()
    except OSError as err:
        raise BatchError(f"cannot reach the Ray cluster at {address}: {err.strerror or err}") from None


def _absolute(path: str) -> str:
    """Local paths as absolute ones: Ray's workers do not run in this process's directory."""
    return path if "://" in path else str(Path(path).resolve())
