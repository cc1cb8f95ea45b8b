"""`savedmodel show DIR --all` against `saved_model_cli show --dir DIR --all`, wall clock of
whole commands (fresh processes), in one run. Prints medians and the ratio; asserts nothing.

Usage: python bench/bench_show.py [--repeats N] [DIR]   (needs TensorFlow for saved_model_cli)
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = ROOT / "tests/data/reference/savedmodels/keras_cnn"


def tool(name: str) -> str:
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if not found:
        raise SystemExit(f"{name} not found (install the package; saved_model_cli comes with TensorFlow)")
    return found


def wall_clock(command: list[str], repeats: int) -> float:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, env=env)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    ours = wall_clock([tool("savedmodel"), "show", str(args.model), "--all"], args.repeats)
    theirs = wall_clock([tool("saved_model_cli"), "show", "--dir", str(args.model), "--all"], args.repeats)
    print(f"show --all on {args.model.name}: savedmodel {ours:.3f} s, saved_model_cli {theirs:.3f} s, "
          f"ratio {theirs / ours:.1f}x")


if __name__ == "__main__":
    main()
