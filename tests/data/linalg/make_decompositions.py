"""Record Qr, Svd and SelfAdjointEigV2 with TensorFlow for tests/test_linalg_decompositions.py.

Their vectors are unique only up to sign (or phase), and TensorFlow leaves Svd's u and v and
SelfAdjointEigV2's v uninitialized when not asked for them, so these records are compared by
invariants instead of element by element and live outside tests/data/ops (which every engine
replays exactly). Same record format as tests/data/ops, written by its recorder.

Usage: python tests/data/linalg/make_decompositions.py   (needs TensorFlow 2.21)
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def _recorder():
    path = HERE.parent / "ops" / "make_op_fixtures.py"
    spec = importlib.util.spec_from_file_location("make_op_fixtures", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    recorder = _recorder()
    arrays: dict = {}
    cases = recorder._load_cases(HERE / "cases_decompositions.py")
    records = [recorder._record(spec, i, arrays) for i, spec in enumerate(cases)]
    (HERE / "decompositions.json").write_text(json.dumps(records, indent=1) + "\n")
    np.savez_compressed(HERE / "decompositions.npz", **arrays)
    print(f"decompositions: {len(records)} cases")


if __name__ == "__main__":
    main()
