"""Running a Plan: place the feeds, run the steps (one generated straight-line function per
plan, see runtime.straight_line: call kernels in order, free each value after its last use),
return the fetches.

Errors from a kernel are re-raised naming the graph or function and the node, so that a
failure deep in nested function calls reads as a path from the outermost call inward.
"""
from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import NoReturn, TextIO

import numpy as np

from savedmodel.runtime import deadline
from savedmodel.runtime.deadline import DeadlineExceededError
from savedmodel.runtime.errors import NodeError, SavedModelError
from savedmodel.runtime.file_access import UNRESTRICTED, FileAccess, FileAccessError
from savedmodel.runtime.plan import LoopBody, NestingError, Plan, too_deep_for_python
from savedmodel.runtime.straight_line import failed_step


LIMIT_ERRORS = (DeadlineExceededError, FileAccessError)
"""Errors of a limit the caller set (time, file access), which it handles by their class:
re-raised as themselves with the node named, not as a NodeError (nor, on the authoring side,
as an InvalidArgumentError)."""


class Context:
    """What kernels that call functions or touch state receive: the function library, the
    resources (variables) of the loaded model, the stream that print ops write to, and where
    file-system ops may read and write (runtime.file_access)."""

    def __init__(self, library, resources, stderr: TextIO | None = None,
                 file_access: FileAccess = UNRESTRICTED):
        self.library = library
        self.resources = resources
        self.stderr = stderr or sys.stderr
        self.file_access = file_access

    def call(self, function: str, inputs) -> tuple:
        limit = deadline.current()
        if limit is not None:
            limit.check(f"call of function {function!r}")
        return self.library.call(function, tuple(inputs), self)


def run(plan: Plan, feeds, ctx: Context) -> Sequence:
    """Run a plan with `feeds` (one value per plan feed, in order); return the fetched values.

    Floating-point warnings are silenced for the whole run, once: TensorFlow returns inf and
    NaN without complaint, and entering numpy's errstate per kernel would cost more than many
    kernels do. Kernels that run functions (calls, loop bodies, branches) use `run_nested`,
    which is already inside that state."""
    with np.errstate(all="ignore"):
        try:
            return run_nested(plan, feeds, ctx)
        except RecursionError:
            raise too_deep_for_python(plan.where) from None


def run_nested(plan: Plan, feeds, ctx: Context, rest: Sequence | None = None) -> Sequence:
    """`run` for a plan started from inside a running plan. `rest` is what a loop body's
    varying part starts from (the values its invariant steps computed; see `start_loop`)."""
    if not isinstance(feeds, (list, tuple)):
        feeds = tuple(feeds)
    if len(feeds) != len(plan.feeds):
        raise SavedModelError(f"{plan.where}: expected {len(plan.feeds)} inputs, got {len(feeds)}")
    try:
        return plan.straight_line(feeds, ctx, rest)
    except Exception as err:  # noqa: BLE001  (named by the node that failed)
        reraise(err, plan)


def reraise(err: Exception, *plans: Plan) -> NoReturn:
    """Raise `err` (from inside an `except` for it) as `node_error` names it."""
    error = node_error(err, *plans)
    if error is err:
        raise err
    raise error from (None if isinstance(err, SavedModelError) else err)


def node_error(err: Exception, *plans: Plan) -> Exception:
    """`err`, raised while running one of `plans`, as a NodeError naming the plan and the node
    whose line raised it; `err` itself when it did not come from a step of theirs, or names
    its whole path already (a NestingError)."""
    if isinstance(err, NestingError):
        return err
    for plan in plans:
        index = failed_step(plan.straight_line, err.__traceback__)
        if index is None:
            continue
        step = plan.steps[index]
        if isinstance(err, LIMIT_ERRORS):
            return type(err)(f"{plan.where}: node {step.name!r} (op {step.op}): {err}")
        if isinstance(err, SavedModelError):
            return NodeError(f"{plan.where}: node {step.name!r} (op {step.op}): {err}")
        # a kernel bug or an input numpy rejects: still name the node
        return NodeError(f"{plan.where}: node {step.name!r} (op {step.op}) failed: "
                         f"{type(err).__name__}: {err}")
    return err


def start_loop(body: LoopBody, feeds, ctx: Context) -> list | None:
    """The values of the slots after the feeds that a loop body's iterations start from: its
    invariant steps run once, on the first iteration's inputs. None when one of them fails:
    the caller then runs the whole body as it is, which reports the failure exactly as it
    always has (or an earlier one)."""
    try:
        return run_nested(body.invariant, feeds, ctx)
    except NodeError:
        return None
