"""`savedmodel batch` on Ray Data against a plain in-process loop: rows/s for 20,000 rows through
keras_cnn with 1 and 2 actors, beside a loop calling the signature over the same batches in this
process. Prints rows/s and what Ray adds per batch; asserts nothing.

What Ray adds: each actor count runs on all the rows and on one batch (the fixed cost: actors
starting and loading the model, the dataset plan, the output file), each the median of
`--repeats` runs after one run that warms Ray's worker pool up. The overhead per batch is the full
run's wall clock minus the loop's, divided by the number of batches: everything the pipeline adds
to the model's own work (the fixed cost, reading the Parquet input, moving batches to the actors
and back, writing the output, the input's images too: 3 KB a row), less what a second actor
gains by computing in parallel. "Beyond the fixed cost" divides the rows by the full run's time
less the one-batch run's: the rate a long run tends to.

Usage: python bench/bench_batch.py [--rows N] [--batch-size N]   (needs the `ray` extra)
"""
from __future__ import annotations

import argparse
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import ray

from savedmodel.ray import run_batch
from savedmodel.runtime import load

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "tests/data/reference/savedmodels/keras_cnn"
FILES = 8
"""The input is split into this many Parquet files, so that both actors get work from the start."""


def write_input(folder: Path, images: np.ndarray, files: int) -> None:
    folder.mkdir()
    for number, part in enumerate(np.array_split(images, files)):
        table = pa.table({"image": pa.FixedShapeTensorArray.from_numpy_ndarray(part)})
        pq.write_table(table, folder / f"part-{number:02}.parquet")


def in_process(images: np.ndarray, batch_size: int) -> float:
    signature = load(MODEL).signatures["serving_default"]
    start = time.perf_counter()
    for first in range(0, len(images), batch_size):
        signature(image=images[first:first + batch_size])
    return time.perf_counter() - start


def on_ray(source: Path, output: Path, actors: int, batch_size: int) -> float:
    start = time.perf_counter()
    result = run_batch(MODEL, str(source), output, batch_size=batch_size, actors=actors,
                       cpus_per_actor=0.5, overwrite=True)
    assert result.rows > 0
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    images = np.random.default_rng(0).random((args.rows, 28, 28, 1), dtype=np.float32)
    batches = -(-args.rows // args.batch_size)
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        write_input(scratch / "all", images, FILES)
        write_input(scratch / "one", images[:args.batch_size], 1)
        loop = in_process(images, args.batch_size)
        print(f"keras_cnn, {args.rows} rows in {batches} batches of {args.batch_size}, "
              f"{os.cpu_count()} CPUs")
        print(f"  in-process loop: {loop:7.2f} s  {args.rows / loop:8.0f} rows/s  "
              f"{1000 * loop / batches:6.2f} ms/batch")
        ray.init(num_cpus=max(os.cpu_count() or 1, 2), include_dashboard=False,
                 logging_level=logging.WARNING)
        try:
            on_ray(scratch / "one", scratch / "out.parquet", 2, args.batch_size)
            for actors in (1, 2):
                fixed, total = (statistics.median(
                    on_ray(scratch / part, scratch / "out.parquet", actors, args.batch_size)
                    for _ in range(args.repeats)) for part in ("one", "all"))
                overhead = (total - loop) / batches
                steady = args.rows / max(total - fixed, 1e-9)
                print(f"  ray, {actors} actor(s): {total:7.2f} s  {args.rows / total:8.0f} rows/s  "
                      f"overhead {1000 * overhead:6.2f} ms/batch; fixed cost {fixed:.2f} s, "
                      f"{steady:.0f} rows/s beyond it")
        finally:
            ray.shutdown()


if __name__ == "__main__":
    main()
