"""Turning every failure of a command into one line on stderr and exit status 1.

Errors about the user's input (our errors, unreadable files, bad values) keep their message.
Anything else is a defect or a resource limit, but a traceback helps no user of a command line:
it becomes one line too, naming the command and the exception, with a request to report it.
Usage errors (a bad option or argument) are click's: exit status 2. A closed pipe
(`savedmodel ... | head`) is no failure: exit status 0, as for any Unix filter.
"""
from __future__ import annotations

import functools
import os
import sys

import click

from savedmodel.runtime.errors import SavedModelError

_INPUT_ERRORS = (SavedModelError, OSError, ValueError, KeyError)
"""What bad input raises: its message is the whole story."""

_REPORT = "this is a defect of savedmodel: please report it with the command and the file"


def reports_errors(command):
    """Wrap a command so that no exception escapes as a traceback (see the module docstring)."""
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except BrokenPipeError:
            _quiet_stdout()
            raise SystemExit(0) from None
        except Exception as err:  # noqa: BLE001 - the one place every failure is reported
            raise click.ClickException(error_line(err, _command_path())) from None
    return wrapper


def error_line(err: Exception, command: str) -> str:
    """The one line (without `Error: `) that reports `err`, raised while running `command`."""
    if isinstance(err, MemoryError):
        return (f"out of memory while running {command!r}: the input needs more memory than this "
                "machine has (a file may claim sizes larger than it holds)")
    if isinstance(err, RecursionError):
        return (f"the input is nested too deeply for {command!r} (Python's recursion limit was "
                f"reached); if the input is reasonable, {_REPORT}")
    if isinstance(err, _INPUT_ERRORS):
        message = str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)
        return _one_line(message)
    return _one_line(f"internal error while running {command!r}: {type(err).__name__}: {err} ({_REPORT})")


def _one_line(message: str) -> str:
    return " ".join(message.split())


def _command_path() -> str:
    context = click.get_current_context(silent=True)
    return context.command_path if context is not None else "savedmodel"


def _quiet_stdout() -> None:
    """The reader of our output went away (`savedmodel ... | head`): stop writing, without the
    error Python would print when flushing stdout at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
