"""`savedmodel ops`, `ckpt` and `diff`: what is in a model or checkpoint, and what changed."""
from __future__ import annotations

import json
from pathlib import Path

import click
import numpy as np

from savedmodel.cli.errors import reports_errors
from savedmodel.cli.show import size_text
from savedmodel.describe import checkpoint_tensor, describe_checkpoint, describe_ops, diff_models
from savedmodel.runtime.saved_model_file import format_tags

_DIR = click.Path(path_type=Path)
"""A SavedModel directory or a GraphDef file (.pb, .pbtxt)."""


@click.command()
@click.argument("export_dir", type=_DIR)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (savedmodel.ops/1).")
@reports_errors
def ops(export_dir: Path, as_json: bool) -> None:
    """Op histogram of the SavedModel in EXPORT_DIR (graph and functions), marking with * the
    ops the runtime does not support."""
    description = describe_ops(export_dir)
    if as_json:
        click.echo(json.dumps(description, indent=1))
        return
    for meta_graph in description["meta_graphs"]:
        rows = [o for o in meta_graph["ops"] if not o["function"]]
        missing = sum(not o["supported"] for o in rows)
        click.echo(f"tag-set '{format_tags(meta_graph['tags'])}': {len(rows)} op types, "
                   f"{sum(o['count'] for o in rows)} nodes, {missing} unsupported")
        width = max((len(o["op"]) for o in rows), default=0)
        for o in sorted(rows, key=lambda o: (-o["count"], o["op"])):
            click.echo(f"  {o['op']:<{width}} {o['count']:>6}{'' if o['supported'] else '  * not supported'}")


@click.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--tensor", "tensor", metavar="KEY", help="Print the value of one tensor.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (savedmodel.ckpt/1).")
@reports_errors
def ckpt(path: Path, tensor: str | None, as_json: bool) -> None:
    """Tensors of the checkpoint at PATH: a prefix, its .index file, a directory with a
    `checkpoint` state file (its latest checkpoint), or a SavedModel directory."""
    if tensor is not None:
        value = checkpoint_tensor(path, tensor)
        if as_json:
            click.echo(json.dumps({"key": tensor, "dtype": str(value.dtype), "shape": list(value.shape),
                                   "value": _json_value(value)}))
        else:
            with np.printoptions(threshold=1000):
                click.echo(repr(value))
        return
    description = describe_checkpoint(path)
    if as_json:
        click.echo(json.dumps(description, indent=1))
        return
    total = sum(t["bytes"] or 0 for t in description["tensors"])
    click.echo(f"{description['path']}: {len(description['tensors'])} tensors, {size_text(total)}, "
               f"{description['num_shards']} shard(s)")
    for t in description["tensors"]:
        shape = "?" if t["shape"] is None else "[" + ", ".join(map(str, t["shape"])) + "]"
        click.echo(f"  {t['key']}  {t['dtype']} {shape}  {size_text(t['bytes'])}")


def _json_value(value: np.ndarray):
    if value.dtype == object:
        return np.vectorize(lambda b: b.decode("utf-8", "backslashreplace"), otypes=[object])(value).tolist()
    return value.tolist()


@click.command()
@click.argument("a", type=_DIR)
@click.argument("b", type=_DIR)
@click.option("--values", "values", is_flag=True,
              help="Also compare the variables' values: the largest absolute and relative (to B) "
                   "difference of each variable both store with the same dtype and shape.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (savedmodel.diff/1).")
@reports_errors
def diff(a: Path, b: Path, values: bool, as_json: bool) -> None:
    """Differences in signatures, ops and variables between the SavedModels A and B, and with
    --values in the variables' values.

    Exit status 0 whether or not they differ; 1 only for errors."""
    result = diff_models(a, b, values=values)
    if as_json:
        click.echo(json.dumps(result, indent=1))
        return
    if result["identical"]:
        what = "signatures, ops, variables or their values" if values else "signatures, ops or variables"
        click.echo(f"no differences in {what}")
        return
    for line in _value_lines(result.get("values", [])):
        click.echo(line)
    for meta_graph in result["meta_graphs"]:
        tags = format_tags(meta_graph["tags"])
        if "only_in" in meta_graph:
            click.echo(f"tag-set '{tags}': only in {meta_graph['only_in'].upper()}")
            continue
        for section in ("signatures", "ops", "variables"):
            for line in _section_lines(meta_graph[section]):
                click.echo(f"tag-set '{tags}' {section}: {line}")


def _value_lines(values: list[dict]) -> list[str]:
    changed = [v for v in values if not v["equal"]]
    lines = [f"values: {len(changed)} of {len(values)} variables differ"] if values else []
    return lines + [f"values: ~ {v['key']}: max abs {v['max_abs']}, max rel {v['max_rel']}"
                    for v in changed]


def _section_lines(changes: dict) -> list[str]:
    lines = [f"- {name}" for name in changes["removed"]] + [f"+ {name}" for name in changes["added"]]
    for change in changes["changed"]:
        lines.append(f"~ {change['name']}: A {_brief(change['a'])}; B {_brief(change['b'])}")
    return lines


def _brief(value) -> str:
    if isinstance(value, dict) and "inputs" in value:
        def specs(items):
            return ", ".join(f"{t['key']}:{t['dtype']}{t['shape']}" for t in items)
        return f"({specs(value['inputs'])}) -> ({specs(value['outputs'])})"
    return json.dumps(value)
