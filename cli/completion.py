"""Shell completion of signature keys and tag-sets (click's `shell_complete`): the names are
read from the model the command line names (its EXPORT_DIR argument) when the shell asks.

A completion must never fail: a missing or damaged model completes to nothing.
"""
from __future__ import annotations

import click
from click.shell_completion import CompletionItem

from savedmodel.describe import signature_names, tag_set_names


def complete_signatures(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Signature keys of the model, of the tag-set given before (`--tag-set`) if any."""
    path, tags = _model_path(ctx), ctx.params.get("tags")
    return _matching(lambda: signature_names(path, tags if isinstance(tags, str) else None),
                     path, incomplete)


def complete_tag_sets(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    path = _model_path(ctx)
    return _matching(lambda: tag_set_names(path), path, incomplete)


def _model_path(ctx: click.Context):
    """EXPORT_DIR (or MODEL) as parsed; when the option being completed ends the line, click stops
    parsing before it assigns arguments, and the path is the first word left over."""
    path = ctx.params.get("export_dir", ctx.params.get("model"))
    if path is None and ctx.args:
        path = ctx.args[0]
    return path


def _matching(names, path, incomplete: str) -> list[CompletionItem]:
    if path is None:
        return []
    try:
        found = names()
    except Exception:  # noqa: BLE001 - whatever is wrong with the model, nothing completes
        return []
    return [CompletionItem(name) for name in found if name.startswith(incomplete)]
