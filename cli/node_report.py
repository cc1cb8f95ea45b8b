"""Printing `compare --per-node` reports (savedmodel.node_compare) as text or JSON."""
from __future__ import annotations

import json

import click

from savedmodel.node_compare import NodeReport

SCHEMA = "savedmodel.compare.per_node/1"


def print_node_reports(reports: list[NodeReport], ours: str, theirs: str, as_json: bool, max_nodes: int) -> None:
    """`ours` is the engine that ran our side, `theirs` what ran the other side."""
    if as_json:
        click.echo(json.dumps({"schema": SCHEMA, "ours": ours, "theirs": theirs,
                               "signatures": [_as_dict(r) for r in reports]}, indent=1))
        return
    for report in reports:
        for line in _lines(report, ours, theirs, max_nodes):
            click.echo(line)


def _as_dict(report: NodeReport) -> dict:
    return {"signature": report.signature, "compared": report.compared,
            "diverging": [row.__dict__ | {"shape": list(row.shape)} for row in report.diverging],
            "non_finite": report.non_finite.__dict__ if report.non_finite else None}


def _lines(report: NodeReport, ours: str, theirs: str, max_nodes: int) -> list[str]:
    count = len(report.diverging)
    lines = [f"{report.signature}: {report.compared} tensors compared, ours on {ours} against {theirs}: "
             + (f"{count} beyond tolerance" if count else "all within tolerance")]
    found = report.non_finite
    if found is not None:
        other = "theirs" if found.side == "ours" else "ours"
        lines.append(f"  first NaN/Inf: {found.key} (op {found.op}): {found.side} has {found.nan} NaN "
                     f"and {found.inf} Inf where {other} is finite")
    for row in report.diverging[:max_nodes]:
        where = f", in function {row.function}" if row.function else ""
        mark = "  <- starts here" if row.origin else ""
        lines.append(f"  {row.key} (op {row.op}{where}) {row.dtype} {list(row.shape)}: "
                     f"max abs {row.max_abs:.3g}, max rel {row.max_rel:.3g}{mark}")
    if count > max_nodes:
        lines.append(f"  ... and {count - max_nodes} more (--max-nodes)")
    return lines
