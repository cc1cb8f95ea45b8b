"""`savedmodel show`: tag-sets, signatures, saved functions, variables and ops.

The text follows `saved_model_cli show` line for line where that tool has the same view, so
scripts and habits carry over; `--all` adds what saved_model_cli lacks (variables with their
sizes, ops marked when the runtime cannot run them, the ops that touch files as `saved_model_cli
scan` reports them). `--json` prints the description itself
(schema `savedmodel.show/1`, docs/json-schemas.md).
"""
from __future__ import annotations

import json
from pathlib import Path

import click

from savedmodel.cli.completion import complete_signatures, complete_tag_sets
from savedmodel.cli.errors import reports_errors
from savedmodel.describe import describe_model
from savedmodel.runtime.errors import FileFormatError
from savedmodel.runtime.saved_model_file import format_tags


@click.command()
@click.argument("export_dir", type=click.Path(path_type=Path))
@click.option("--tag-set", "--tag_set", "tags", shell_complete=complete_tag_sets, metavar="TAGS",
              help="Comma-separated tag-set of the MetaGraphDef to show, e.g. 'serve'.")
@click.option("--signature-def", "--signature_def", "signature",
              shell_complete=complete_signatures, metavar="KEY",
              help="Show the inputs and outputs of this SignatureDef (needs --tag-set).")
@click.option("--all", "show_all", is_flag=True,
              help="Show every MetaGraphDef with its signatures, saved functions, variables and ops.")
@click.option("--list-ops", "--list_ops", "list_ops", is_flag=True,
              help="List the ops of the MetaGraphDef (all of them without --tag-set).")
@click.option("--json", "as_json", is_flag=True, help="Print the description as JSON (savedmodel.show/1).")
@click.option("--engine", type=click.Choice(("numpy", "native")), default="numpy", show_default=True,
              help="The engine whose kernels the op lists (--all, --list-ops) mark ops against.")
@reports_errors
def show(export_dir: Path, tags: str | None, signature: str | None, show_all: bool,
         list_ops: bool, as_json: bool, engine: str) -> None:
    """Show the tag-sets, signatures, functions, variables and ops of the SavedModel in EXPORT_DIR
    (or of a GraphDef file, .pb or .pbtxt: one tag-set, 'serve', with a serving_default signature).

    Without options, lists the tag-sets; with --tag-set, the SignatureDef keys of that
    MetaGraphDef; with --tag-set and --signature-def, one signature's inputs and outputs.
    """
    description = describe_model(export_dir, engine)
    if as_json:
        click.echo(json.dumps(_selected(description, tags, signature, export_dir), indent=1))
        return
    if signature is not None and tags is None:
        raise click.UsageError("--signature-def needs --tag-set")
    if show_all:
        lines = _all_lines(description, engine)
    elif list_ops:
        lines = _ops_lines(_meta_graphs(description, tags, export_dir), engine)
    elif signature is not None:
        lines = _signature_lines(_find_signature(description, tags, signature, export_dir), "")
    elif tags is not None:
        meta_graph = _meta_graphs(description, tags, export_dir)[0]
        lines = ["The given SavedModel MetaGraphDef contains SignatureDefs with the following keys:"]
        lines += [f'SignatureDef key: "{s["name"]}"' for s in meta_graph["signatures"]]
    else:
        lines = ["The given SavedModel contains the following tag-sets:"]
        lines += [f"'{format_tags(m['tags'])}'" for m in description["meta_graphs"]]
    click.echo("\n".join(lines))


def _selected(description: dict, tags: str | None, signature: str | None, export_dir: Path) -> dict:
    if tags is None:
        return description
    meta_graph = dict(_meta_graphs(description, tags, export_dir)[0])
    if signature is not None:
        meta_graph["signatures"] = [_find_signature(description, tags, signature, export_dir)]
    return {**description, "meta_graphs": [meta_graph]}


def _parse_tags(text: str) -> list[str]:
    return sorted({t.strip() for t in text.split(",") if t.strip()})


def _meta_graphs(description: dict, tags: str | None, export_dir: Path) -> list[dict]:
    if tags is None:
        return description["meta_graphs"]
    wanted = _parse_tags(tags)
    found = [m for m in description["meta_graphs"] if m["tags"] == wanted]
    if not found:
        present = "; ".join(format_tags(m["tags"]) for m in description["meta_graphs"]) or "none"
        raise FileFormatError(f"{export_dir}: no MetaGraphDef with tag-set '{format_tags(wanted)}' "
                              f"(tag-sets present: {present})")
    return found


def _find_signature(description: dict, tags: str, key: str, export_dir: Path) -> dict:
    meta_graph = _meta_graphs(description, tags, export_dir)[0]
    for info in meta_graph["signatures"]:
        if info["name"] == key:
            return info
    known = ", ".join(s["name"] for s in meta_graph["signatures"])
    raise FileFormatError(f"{export_dir}: no SignatureDef {key!r} in tag-set '{tags}' "
                          f"(signatures: {known})")


def show_all_lines(export_dir: Path) -> list[str]:
    """The text of `savedmodel show EXPORT_DIR --all` (also printed by `savedmodel demo`)."""
    return _all_lines(describe_model(export_dir))


