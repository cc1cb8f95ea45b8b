"""The scripts in tools/ parse their arguments: `--help` prints usage and writes nothing."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("tool", ["gen_op_docs.py", "gen_protos.py"])
def test_help_prints_usage_and_writes_nothing(tool, tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "tools" / tool), "--help"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: {tool} [-h]")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("tool", ["gen_op_docs.py", "gen_protos.py"])
def test_an_unknown_option_is_a_usage_error(tool, tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "tools" / tool), "--bogus"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "unrecognized arguments: --bogus" in done.stderr
    assert list(tmp_path.iterdir()) == []
