"""No failure of the `savedmodel` command prints a traceback: every error is one `Error:` line
on stderr with exit status 1, usage errors exit with 2, and a closed pipe exits with 0."""
from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from conftest import CHECKPOINTS, SAVEDMODELS
from savedmodel.cli import main

SEEDS = next(p for p in SAVEDMODELS if p.name == "seeds")

COMMANDS = {
    # command: (arguments, the module attribute it calls first, which the test makes fail)
    "demo": ([], "savedmodel.cli.demo._round_trip"),
    "show": ([SEEDS], "savedmodel.cli.show.describe_model"),
    "run": ([SEEDS, "--signature-def", "dense"], "savedmodel.cli.run_commands.load"),
    "graph": ([SEEDS], "savedmodel.cli.graph.read_saved_model"),
    "ops": ([SEEDS], "savedmodel.cli.inspect_commands.describe_ops"),
    "ckpt": ([SEEDS], "savedmodel.cli.inspect_commands.describe_checkpoint"),
    "diff": ([SEEDS, SEEDS], "savedmodel.cli.inspect_commands.diff_models"),
    "compare": ([SEEDS], "savedmodel.cli.run_commands.load"),
    "summary": ([SEEDS], "savedmodel.cli.summary.summarize"),
    "view": ([SEEDS], "savedmodel.cli.view.write_view"),
    "bench": ([SEEDS], "savedmodel.cli.bench.run_bench"),
    "serve": (["--model_base_path", SEEDS.parent], "savedmodel.serve.server.run"),
    "batch": ([SEEDS, "--input", "in.parquet", "--output", "out.parquet"], "savedmodel.cli.batch._run"),
}


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], prog_name="savedmodel")


def test_every_command_is_covered():
    assert set(COMMANDS) == set(main.commands)


def _raiser(error: BaseException):
    def fail(*args, **kwargs):
        raise error
    return fail


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("error, expected", [
    (IndexError("list index out of range"),
     "internal error while running 'savedmodel {command}': IndexError: list index out of range (this is a "
     "defect of savedmodel: please report it with the command and the file)"),
    (MemoryError(), "out of memory while running 'savedmodel {command}': the input needs more memory"),
    (RecursionError("maximum recursion depth exceeded"),
     "the input is nested too deeply for 'savedmodel {command}' (Python's recursion limit was reached)"),
    (AttributeError("'NoneType' object has no attribute 'x'"),
     "internal error while running 'savedmodel {command}': AttributeError: 'NoneType' object has no attribute 'x'"),
])
def test_unexpected_exceptions_are_one_error_line(monkeypatch, command, error, expected):
    args, target = COMMANDS[command]
    module, name = target.rsplit(".", 1)
    monkeypatch.setattr(importlib.import_module(module), name, _raiser(error))
    result = _run(command, *args)
    assert result.exit_code == 1
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: " + expected.format(command=command)), result.stderr


def test_usage_errors_exit_with_2():
    result = _run("show", SEEDS, "--no-such-option")
    assert result.exit_code == 2 and "Error: No such option '--no-such-option'" in result.stderr


def test_help_documents_the_exit_statuses():
    text = " ".join(_run("--help").stdout.split())
    assert "Exit status: 0 on success; 1 on an error" in text
    assert "2 on a usage error" in text


def test_deeply_nested_literal_is_one_error_line():
    result = _run("run", SEEDS, "--signature-def", "dense", "--input-exprs", "x=" + "-" * 100_000 + "1")
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: --input-exprs: the value of 'x' is nested too deeply to parse as a Python literal: "
        f"'{'-' * 60}... (100001 characters)'\n")


@pytest.mark.parametrize("text", ["- " * 2_000 + "1", "2**" * 30_000 + "1", "1+" * 30_000 + "1",
                                  "not " * 30_000 + "1", "[" * 300 + "]" * 300, "{[1]: 2}"])
def test_other_bad_literals_are_one_error_line(text):
    result = _run("run", SEEDS, "--signature-def", "dense", "--input-exprs", f"x={text}")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: --input-exprs: the value of 'x' is ")
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize("command", [
    ["ckpt", CHECKPOINTS / "single" / "ckpt"],
    ["ckpt", CHECKPOINTS / "single" / "ckpt", "--tensor", "model/big/.ATTRIBUTES/VARIABLE_VALUE"],
    ["show", SEEDS, "--all"],
    ["graph", SEEDS, "--expand"],
], ids=lambda c: c[0] + (" --tensor" if "--tensor" in c else ""))
def test_a_closed_pipe_exits_with_0(command):
    """`savedmodel ... | head -1` where the reader is gone before the first write (the
    deterministic form of a reader that stops early)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    process = subprocess.run([sys.executable, "-c", "from savedmodel.cli import main; main()",
                              *map(str, command)], stdout=write_end, stderr=subprocess.PIPE, timeout=120)
    os.close(write_end)
    assert (process.returncode, process.stderr) == (0, b"")
