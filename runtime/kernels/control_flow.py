"""Function calls and control flow v2: each branch, loop body and callee is a library function
run through its cached plan."""
from __future__ import annotations

import numpy as np

from savedmodel.runtime.executor import run_nested
from savedmodel.runtime.registry import kernel


def truth(value) -> bool:
    """TensorFlow's truth of a predicate: a scalar by its value (non-zero, non-empty string),
    any other tensor by being non-empty."""
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
    """The plans are looked up once per loop, not once per iteration."""
    cond_plan, body_plan = ctx.library.plan(cond.name), ctx.library.plan(body.name)
    values = loop_vars
    while truth(run_nested(cond_plan, values, ctx)[0]):
        values = run_nested(body_plan, values, ctx)
    return tuple(values)
