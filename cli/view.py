"""`savedmodel view`: an interactive HTML viewer of a model (savedmodel.views.viewer_page)."""
from __future__ import annotations

from pathlib import Path

import click

from savedmodel.cli.completion import complete_signatures, complete_tag_sets
from savedmodel.cli.errors import reports_errors
from savedmodel.cli.show import size_text
from savedmodel.views.viewer_page import write_view


@click.command()
@click.argument("export_dir", type=click.Path(path_type=Path))
@click.option("--signature", "--signature-def", "--signature_def", "signature",
              shell_complete=complete_signatures, metavar="KEY",
              help="Show what this signature runs (default: serving_default if present, else the whole graph).")
@click.option("--tag-set", "--tag_set", "tags", shell_complete=complete_tag_sets, metavar="TAGS",
              help="Comma-separated tag-set of the MetaGraphDef (default: the only one, else 'serve').")
@click.option("--output", "-o", "output", metavar="FILE", type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the page (default: NAME.html in the current directory, NAME the "
                   "model's directory or file name).")
@reports_errors
def view(export_dir: Path, signature: str | None, tags: str | None, output: Path | None) -> None:
    """Write an interactive viewer of the SavedModel in EXPORT_DIR (or of a GraphDef file) as
    one self-contained HTML file: no network needed to open it.

    The signature's ops are drawn through its function calls and control-flow bodies, grouped
    into layers by name scope and shown collapsed (click a layer to open it); edges carry the
    statically inferred tensor shapes (? where unknown). Clicking a node shows its attrs, input
    and output shapes and dtypes, and the statistics (min, max, mean, std) of the weights it
    reads, under their variables' names, computed now from the checkpoint. Zoom with the wheel,
    pan by dragging, search by name or op. Prints the file's size.
    """
    tag_set = {t.strip() for t in tags.split(",") if t.strip()} if tags is not None else None
    output = output or Path(f"{export_dir.absolute().name.removesuffix('.pb').removesuffix('.pbtxt')}.html")
    size = write_view(export_dir, output, signature=signature, tags=tag_set)
    click.echo(f"wrote {output} ({size_text(size)})")
