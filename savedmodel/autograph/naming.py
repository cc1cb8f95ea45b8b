"""Names for what conversion adds (`get_state`, `if_body_1`, `do_return`, `fscope`, ...)."""
from __future__ import annotations

from collections.abc import Iterable


class Namer:
    """Fresh names for one function's conversion: a root (`loop_body`), then `loop_body_1`,
    `loop_body_2`, ..., never one the function's code or namespace uses or one already given."""

    def __init__(self, taken: Iterable[str]):
        self._taken = set(taken)

    def new(self, root: str) -> str:
        name, count = root, 0
        while name in self._taken:
            count += 1
            name = f"{root}_{count}"
        self._taken.add(name)
        return name
