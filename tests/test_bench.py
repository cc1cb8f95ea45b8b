"""`savedmodel bench` (savedmodel.benchmark): the report's structure, and that the engine it
names is the engine that ran. No timed assertions: only how the numbers relate."""
from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from conftest import SAVEDMODELS
from savedmodel import benchmark
from savedmodel.cli import main
from savedmodel.runtime import load, native

KERAS_CNN = next(p for p in SAVEDMODELS if p.name == "keras_cnn")
SEEDS = next(p for p in SAVEDMODELS if p.name == "seeds")
ENGINES = ["numpy", "auto"] + (["native"] if native.available() else [])


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _spied_engines(monkeypatch) -> list[str]:
    """The engines of the models benchmark loads, as the runtime says (its model classes)."""
    used = []

    def spy(*args, **kwargs):
        model = load(*args, **kwargs)
        used.append("native" if isinstance(model, native.NativeModel) else "numpy")
        return model
    monkeypatch.setattr(benchmark, "load", spy)
    return used


@pytest.mark.parametrize("engine", ENGINES)
def test_json_report_names_the_engine_that_ran(monkeypatch, engine):
    used = _spied_engines(monkeypatch)
    result = _run("bench", KERAS_CNN, "--engine", engine, "--batch", "1,4", "--iterations", "5", "--warmup", "1",
                  "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert used == [report["engine"]]
    if engine != "auto":
        assert report["engine"] == engine
    assert report["schema"] == "savedmodel.bench/1" and report["signature"] == "serving_default"
    assert [b["batch"] for b in report["batches"]] == [1, 4]
    for timing in report["batches"]:
        assert timing["iterations"] == 5
        assert 0 < timing["p50_ms"] <= timing["p90_ms"] <= timing["p99_ms"]
        assert timing["throughput"] == pytest.approx(timing["batch"] * 1000 / timing["mean_ms"])


def test_text_report_prints_the_engine_and_a_row_per_batch(monkeypatch):
    used = _spied_engines(monkeypatch)
    result = _run("bench", KERAS_CNN, "--batch", "2,3", "--iterations", "3")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert f": engine {used[0]} (" in lines[0]
    assert lines[1].startswith("threads: engine defaults")
    assert lines[2].split() == ["batch", "calls", "p50", "ms", "p90", "ms", "p99", "ms", "mean", "ms", "rows/s"]
    assert [line.split()[:2] for line in lines[3:]] == [["2", "3"], ["3", "3"]]


def test_seconds_bound_the_timed_calls():
    report = benchmark.bench(KERAS_CNN, batches=[1], engine="numpy", seconds=0.05, warmup=0)
    (timing,) = report.timings
    assert timing.iterations >= 1 and timing.iterations * timing.mean_ms / 1000 < 1.0


def test_fixed_shapes_take_no_batch_size():
    result = _run("bench", SEEDS, "--signature-def", "power", "--batch", "8", "--iterations", "1")
    assert result.exit_code == 1 and "fixed shapes only" in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize("batch", ["0", "a", ",", "1,-2"])
def test_bad_batch_sizes_are_usage_errors(batch):
    result = _run("bench", KERAS_CNN, "--batch", batch)
    assert result.exit_code == 2 and "--batch" in result.output


def test_unknown_signature_is_one_line():
    result = _run("bench", KERAS_CNN, "--signature-def", "nope", "--iterations", "1")
    assert result.exit_code == 1 and "available: serve, serving_default" in result.output


def test_threads_are_bounded_for_the_run_and_reported(monkeypatch):
    """On the numpy engine, so that no native pool starts here with one thread for the rest of
    the test session; the variable the native pool reads is restored by monkeypatch."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    monkeypatch.setenv("RAYON_NUM_THREADS", "")
    seen = []
    monkeypatch.setattr(benchmark, "_timing", lambda batch, latencies: seen.append(
        [info["num_threads"] for info in threadpoolctl.threadpool_info()]) or benchmark.BatchTiming(
        batch, len(latencies), 1.0, 1.0, 1.0, 1.0, 1.0))
    before = [info["num_threads"] for info in threadpoolctl.threadpool_info()]
    report = benchmark.bench(KERAS_CNN, engine="numpy", iterations=1, warmup=0, threads=1)
    assert report.threads == "1 for the native engine and numpy's BLAS"
    assert before and seen == [[1] * len(before)] and os.environ["RAYON_NUM_THREADS"] == "1"
    assert [info["num_threads"] for info in threadpoolctl.threadpool_info()] == before
