"""TensorFlow 1 control flow ops: the values they compute. Where those values go (which frame
and iteration, and which outputs are dead) is the frame executor's part (runtime.frames), the
only place these ops run: a graph that needs one of them is planned there."""
from __future__ import annotations

import numpy as np

from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.frames import DEAD
from savedmodel.runtime.registry import kernel


@kernel("Enter", "RefEnter", "Exit", "RefExit", "NextIteration", "RefNextIteration")
def forward(data, **_):
    """The value moves on unchanged, into the child frame, the parent frame or the next
    iteration."""
    return (data,)


@kernel("LoopCond")
def loop_cond(pred, **_):
    _check_predicate(pred, "LoopCond")
    return (pred,)


@kernel("Switch", "RefSwitch")
def switch(data, pred, **_):
    """`data` on output 1 (true) or output 0 (false); the other output is dead."""
    _check_predicate(pred, "Switch")
    return (DEAD, data) if bool(pred) else (data, DEAD)


@kernel("Merge", "RefMerge")
def merge(*inputs, **_):
    """The live input (the executor runs a Merge on its first one, the others still DEAD) and its
    position, as int32."""
    for index, value in enumerate(inputs):
        if value is not DEAD:
            return value, np.array(index, np.int32)
    raise KernelError("Merge ran without a live input")


@kernel("ControlTrigger")
def control_trigger(*_, **__):
    """No outputs; it runs even when its control inputs are dead."""
    return ()


def _check_predicate(pred, op: str) -> None:
    shape = np.shape(pred)
    if shape != ():
        raise KernelError(f"{op}: the predicate must be a scalar, but it has shape {list(shape)}")
    if np.asarray(pred).dtype != np.bool_:
        raise KernelError(f"{op}: the predicate must be bool, got {np.asarray(pred).dtype}")
