"""The README's Python snippets run, from the repository root where the README runs them.

Python started in the root imports the source folder `savedmodel/` as the package (the current
directory comes first on sys.path), so the snippets must work with that folder alone, as after
`bash tools/main-job`'s non-editable install: they run with `python -S`, the root and then the
environment's site-packages on PYTHONPATH, which keeps out the import hook an editable install
adds.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
PYTHON_BLOCKS = re.findall(r"^```python\n(.*?)^```$", README, re.S | re.M)


def test_readme_has_python_snippets():
    assert len(PYTHON_BLOCKS) >= 5


@pytest.mark.parametrize("code", PYTHON_BLOCKS, ids=lambda c: c.splitlines()[0][:40])
def test_python_snippet_runs_from_the_root(code, tmp_path):
    """Each snippet as a file (AutoGraph reads the source), with the root first on the path as
    for `python` started there."""
    script = tmp_path / "snippet.py"
    script.write_text(code)
    environment = {"PYTHONPATH": f"{ROOT}{os.pathsep}{sysconfig.get_paths()['purelib']}",
                   "PATH": os.environ.get("PATH", "")}
    result = subprocess.run([sys.executable, "-S", str(script)], text=True, cwd=ROOT,
                            capture_output=True, env=environment, timeout=300)
    assert result.returncode == 0, result.stderr
