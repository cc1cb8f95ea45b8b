"""A model's signatures by name, as both engines' models hold them."""
from __future__ import annotations

from savedmodel.runtime.errors import UnknownSignatureError


class Signatures(dict):
    """Signatures by name; an unknown name is an error listing the available ones."""

    def __missing__(self, key):
        raise UnknownSignatureError(f"no signature {key!r}; available: {', '.join(self) or 'none'}")
