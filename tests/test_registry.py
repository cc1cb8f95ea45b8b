"""The kernel registry: one kernel per op, clear errors, and the generated coverage table."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from savedmodel.runtime import native, registry

ROOT = Path(__file__).resolve().parent.parent


def test_duplicate_registration_is_rejected():
    registry.supported_ops()  # the kernels are loaded on first use; make sure Identity is there
    with pytest.raises(registry.DuplicateKernelError, match="'Identity' already has the kernel"):
        registry.kernel("Identity")(lambda x, **_: (x,))


def test_unknown_op_names_itself_the_node_and_the_supported_ops():
    with pytest.raises(registry.UnsupportedOpError,
                       match=r"op 'NoSuchOp' \(node n1\) is not supported .* supported ops: .*Identity"):
        registry.lookup("NoSuchOp", "n1")


@pytest.mark.skipif(not native.available() and os.environ.get("SAVEDMODEL_REQUIRE_NATIVE") != "1",
                    reason="the table has a column for the native engine, which is not built here")
def test_op_table_is_current():
    spec = importlib.util.spec_from_file_location("gen_op_docs", ROOT / "tools" / "gen_op_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (ROOT / "docs" / "ops.md").read_text() == module.render(), \
        "run `python tools/gen_op_docs.py` to regenerate docs/ops.md"
