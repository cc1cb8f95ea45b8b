"""`savedmodel bench`: latency percentiles and throughput of a signature on our engines."""
from __future__ import annotations

import json
from pathlib import Path

import click

from savedmodel.benchmark import BenchReport, bench as run_bench
from savedmodel.cli.completion import complete_signatures, complete_tag_sets
from savedmodel.cli.errors import reports_errors
from savedmodel.cli.progress import progress_option
from savedmodel.runtime.engines import ENGINES

SCHEMA = "savedmodel.bench/1"


def _batches(context, parameter, text: str) -> list[int]:
    """--batch's value: positive sizes separated by commas."""
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        sizes = []
    if not sizes or any(size < 1 for size in sizes):
        raise click.BadParameter(f"expected positive integers separated by commas, got {text!r}")
    return sizes


@click.command()
@click.argument("export_dir", type=click.Path(path_type=Path))
@click.option("--signature-def", "--signature_def", "--signature", "signature", default="serving_default",
              show_default=True, shell_complete=complete_signatures, help="The signature to time.")
@click.option("--tag-set", "--tag_set", "tags", default="serve", show_default=True,
              shell_complete=complete_tag_sets)
@click.option("--batch", "batches", default="1", show_default=True, metavar="N[,N...]", callback=_batches,
              help="Batch sizes (the size of the inputs' unknown dimensions), each timed in turn.")
@click.option("--engine", type=click.Choice(ENGINES), default="auto", show_default=True,
              help="native, numpy, or auto (native when it has every op); the report names the "
                   "engine that ran.")
@click.option("--threads", type=click.IntRange(min=1), metavar="N",
              help="Compute with N threads: the native engine's pool and, with threadpoolctl "
                   "installed, numpy's BLAS (default: theirs, usually one per core).")
@click.option("--iterations", type=click.IntRange(min=1), metavar="N",
              help="Timed calls per batch size (at most; --seconds may end them sooner).")
@click.option("--seconds", type=click.FloatRange(min=0, min_open=True), metavar="S",
              help="Time spent on timed calls per batch size (default 2 when --iterations is not given).")
@click.option("--warmup", default=3, show_default=True, type=click.IntRange(min=0),
              help="Untimed calls before timing each batch size.")
@click.option("--seed", default=0, show_default=True, help="Seed of the random inputs.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--allow-file-access", is_flag=True, help="As for `run`.")
@progress_option
@reports_errors
def bench(export_dir: Path, signature: str, tags: str, batches: list[int], engine: str, threads: int | None,
          iterations: int | None, seconds: float | None, warmup: int, seed: int, as_json: bool,
          allow_file_access: bool) -> None:
    """Time a signature of the SavedModel (or GraphDef file) in EXPORT_DIR on our runtime:
    latency percentiles (p50, p90, p99) and throughput for each batch size, on random inputs,
    after untimed warm-up calls. Prints the engine that ran."""
    report = run_bench(export_dir, signature, batches, engine=engine,
                       tags={t.strip() for t in tags.split(",") if t.strip()}, iterations=iterations,
                       seconds=seconds, warmup=warmup, seed=seed, threads=threads,
                       allow_file_access=allow_file_access)
    if as_json:
        click.echo(json.dumps(_as_dict(report), indent=1))
        return
    for line in _lines(report):
        click.echo(line)


def _as_dict(report: BenchReport) -> dict:
    return {"schema": SCHEMA, "model": report.model, "signature": report.signature, "engine": report.engine,
            "engine_reason": report.engine_reason, "threads": report.threads, "warmup": report.warmup,
            "batches": [timing.__dict__ for timing in report.timings]}


def _lines(report: BenchReport) -> list[str]:
    why = f" ({report.engine_reason})" if report.engine_reason else ""
    lines = [f"{report.model} signature {report.signature!r}: engine {report.engine}{why}",
             f"threads: {report.threads or 'engine defaults'}; warm-up: {report.warmup} calls per batch size",
             f"{'batch':>6} {'calls':>7} {'p50 ms':>9} {'p90 ms':>9} {'p99 ms':>9} {'mean ms':>9} {'rows/s':>10}"]
    for t in report.timings:
        lines.append(f"{t.batch:>6} {t.iterations:>7} {t.p50_ms:>9.3f} {t.p90_ms:>9.3f} {t.p99_ms:>9.3f} "
                     f"{t.mean_ms:>9.3f} {t.throughput:>10.1f}")
    return lines
