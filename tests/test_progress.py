"""Progress bars (savedmodel.progress, runtime.progress): drawn on stderr for long work when
asked or when stderr is a terminal, never on stdout, never by default with --json."""
from __future__ import annotations

import json

from click.testing import CliRunner

from conftest import SAVEDMODELS
from savedmodel import progress
from savedmodel.cli import main
from savedmodel.runtime import load
from savedmodel.runtime import progress as runtime_progress

KERAS_CNN = next(p for p in SAVEDMODELS if p.name == "keras_cnn")


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


class _Recorder:
    def __init__(self):
        self.events = []

    def start(self, task, total, unit):
        self.events.append(("start", task, total, unit))

    def advance(self, task, amount):
        self.events.append(("advance", task, amount))

    def finish(self, task):
        self.events.append(("finish", task))


def test_restoring_variables_reports_each_variable():
    recorder = _Recorder()
    with runtime_progress.reporting(recorder):
        model = load(KERAS_CNN, engine="numpy")
    count = len(model.meta_graph.object_graph_def.nodes) and sum(
        node.HasField("variable") for node in model.meta_graph.object_graph_def.nodes)
    assert recorder.events[0] == ("start", "restoring variables", count, "variables")
    assert recorder.events[1:-1] == [("advance", "restoring variables", 1)] * count
    assert recorder.events[-1] == ("finish", "restoring variables")


def test_no_reporter_no_events():
    recorder = _Recorder()
    with runtime_progress.reporting(recorder):
        pass
    load(KERAS_CNN, engine="numpy")
    assert recorder.events == []


def test_bars_go_to_stderr_when_forced(monkeypatch):
    monkeypatch.setattr(progress, "DELAY", 0)
    result = _run("bench", KERAS_CNN, "--engine", "numpy", "--iterations", "50", "--progress", "always", "--json")
    assert result.exit_code == 0, result.output
    assert "batch 1" in result.stderr and "calls" in result.stderr
    assert json.loads(result.stdout)["engine"] == "numpy"  # stdout stays the JSON alone


def test_no_bars_without_a_terminal_or_with_json(monkeypatch):
    monkeypatch.setattr(progress, "DELAY", 0)
    for extra in ([], ["--json"]):
        result = _run("bench", KERAS_CNN, "--engine", "numpy", "--iterations", "50", *extra)
        assert result.exit_code == 0 and "batch 1" not in result.stderr
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    assert progress.should_show("auto") and not progress.should_show("auto", as_json=True)
    assert not progress.should_show("never") and progress.should_show("always", as_json=True)


def test_compare_shows_a_bar_over_signatures(monkeypatch):
    monkeypatch.setattr(progress, "DELAY", 0)
    result = _run("compare", KERAS_CNN, "--against", "numpy", "--engine", "numpy", "--progress", "always")
    assert result.exit_code == 0, result.output
    assert "signatures: " in result.stderr and "0/2" in result.stderr  # drawn as it starts
