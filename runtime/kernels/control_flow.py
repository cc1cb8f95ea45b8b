"""Function calls and control flow v2: each branch, loop body and callee is a library function
run through its cached plan."""
from __future__ import annotations

import numpy as np

from savedmodel.runtime import deadline
from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.executor import reraise, run_nested, start_loop
from savedmodel.runtime.registry import kernel


def truth(value) -> bool:
    """TensorFlow's truth of a predicate: a scalar by its value (non-zero, non-empty string),
    any other tensor by being non-empty."""
    if type(value) is np.ndarray and value.dtype.kind == "b" and not value.ndim:
        return bool(value)  # a loop's condition, once per iteration
    array = np.asarray(value)
    if array.ndim:
        return array.size > 0
    item = array.item()
    return len(item) > 0 if isinstance(item, bytes) else bool(item)


@kernel("PartitionedCall", "StatefulPartitionedCall", context=True)
def partitioned_call(ctx, *args, f, **_):
    return ctx.call(f.name, args)


@kernel("If", "StatelessIf", context=True)
def if_(ctx, cond, *inputs, then_branch, else_branch, **_):
    return ctx.call((then_branch if truth(cond) else else_branch).name, inputs)


@kernel("Case", "StatelessCase", context=True)
def case(ctx, branch_index, *inputs, branches, **_):
    """Out-of-range indices run the last branch, TensorFlow's default branch."""
    index = int(np.asarray(branch_index))
    chosen = branches[index] if 0 <= index < len(branches) else branches[-1]
    return ctx.call(chosen.name, inputs)


@kernel("While", "StatelessWhile", context=True)
def while_(ctx, *loop_vars, cond, body, **_):
    """The plans are looked up once per loop, not once per iteration, and the body's
    loop-invariant steps (see plan.LoopBody) run once, before the first iteration. The
    iterations call the plans' generated functions directly: the checks `run_nested` makes
    on every call hold for every iteration once they hold for the first. The time limit of
    the call (runtime.deadline) is checked once per iteration."""
    cond_plan = ctx.library.plan(cond.name)
    values = loop_vars
    if not truth(run_nested(cond_plan, values, ctx)[0]):
        return tuple(values)
    loop = ctx.library.loop_body(body.name, cond.name)
    rest = start_loop(loop, values, ctx) if loop.invariant is not None else None
    body_plan = loop.plain if rest is None else loop.varying
    if not len(body_plan.feeds) == len(body_plan.fetches) == len(values):
        raise KernelError(f"{body_plan.where} takes {len(body_plan.feeds)} and returns "
                          f"{len(body_plan.fetches)} values for {len(values)} loop variables")
    run_body, run_cond = body_plan.straight_line, cond_plan.straight_line
    limit = deadline.current()
    iteration = 0
    try:
        while True:
            values = run_body(values, ctx, rest)
            if not truth(run_cond(values, ctx, None)[0]):
                return tuple(values)
            if limit is not None:
                iteration += 1
                limit.check(f"{body_plan.where}, iteration {iteration}")
    except Exception as err:  # noqa: BLE001  (named by the plan and node that failed)
        reraise(err, body_plan, cond_plan)
