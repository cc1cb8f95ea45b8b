"""Write docs/ops.md: the table of ops each engine supports, generated from the kernel registries
(the numpy engine's, and the native engine's through savedmodel._native, which must be built).

Usage: python tools/gen_op_docs.py [OUT]   (default: docs/ops.md; a test checks it is current)
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from savedmodel.runtime import native, registry

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "docs" / "ops.md"


def render() -> str:
    if not native.available():
        raise SystemExit("gen_op_docs.py: the native engine is not built; install with a Rust toolchain")
    kernels = {k.op: k for k in registry.all_kernels()}
    fast = {op for op in native.ops() if not op.startswith("_")}
    lines = ["# Supported ops", "",
             "Generated from the kernel registries by `python tools/gen_op_docs.py`; do not edit.",
             f"The numpy engine has kernels for {len(kernels)} TensorFlow op types, the native engine",
             f"for {len(fast)} (plus the fused ops its plan compiler makes). `load(dir, engine=\"auto\")`",
             "runs a model on the native engine when it has a kernel for every op the signatures need.",
             "A graph that uses an op neither engine has loads on the numpy engine, and fails with an",
             "error naming the op and node when that op would run.",
             "", "| op | numpy engine (kernel module) | native engine | notes |", "|---|---|---|---|"]
    for op in sorted(kernels.keys() | fast):
        k = kernels.get(op)
        notes = "" if k is None else ", ".join(
            n for n, on in (("stateful", k.stateful), ("calls functions or uses state", k.context)) if on)
        module = f"`{k.fn.__module__.rsplit('.', 1)[-1]}`" if k is not None else "no"
        lines.append(f"| `{op}` | {module} | {'yes' if op in fast else 'no'} | {notes} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="gen_op_docs.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", type=Path, default=DEFAULT_OUT,
                        help="the Markdown file to write (default: docs/ops.md)")
    out = parser.parse_args(argv[1:]).out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render())
    print(out)


if __name__ == "__main__":
    main(sys.argv)
