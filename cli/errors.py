"""Turning errors about the user's input into one line on stderr and exit status 1."""
from __future__ import annotations

import functools
import os
import sys

import click

from savedmodel.runtime.errors import SavedModelError


def reports_errors(command):
    """Wrap a command so that bad input (our errors, unreadable files, bad values) becomes a
    ClickException: `Error: <cause>` on stderr, exit status 1, no traceback."""
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except BrokenPipeError:
            _quiet_stdout()
            raise SystemExit(1) from None
        except (SavedModelError, OSError, ValueError, KeyError) as err:
            message = str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)
            raise click.ClickException(" ".join(message.split())) from None
    return wrapper


def _quiet_stdout() -> None:
    """The reader of our output went away (`savedmodel ... | head`): stop writing, without the
    error Python would print when flushing stdout at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
