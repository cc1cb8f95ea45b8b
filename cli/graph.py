"""`savedmodel graph`: a signature, a library function or the whole graph of a SavedModel, as
compact text, protobuf text, DOT, SVG or JSON (all from `savedmodel.views`)."""
from __future__ import annotations

from pathlib import Path

import click

from savedmodel.cli.completion import complete_signatures, complete_tag_sets
from savedmodel.cli.errors import reports_errors
from savedmodel.runtime.saved_model_file import read_saved_model
from savedmodel.views.render import FORMATS, render, write_file
from savedmodel.views.select import choose_meta_graph, select


@click.command()
@click.argument("export_dir", type=click.Path(path_type=Path))
@click.option("--tag-set", "--tag_set", "tags", shell_complete=complete_tag_sets, metavar="TAGS",
              help="Comma-separated tag-set of the MetaGraphDef (default: the only one, else 'serve').")
@click.option("--signature-def", "--signature_def", "signature",
              shell_complete=complete_signatures, metavar="KEY",
              help="Show what this signature runs (default: serving_default if present).")
@click.option("--function", "function", metavar="NAME", help="Show the body of this library function.")
@click.option("--whole-graph", "--whole_graph", "whole_graph", is_flag=True,
              help="Show every node of the top-level graph.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="text: one line per node; pbtxt: protobuf text; dot: Graphviz; svg: a drawing; "
                   "json: savedmodel.graph/1.")
@click.option("--expand", is_flag=True, help="Show the bodies of called functions under their call nodes.")
@click.option("--all-attrs", "--all_attrs", "all_attrs", is_flag=True,
              help="Include TensorFlow's internal attrs (names starting with '_').")
@click.option("--output", "-o", "output", metavar="FILE", type=click.Path(dir_okay=False, path_type=Path),
              help="Write to FILE (atomically) instead of standard output.")
@reports_errors
def graph(export_dir: Path, tags: str | None, signature: str | None, function: str | None,
          whole_graph: bool, fmt: str, expand: bool, all_attrs: bool, output: Path | None) -> None:
    """Show the graph of the SavedModel in EXPORT_DIR (or of a GraphDef file, .pb or .pbtxt).

    Without options: the serving_default signature as text, or the whole graph when the model
    has no serving_default.
    """
    model = read_saved_model(export_dir)
    tag_set = {t.strip() for t in tags.split(",") if t.strip()} if tags is not None else None
    meta_graph = choose_meta_graph(model, tag_set, str(export_dir))
    selection = select(meta_graph, signature=signature, function=function, whole_graph=whole_graph,
                       graph_name=export_dir.absolute().name, where=str(export_dir))
    text = render(selection, fmt, expand=expand, all_attrs=all_attrs)
    if output is None:
        click.echo(text, nl=False)
    else:
        write_file(output, text)
