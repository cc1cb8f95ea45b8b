"""The README's examples run, from the repository root where the README runs them: each
`console` block prints what it shows, and each Python snippet runs.

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
CONSOLE_COMMANDS = [tuple(command.partition("\n")[::2])
                    for block in re.findall(r"^```console\n(.*?)^```$", README, re.S | re.M)
                    for command in re.split(r"^\$ ", block, flags=re.M)[1:]]
"""(command, the output the README shows for it)"""
MEASURED = re.compile(r"\d\.\d+e[-+]\d+")
"""Differences `compare` measures against TensorFlow: they vary with the CPU's float summation
order, so only their presence is compared."""


@pytest.mark.parametrize("command, shown", CONSOLE_COMMANDS, ids=[c[:60] for c, _ in CONSOLE_COMMANDS])
def test_console_command_prints_what_the_readme_shows(command, shown, tmp_path, request):
    """Run in a scratch directory that sees the repository's tests/ (files a command writes
    land there), with this environment's `savedmodel` first on PATH."""
    if command.startswith("savedmodel compare"):
        request.getfixturevalue("tf")
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PATH": path}, timeout=300)
    assert MEASURED.sub("<measured>", done.stdout) == MEASURED.sub("<measured>", shown), done.stderr


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
