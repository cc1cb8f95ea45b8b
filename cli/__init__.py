"""The `savedmodel` command: inspect SavedModels without TensorFlow.

A thin client of `savedmodel.runtime`: commands parse arguments, call the library and format
its answers. Errors caused by the input are one line on stderr and exit status 1.
"""
from __future__ import annotations

import click

from savedmodel.cli.show import show


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="savedmodel")
def main() -> None:
    """Inspect TensorFlow SavedModels and checkpoints without TensorFlow."""


main.add_command(show)
