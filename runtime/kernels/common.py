"""Ops that move values without computing: constants, identities, no-ops."""
from __future__ import annotations

from savedmodel.runtime.registry import kernel


@kernel("Const")
def const(*, value, **_):
    return (value,)


@kernel("Identity", "StopGradient", "Snapshot", "PreventGradient", "PlaceholderWithDefault",
        "EnsureShape", "CheckNumerics")
def identity(x, **_):
    return (x,)


@kernel("IdentityN")
def identity_n(*xs, **_):
    return xs


@kernel("NoOp")
def no_op(**_):
    return ()
