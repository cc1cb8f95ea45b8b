"""Kernel modules, one per family of ops. Importing this package registers every kernel."""
from savedmodel.runtime.kernels import (  # noqa: F401  (imported for their registrations)
    activation,
    array,
    checkpoint_ops,
    common,
    control_flow,
    gather,
    logging,
    math,
    nn,
    random,
    reduction,
    strings,
    tensor_list,
    variables,
)
