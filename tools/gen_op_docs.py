"""Write docs/ops.md: the table of ops the runtime supports, generated from the kernel registry.

Usage: python tools/gen_op_docs.py [OUT]   (default: docs/ops.md; a test checks it is current)
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from savedmodel.runtime import registry

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "docs" / "ops.md"


def render() -> str:
    kernels = registry.all_kernels()
    lines = ["# Supported ops", "",
             "Generated from the kernel registry by `python tools/gen_op_docs.py`; do not edit.",
             f"The runtime has kernels for {len(kernels)} TensorFlow op types. A graph that uses any",
             "other op loads, and fails with an error naming the op and node when that op would run.",
             "", "| op | kernel module | notes |", "|---|---|---|"]
    for k in kernels:
        notes = ", ".join(n for n, on in (("stateful", k.stateful), ("calls functions or uses state", k.context)) if on)
        lines.append(f"| `{k.op}` | `{k.fn.__module__.rsplit('.', 1)[-1]}` | {notes} |")
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
