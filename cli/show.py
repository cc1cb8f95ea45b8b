"""`savedmodel show`: tag-sets, signatures and their inputs and outputs.

Output follows `saved_model_cli show` line for line where that tool has the same view, so
scripts and habits carry over.
"""
from __future__ import annotations

from pathlib import Path

import click

from savedmodel.runtime.errors import SavedModelError
from savedmodel.runtime.saved_model_file import (SignatureInfo, TensorSpecInfo, find_meta_graph,
                                                 format_tags, read_saved_model, signatures, tag_set)


@click.command()
@click.argument("export_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--tag-set", "--tag_set", "tags", metavar="TAGS",
              help="Comma-separated tag-set of the MetaGraphDef to show, e.g. 'serve'.")
@click.option("--signature-def", "--signature_def", "signature", metavar="KEY",
              help="Show the inputs and outputs of this SignatureDef (needs --tag-set).")
@click.option("--all", "show_all", is_flag=True,
              help="Show every MetaGraphDef with all its SignatureDefs.")
def show(export_dir: Path, tags: str | None, signature: str | None, show_all: bool) -> None:
    """Show the tag-sets and signatures of the SavedModel in EXPORT_DIR.

    Without options, lists the tag-sets; with --tag-set, the SignatureDef keys of that
    MetaGraphDef; with --tag-set and --signature-def, one signature's inputs and outputs.
    """
    try:
        model = read_saved_model(export_dir)
        if show_all:
            lines = _all_lines(model)
        elif signature is not None:
            if tags is None:
                raise click.UsageError("--signature-def needs --tag-set")
            lines = _signature_lines(_signature(model, tags, signature, export_dir), "")
        elif tags is not None:
            meta_graph = find_meta_graph(model, _parse_tags(tags), str(export_dir))
            lines = ["The given SavedModel MetaGraphDef contains SignatureDefs with the following keys:"]
            lines += [f'SignatureDef key: "{s.name}"' for s in signatures(meta_graph)]
        else:
            lines = ["The given SavedModel contains the following tag-sets:"]
            lines += [f"'{format_tags(tag_set(m))}'" for m in model.meta_graphs]
    except SavedModelError as err:
        raise click.ClickException(str(err)) from None
    click.echo("\n".join(lines))


def _parse_tags(text: str) -> set[str]:
    return {t.strip() for t in text.split(",") if t.strip()}


def _signature(model, tags: str, key: str, export_dir: Path) -> SignatureInfo:
    meta_graph = find_meta_graph(model, _parse_tags(tags), str(export_dir))
    for info in signatures(meta_graph):
        if info.name == key:
            return info
    known = ", ".join(s.name for s in signatures(meta_graph))
    raise click.ClickException(f"{export_dir}: no SignatureDef {key!r} in tag-set '{tags}' "
                               f"(signatures: {known})")


def _all_lines(model) -> list[str]:
    lines = []
    for meta_graph in model.meta_graphs:
        lines += ["", f"MetaGraphDef with tag-set: '{format_tags(tag_set(meta_graph))}' "
                      "contains the following SignatureDefs:"]
        for info in signatures(meta_graph):
            lines += ["", f"signature_def['{info.name}']:"]
            lines += _signature_lines(info, "  ")
    return lines


def _signature_lines(info: SignatureInfo, indent: str) -> list[str]:
    lines = [f"{indent}The given SavedModel SignatureDef contains the following input(s):"]
    for spec in info.inputs:
        lines += _tensor_lines("inputs", spec, indent + "  ")
    lines.append(f"{indent}The given SavedModel SignatureDef contains the following output(s):")
    for spec in info.outputs:
        lines += _tensor_lines("outputs", spec, indent + "  ")
    lines.append(f"{indent}Method name is: {info.method_name}")
    return lines


def _tensor_lines(kind: str, spec: TensorSpecInfo, indent: str) -> list[str]:
    return [f"{indent}{kind}['{spec.key}'] tensor_info:",
            f"{indent}    dtype: {spec.dtype}",
            f"{indent}    shape: {_shape_text(spec.shape)}",
            f"{indent}    name: {spec.tensor_name}"]


def _shape_text(shape) -> str:
    if shape is None:
        return "unknown_rank"
    return "(" + ", ".join("-1" if d is None else str(d) for d in shape) + ")"
