"""Resource variable ops. A handle is the `Variable` object itself (runtime.resources)."""
from __future__ import annotations

import numpy as np

from savedmodel.runtime.kernels.util import check
from savedmodel.runtime.registry import kernel


@kernel("VarHandleOp", context=True, stateful=True)
def var_handle(ctx, *, container="", shared_name="", dtype, shape, **_):
    return (ctx.resources.variable(container or "", shared_name or "", dtype, shape),)


@kernel("ReadVariableOp", stateful=True)
def read_variable(handle, **_):
    return (handle.read(),)


@kernel("AssignVariableOp", stateful=True)
def assign_variable(handle, value, **_):
    handle.assign(value)
    return ()


@kernel("AssignAddVariableOp", stateful=True)
def assign_add_variable(handle, value, **_):
    handle.assign(np.add(handle.read(), value, dtype=handle.dtype.numpy))
    return ()


@kernel("AssignSubVariableOp", stateful=True)
def assign_sub_variable(handle, value, **_):
    handle.assign(np.subtract(handle.read(), value, dtype=handle.dtype.numpy))
    return ()


@kernel("VarIsInitializedOp", stateful=True)
def var_is_initialized(handle, **_):
    return (np.array(handle.value is not None),)


@kernel("DisableCopyOnRead", "DestroyResourceOp", stateful=True)
def no_effect_on_handle(handle, **_):
    """Copy-on-read only matters to TensorFlow's in-place updates; ours never update in place."""
    return ()


@kernel("ResourceGather", stateful=True)
def resource_gather(handle, indices, *, batch_dims=0, **_):
    """Rows of a variable, as embedding lookups read them."""
    check(batch_dims == 0, "ResourceGather with batch_dims > 0 is not supported")
    value = handle.read()
    indices = np.asarray(indices)
    limit = value.shape[0] if value.ndim else 0
    check(indices.size == 0 or (indices.min() >= 0 and indices.max() < limit),
          f"ResourceGather: indices out of range [0, {limit}) for variable {handle.name!r}")
    return (np.take(value, indices, axis=0),)


@kernel("VariableV2", "Variable", context=True, stateful=True, named=True)
def ref_variable(ctx, *, container="", shared_name="", dtype, shape, node_name, **_):
    """A TensorFlow 1 reference variable; without a shared name it is shared by node name."""
    return (ctx.resources.variable(container or "", shared_name or node_name, dtype, shape),)


@kernel("Assign", stateful=True)
def assign(ref, value, **_):
    ref.assign(value)
    return (ref,)


@kernel("AssignAdd", stateful=True)
def assign_add(ref, value, **_):
    ref.assign(np.add(ref.read(), value, dtype=ref.dtype.numpy))
    return (ref,)


@kernel("AssignSub", stateful=True)
def assign_sub(ref, value, **_):
    ref.assign(np.subtract(ref.read(), value, dtype=ref.dtype.numpy))
    return (ref,)


@kernel("IsVariableInitialized", stateful=True)
def is_variable_initialized(ref, **_):
    return (np.array(ref.value is not None),)
