"""Exceptions the project raises for bad input.

Every error names what is wrong and where (file, node, key or argument), so that a user can fix
the input; callers such as the command line print the message as one line.
"""


class SavedModelError(Exception):
    """Base class of every error savedmodel raises on purpose."""


class TensorProtoError(SavedModelError, ValueError):
    """A TensorProto whose contents do not fit its dtype and shape, or a value that has no
    TensorProto form."""


class FileFormatError(SavedModelError, ValueError):
    """A file that is missing, truncated or not in the format its name promises."""


class KernelError(SavedModelError, ValueError):
    """A kernel rejected its inputs (TensorFlow's InvalidArgument at run time)."""


class GraphError(SavedModelError, ValueError):
    """A graph that cannot be compiled: dangling references, cycles, unfed placeholders."""


class NodeError(SavedModelError):
    """A kernel failed while running a node."""


class FileAccessError(SavedModelError):
    """A model tried to read or write a file outside the folders it may use."""


class UnknownSignatureError(SavedModelError, KeyError):
    """A signature name the model does not have; the message lists those it has."""

    def __str__(self) -> str:
        return str(self.args[0])
