"""`savedmodel batch`: a signature over a whole dataset on Ray Data (savedmodel.ray.run_batch).

Ray is an optional extra: the command imports it only when it runs, and says how to install it
when it is missing.
"""
from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

import click

from savedmodel.cli.completion import complete_signatures
from savedmodel.cli.errors import reports_errors
from savedmodel.runtime.engines import ENGINES


@click.command()
@click.argument("model", type=click.Path(path_type=Path))
@click.option("--input", "input_path", required=True, metavar="PATH",
              help="Parquet, CSV, JSON lines (.jsonl/.json), .npy or .npz file, or a folder of files "
                   "of one of these formats, or a URI Ray's readers take (s3://...).")
@click.option("--output", required=True, type=click.Path(path_type=Path), metavar="PATH",
              help="The file to write: the input's columns and the outputs, in input order; "
                   ".csv, .jsonl/.json or .npz by its suffix, Parquet otherwise.")
@click.option("--signature", default="serving_default", show_default=True, shell_complete=complete_signatures,
              help="The signature to run.")
@click.option("--batch-size", type=click.IntRange(min=1), default=256, show_default=True,
              help="Rows per call of the model.")
@click.option("--address", metavar="RAY_ADDRESS",
              help="Join this Ray cluster (host:port, or `auto`); without it a local Ray starts "
                   "and stops with the command.")
@click.option("--actors", type=click.IntRange(min=1), default=1, show_default=True,
              help="Ray actors running the model, each loading it once.")
@click.option("--cpus-per-actor", type=click.FloatRange(min=0, min_open=True), default=1.0,
              show_default=True, help="Logical CPUs Ray reserves for each actor.")
@click.option("--column", "column_specs", multiple=True, metavar="INPUT=COL[,COL...]",
              help="Feed signature input INPUT from column COL, or from several one-value columns "
                   "stacked into a vector (repeatable); by default an input reads the column of "
                   "its own name.")
@click.option("--engine", type=click.Choice(ENGINES), default="auto", show_default=True,
              help="The engine each actor runs the model on (see `savedmodel run --help`).")
@click.option("--overwrite", is_flag=True, help="Replace the output file if it exists.")
@reports_errors
def batch(model: Path, input_path: str, output: Path, signature: str, batch_size: int,
          address: str | None, actors: int, cpus_per_actor: float, column_specs: tuple[str, ...],
          engine: str, overwrite: bool) -> None:
    """Run one signature of the SavedModel in MODEL over every row of --input on Ray Data and
    write the rows, with the outputs added as columns, to --output.

    Progress goes to stderr; at the end, the row count and rows per second to stdout. A row the
    model cannot run stops the command with its file and row index (from 0, not counting a CSV
    header). MODEL and local inputs must be readable at the same path on every node of a cluster.
    """
    result = _run(model, input_path, output, column_specs, signature=signature,
                  batch_size=batch_size, actors=actors, cpus_per_actor=cpus_per_actor,
                  address=address, engine=engine, overwrite=overwrite)
    click.echo(f"{result.rows} rows in {result.seconds:.2f} s ({result.rows_per_second:.1f} rows/s) "
               f"-> {result.output} (columns: {', '.join(result.columns)})")


_TRACE_LOGGERS = ("ray.data.exceptions", "ray.data._internal.execution.streaming_executor_state")
"""Where Ray Data logs a failed task's stack trace; the command reports the failure in one line."""


def _run(model: Path, input_path: str, output: Path, column_specs: tuple[str, ...], **options):
    """savedmodel.ray.run_batch, imported only now: Ray is an optional extra."""
    if importlib.util.find_spec("ray") is None:
        raise click.ClickException("`savedmodel batch` needs Ray: pip install 'savedmodel[ray]'")
    from savedmodel.ray import parse_columns, run_batch
    for name in _TRACE_LOGGERS:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    return run_batch(model, input_path, output, columns=parse_columns(column_specs), **options)
