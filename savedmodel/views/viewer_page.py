"""`savedmodel view`'s output: one self-contained HTML file, the viewer document (viewer.py)
embedded as JSON beside our own script and style sheet (viewer.js, viewer.css, shipped with
the package). It loads nothing from the network, so it opens offline and can be mailed."""
from __future__ import annotations

import json
from html import escape
from importlib import resources
from pathlib import Path

from savedmodel.static_shapes import analyze
from savedmodel.views.render import write_file
from savedmodel.views.viewer import build_document

TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
{css}</style>
</head>
<body>
<header><h1>{title}</h1><span class="summary">{summary}</span>
<input id="search" type="search" placeholder="Search a node by name or op" autocomplete="off">
<button id="fit">Fit</button><button id="open-all">Open all</button><button id="close-all">Close all</button>
</header>
<main>
<svg id="canvas" xmlns="http://www.w3.org/2000/svg">
<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7"
 orient="auto"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>
<g id="viewport"></g>
</svg>
<ul id="results"></ul>
<aside id="panel"></aside>
</main>
<script type="application/json" id="model-data">{data}</script>
<script>
{js}</script>
</body>
</html>
"""


def render_page(document: dict) -> str:
    """The HTML page showing a viewer document."""
    data = json.dumps(document, separators=(",", ":"), ensure_ascii=False)
    # `</` inside a script element would end it early; JSON allows the escaped form.
    data = data.replace("</", "<\\/")
    counts = (f"signature {document['signature']}: {len(document['layers'])} layers, "
              f"{sum(n['kind'] == 'op' for n in document['nodes'])} ops, {len(document['variables'])} weights")
    return TEMPLATE.format(title=escape(document["title"]), summary=escape(counts), data=data,
                           css=_asset("viewer.css"), js=_asset("viewer.js"))


def view_model(path: str | Path, *, signature: str | None = None, tags: set[str] | None = None) -> str:
    """The viewer page for the SavedModel directory (or GraphDef file) at `path`."""
    path = Path(path)
    structure = analyze(path, signature=signature, tags=tags)
    prefix = path / "variables" / "variables" if path.is_dir() else None
    return render_page(build_document(structure, prefix, path.absolute().name))


def write_view(path: str | Path, output: str | Path, *, signature: str | None = None,
               tags: set[str] | None = None) -> int:
    """Write the viewer page of the model at `path` to `output` (atomically); its size in bytes."""
    page = view_model(path, signature=signature, tags=tags)
    write_file(output, page)
    return len(page.encode("utf-8"))


def _asset(name: str) -> str:
    return resources.files("savedmodel.views").joinpath(name).read_text(encoding="utf-8")
