"""One entry point for every view format, and writing a rendering to a file safely."""
from __future__ import annotations

from pathlib import Path

from savedmodel.runtime import atomic_files
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
    """Write `text` to `path` atomically (`atomic_files`): readers never see a half-written
    file, and a failure leaves any old file intact."""
    try:
        atomic_files.write_file(path, lambda out: out.write(text.encode("utf-8")))
    except OSError as err:
        raise ViewError(f"{path}: cannot write ({err.strerror or err})") from None
