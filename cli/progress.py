"""The --progress option: progress bars on stderr for a command's long work
(savedmodel.progress), shown when stderr is a terminal, never with --json."""
from __future__ import annotations

import functools

import click

from savedmodel.progress import should_show, showing


def progress_option(command):
    """Add --progress to a command and show bars while it runs as the option says."""
    @functools.wraps(command)
    def wrapper(*args, progress: str, **kwargs):
        with showing(should_show(progress, kwargs.get("as_json", False))):
            return command(*args, **kwargs)
    return click.option("--progress", type=click.Choice(("auto", "always", "never")), default="auto",
                        show_default=True,
                        help="Progress bars on stderr for long work (restoring variables on the numpy "
                             "engine, signatures, timed calls), drawn after half a second: auto "
                             "shows them when stderr is a terminal and --json is not given.")(wrapper)
