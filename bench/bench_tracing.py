"""The guide's "Seeing the speed-up" measurement, in one run: `power(x, 100)` called 1000 times,
eagerly and as a graph, with savedmodel and with TensorFlow, beside a plain numpy loop; and the
time to trace a function of 1000 nodes. Prints times and ratios; asserts nothing.

Usage: python bench/bench_tracing.py [--calls N]   (TensorFlow optional: skipped if missing)
"""
from __future__ import annotations

import argparse
import importlib
import os
import timeit

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def power_with(library):
    def power(x, y):
        result = library.eye(10, dtype=library.int32)
        for _ in range(y):
            result = library.matmul(x, result)
        return result
    return power


def numpy_power(x, y):
    result = np.eye(10, dtype=np.int32)
    for _ in range(y):
        result = x @ result
    return result


def timings(library, x, calls: int) -> tuple[float, float]:
    power = power_with(library)
    graph = library.function(power)
    eager = timeit.timeit(lambda: power(x, 100), number=calls)
    graph(x, 100)
    return eager, timeit.timeit(lambda: graph(x, 100), number=calls)


def trace_seconds(library, nodes: int = 1000) -> float:
    def chain(x):
        for _ in range(nodes):
            x = library.matmul(x, x)
        return x
    spec = library.TensorSpec([2, 2], library.float32)
    return timeit.timeit(lambda: library.function(chain).get_concrete_function(spec), number=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    args = parser.parse_args()
    import savedmodel as sm

    values = np.random.default_rng(0).integers(-1, 2, (10, 10)).astype(np.int32)
    numpy_time = timeit.timeit(lambda: numpy_power(values, 100), number=args.calls)
    rows = {"savedmodel": timings(sm, sm.constant(values), args.calls)}
    try:
        tf = importlib.import_module("tensorflow")
        rows["tensorflow"] = timings(tf, tf.constant(values), args.calls)
    except ImportError:
        tf = None
    print(f"power(x, 100) x {args.calls}: numpy loop {numpy_time:.3f} s")
    for name, (eager, graph) in rows.items():
        print(f"  {name:<11} eager {eager:.3f} s, graph {graph:.3f} s "
              f"(graph / numpy {graph / numpy_time:.2f}x)")
    if tf is not None:
        ours, theirs = rows["savedmodel"], rows["tensorflow"]
        print(f"  TensorFlow / savedmodel: eager {theirs[0] / ours[0]:.2f}x, graph {theirs[1] / ours[1]:.2f}x")
    print(f"tracing a 1000-node function: savedmodel {trace_seconds(sm) * 1e3:.0f} ms"
          + (f", TensorFlow {trace_seconds(tf) * 1e3:.0f} ms" if tf is not None else ""))


if __name__ == "__main__":
    main()
