"""The binary NodeDefs the native engine replays (`tests/data/ops/<group>.nodes.pb`) are the
ones `make_native_nodes.py` derives from the current JSON fixtures."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

OPS = Path(__file__).parent / "data" / "ops"


def _maker():
    spec = importlib.util.spec_from_file_location("make_native_nodes", OPS / "make_native_nodes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("group", sorted(p.stem for p in OPS.glob("*.json")))
def test_native_nodes_are_current(group):
    assert (OPS / f"{group}.nodes.pb").read_bytes() == _maker().nodes_of(OPS / f"{group}.json"), (
        f"run python tests/data/ops/make_native_nodes.py to regenerate {group}.nodes.pb")
