"""The `savedmodel` command: inspect, run and compare SavedModels and checkpoints without
TensorFlow.

A thin client of `savedmodel.runtime` and the inspection modules: commands parse arguments, call
the library and format its answers. Every failure is one line on stderr and exit status 1
(cli.errors), usage errors exit with 2 (click's convention); stdout carries only results.
"""
from __future__ import annotations

import click

from savedmodel.cli.bench import bench
from savedmodel.cli.batch import batch
from savedmodel.cli.demo import demo
from savedmodel.cli.graph import graph
from savedmodel.cli.inspect_commands import ckpt, diff, ops
from savedmodel.cli.run_commands import compare, run
from savedmodel.cli.serve import serve
from savedmodel.cli.show import show
from savedmodel.cli.summary import summary
from savedmodel.cli.view import view


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="savedmodel")
def main() -> None:
    """Inspect, run and compare TensorFlow SavedModels and checkpoints without TensorFlow.

    `savedmodel demo` shows the whole round trip: trace, save, show, run, load.

    Exit status: 0 on success; 1 on an error (one line on stderr starting with `Error:`, never
    a traceback; `compare` also exits with 1 when outputs differ); 2 on a usage error (an
    unknown option, a missing or invalid argument). Results go to stdout, and a reader that
    stops early (`| head`) is no error.
    """


for command in (demo, show, run, graph, ops, ckpt, diff, compare, summary, view, bench, serve, batch):
    main.add_command(command)