def _all_lines(description: dict, engine: str = "numpy") -> list[str]:
    lines = []
    for meta_graph in description["meta_graphs"]:
        lines += ["", f"MetaGraphDef with tag-set: '{format_tags(meta_graph['tags'])}' "
                      "contains the following SignatureDefs:"]
        for info in meta_graph["signatures"]:
            lines += ["", f"signature_def['{info['name']}']:"]
            lines += _signature_lines(info, "  ")
        lines += _function_lines(meta_graph["functions"])
        lines += _variable_lines(meta_graph["variables"])
        lines += [""] + _ops_lines([meta_graph], engine)
        lines += [""] + _file_system_op_lines(meta_graph)
    return lines


def _signature_lines(info: dict, indent: str) -> list[str]:
    lines = [f"{indent}The given SavedModel SignatureDef contains the following input(s):"]
    for spec in info["inputs"]:
        lines += _tensor_lines("inputs", spec, indent + "  ")
    lines.append(f"{indent}The given SavedModel SignatureDef contains the following output(s):")
    for spec in info["outputs"]:
        lines += _tensor_lines("outputs", spec, indent + "  ")
    lines.append(f"{indent}Method name is: {info['method_name']}")
    return lines


def _tensor_lines(kind: str, spec: dict, indent: str) -> list[str]:
    return [f"{indent}{kind}['{spec['key']}'] tensor_info:",
            f"{indent}    dtype: {spec['dtype']}",
            f"{indent}    shape: {_shape_text(spec['shape'], '-1')}",
            f"{indent}    name: {spec['tensor_name']}"]


def _shape_text(shape, unknown: str) -> str:
    if shape is None:
        return "unknown_rank"
    return "(" + ", ".join(unknown if d is None else str(d) for d in shape) + ")"


def _function_lines(functions: list[dict]) -> list[str]:
    if not functions:
        return []
    lines = ["", "Concrete Functions:"]
    for function in functions:
        lines.append(f"  Function Name: '{function['name']}'")
        for number, concrete in enumerate(function["concrete_functions"], 1):
            lines += [f"    Option #{number}", "      Callable with:"]
            for position, argument in enumerate(concrete["args"], 1):
                lines += [f"        Argument #{position}", f"          {_structure_text(argument)}"]
            for key, argument in concrete["kwargs"].items():
                lines += [f"        Keyword argument {key!r}", f"          {_structure_text(argument)}"]
        lines.append("")
    return lines[:-1]


def _structure_text(value: dict) -> str:
    kind, content = next(iter(value.items()))
    if kind == "tensor_spec":
        shape = content["shape"]
        shape_text = "<unknown>" if shape is None else "(" + ", ".join(
            "None" if d is None else str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
        name = "None" if content["name"] is None else repr(content["name"])
        return f"{content['name'] or 'arg'}: TensorSpec(shape={shape_text}, dtype=tf.{content['dtype']}, name={name})"
    if kind in ("list", "tuple"):
        inner = ", ".join(_structure_text(v) for v in content)
        return f"[{inner}]" if kind == "list" else f"({inner})"
    if kind == "dict":
        return "{" + ", ".join(f"{k!r}: {_structure_text(v)}" for k, v in content.items()) + "}"
    if kind == "named_tuple":
        return f"{content['name']}(" + ", ".join(f"{k}={_structure_text(v)}" for k, v in content["fields"].items()) + ")"
    return f"Value: {content!r}"


def _variable_lines(variables: list[dict]) -> list[str]:
    if not variables:
        return []
    lines = ["", f"Variables ({len(variables)}, {size_text(sum(v['bytes'] or 0 for v in variables))}):"]
    for v in variables:
        lines.append(f"  {v['key']}: {v['dtype']} {_shape_text(v['shape'], '?')} {size_text(v['bytes'])}")
    return lines


def size_text(size: int | None) -> str:
    if size is None:
        return "? bytes"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


def _ops_lines(meta_graphs: list[dict], engine: str) -> list[str]:
    lines = []
    for meta_graph in meta_graphs:
        ops = [o for o in meta_graph["ops"] if not o["function"]]
        missing = [o["op"] for o in ops if not o["supported"]]
        lines.append(f"The MetaGraph with tag set '{format_tags(meta_graph['tags'])}' contains "
                     f"{len(ops)} ops" + (f" ({len(missing)} not supported by the {engine} engine, marked *):" if missing else ":"))
        lines += [f"  {o['op']}{'' if o['supported'] else ' *'}" for o in ops]
    return lines


def _file_system_op_lines(meta_graph: dict) -> list[str]:
    """The file-system ops of a MetaGraph, as `saved_model_cli scan` reports its denylisted
    ops (with each node and the function it is in)."""
    tags = f"MetaGraph with tag set {meta_graph['tags']}"
    found = meta_graph["file_system_ops"]
    if not found:
        return [f"{tags} does not contain file-system ops (ops that read, write or delete files)."]
    lines = [f"{tags} contains the following file-system ops: {{{', '.join(repr(o) for o in sorted({f['op'] for f in found}))}}}"]
    lines += [f"  {f['op']} {f['node']!r} in " + (f"function {f['function']!r}" if f["function"] else "the graph")
              + (" (the model's saver)" if f["saver"] else "") for f in found]
    return lines
