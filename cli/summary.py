"""`savedmodel summary`: a Keras-style table of a model's layers (savedmodel.model_summary)."""
from __future__ import annotations

import json
from pathlib import Path

import click

from savedmodel.cli.completion import complete_signatures, complete_tag_sets
from savedmodel.cli.errors import reports_errors
from savedmodel.model_summary import summarize, summary_text


@click.command()
@click.argument("export_dir", type=click.Path(path_type=Path))
@click.option("--signature", "--signature-def", "--signature_def", "signature",
              shell_complete=complete_signatures, metavar="KEY",
              help="The signature to summarize (default: serving_default if present, else the "
                   "whole graph).")
@click.option("--tag-set", "--tag_set", "tags", shell_complete=complete_tag_sets, metavar="TAGS",
              help="Comma-separated tag-set of the MetaGraphDef (default: the only one, else 'serve').")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (savedmodel.summary/1).")
@reports_errors
def summary(export_dir: Path, signature: str | None, tags: str | None, as_json: bool) -> None:
    """Layers of the SavedModel in EXPORT_DIR (or of a GraphDef file, .pb or .pbtxt) with their
    output shapes, parameters and FLOPs, and the totals, as Keras's model.summary() prints them.

    Layers are the Keras name scopes, followed through function calls; shapes are inferred
    statically from the signature's inputs (None: known only at run time). Parameters are the
    elements of the variables the signature reads, trainable or not as the SavedModel says.
    FLOPs count as TensorFlow's profiler does (tf.compat.v1.profiler float_operation):
    a multiply-add is 2 FLOPs (MACs are half the FLOPs of MatMul and convolutions), for a batch
    of 1; element-wise arithmetic, reductions and pooling count per element; activations,
    batch normalization's fused op, gathers and copies count 0; Einsum is counted too. A node in
    a loop body counts once, not once per iteration. `+?` marks layers with nodes whose shapes,
    and so FLOPs, are unknown.
    """
    tag_set = {t.strip() for t in tags.split(",") if t.strip()} if tags is not None else None
    description = summarize(export_dir, signature=signature, tags=tag_set)
    if as_json:
        click.echo(json.dumps(description, indent=1))
    else:
        click.echo(summary_text(description), nl=False)
