"""The `sm.errors` namespace: the exceptions TensorFlow code catches by name.

`InvalidArgumentError` is what an op raises when its inputs are wrong at run time (eagerly, or
while a graph runs); `OperatorNotAllowedInGraphError` is what using a symbolic tensor as a
Python bool or iterating over it raises while tracing. Both carry TensorFlow's messages.
"""
from __future__ import annotations

from savedmodel.runtime.errors import SavedModelError


class OpError(SavedModelError):
    """An op failed; `op` names its type when known."""

    def __init__(self, message: str, op: str | None = None):
        super().__init__(message)
        self.message = message
        self.op = op


class InvalidArgumentError(OpError, ValueError):
    """An op received an input it cannot compute with (TensorFlow's INVALID_ARGUMENT)."""


class OperatorNotAllowedInGraphError(SavedModelError, TypeError):
    """A symbolic tensor was used where Python needs a concrete value."""


class InputSignatureError(SavedModelError, TypeError, ValueError):
    """Arguments that do not fit a Function's input signature.

    TensorFlow 2.21 raises TypeError here and older versions ValueError (which the guides
    catch); this error is both."""
