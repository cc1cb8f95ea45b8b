"""One entry point for every view format, and writing a rendering to a file safely."""
from __future__ import annotations

import os
import secrets
from pathlib import Path

from savedmodel.views.body import ViewError
from savedmodel.views.dot import render_dot
from savedmodel.views.jsonview import render_json
from savedmodel.views.pbtxt import render_pbtxt
from savedmodel.views.select import Selection
from savedmodel.views.svg import render_svg
from savedmodel.views.text import render_text

FORMATS = ("text", "pbtxt", "dot", "svg", "json")


def render(selection: Selection, fmt: str = "text", *, expand: bool = False,
           all_attrs: bool = False) -> str:
    """The selection in format `fmt` (one of FORMATS). The protobuf text view is the message
    itself, so `expand` and `all_attrs` do not apply to it."""
    if fmt == "pbtxt":
        return render_pbtxt(selection)
    renderers = {"text": render_text, "dot": render_dot, "svg": render_svg, "json": render_json}
    if fmt not in renderers:
        raise ViewError(f"unknown view format {fmt!r}; formats: {', '.join(FORMATS)}")
    return renderers[fmt](selection, expand=expand, all_attrs=all_attrs)


def write_file(path: str | Path, text: str) -> None:
    """Write `text` to `path` under a temporary name in the same directory, then rename it into
    place, so readers never see a half-written file and a failure leaves any old file intact."""
    path = Path(path)
    scratch = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        handle = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(scratch, path)
    except OSError as err:
        scratch.unlink(missing_ok=True)
        raise ViewError(f"{path}: cannot write ({err.strerror or err})") from None
