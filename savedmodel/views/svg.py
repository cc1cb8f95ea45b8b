"""The SVG view: a picture of the graph drawn with our own layered layout (no Graphviz).

Each body is laid out by `layout.layered_layout`. An expanded call node grows into a container
that holds its callees' drawings side by side, each in a dashed frame labelled with the attr
that names it, so nesting shows as boxes within boxes and edges never leave their body. Boxes
show the op (bold) over the node name; hovering shows the node's full text line. Text is
measured by character count in a monospace font, so the drawing depends on nothing installed.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

from savedmodel.views.diagram import PALETTE, Block, Box, Link, build
from savedmodel.views.layout import Layout, Point, layered_layout
from savedmodel.views.select import Selection

FONT = "DejaVu Sans Mono, Menlo, Consolas, monospace"
TITLE_SIZE, NAME_SIZE = 12.0, 10.0
CHAR_WIDTH = 0.61
"""Advance width of a monospace character, in ems."""
BOX_HEIGHT, PORT_HEIGHT = 38.0, 32.0
PAD, LABEL, GAP = 10.0, 20.0, 16.0
MAX_NAME = 36
PORT_SPACING = 7.0
"""Room per edge along a box's side, so many edges into one node stay apart."""
EDGE_COLOURS = {False: "#555555", True: "#999999"}


@dataclass
class _Drawing:
    """A block measured and laid out; `inner` places callee drawings inside call boxes
    (offsets from the box's top-left corner)."""

    block: Block
    layout: Layout
    sizes: dict[str, tuple[float, float]]
    inner: dict[str, list[tuple[float, float, _Drawing]]]
    width: float
    height: float


def render_svg(selection: Selection, *, expand: bool = False, all_attrs: bool = False) -> str:
    drawing = _measure(build(selection, expand, all_attrs))
    width, height = drawing.width + 2 * PAD, drawing.height + 2 * PAD
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_n(width)}" height="{_n(height)}" '
           f'viewBox="0 0 {_n(width)} {_n(height)}" font-family={quoteattr(FONT)}>',
           _defs(), f'<rect width="{_n(width)}" height="{_n(height)}" fill="#ffffff"/>']
    _draw(drawing, PAD, PAD, out, top_level=True)
    out.append("</svg>")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + "\n".join(out) + "\n"


def text_width(text: str, size: float) -> float:
    return len(text) * size * CHAR_WIDTH


def elide(text: str, limit: int = MAX_NAME) -> str:
    """Long names keep their start and end, which say the most (scope and op)."""
    if len(text) <= limit:
        return text
    keep = limit - 3
    return text[:keep // 2] + "..." + text[len(text) - (keep - keep // 2):]


def _box_size(box: Box) -> tuple[float, float]:
    width = max(text_width(elide(box.title), TITLE_SIZE), text_width(elide(_subtitle(box)), NAME_SIZE))
    height = BOX_HEIGHT if box.kind in ("node", "missing") else PORT_HEIGHT
    return max(width + 2 * PAD, 48.0), height


def _subtitle(box: Box) -> str:
    """The name under the op, unless it only repeats it (`NoOp` named `NoOp`)."""
    return "" if box.subtitle == box.title else box.subtitle


def _measure(block: Block) -> _Drawing:
    sizes, inner = {}, {}
    ins, outs = Counter(link.target for link in block.links), Counter(link.source for link in block.links)
    for box in block.boxes:
        width, height = _box_size(box)
        width = max(width, PORT_SPACING * max(ins[box.id], outs[box.id]))
        callees = [_measure(child) for child in block.children.get(box.id, [])]
        if callees:
            row = sum(c.width for c in callees) + GAP * (len(callees) - 1)
            width = max(width, row + 2 * PAD)
            height = BOX_HEIGHT + max(c.height for c in callees) + PAD
            x = (width - row) / 2
            inner[box.id] = []
            for callee in callees:
                inner[box.id].append((x, BOX_HEIGHT, callee))
                x += callee.width + GAP
        sizes[box.id] = (width, height)
    layout = layered_layout(sizes, [(link.source, link.target) for link in block.links], margin=PAD)
    width = max(layout.width, text_width(block.label, TITLE_SIZE) + 2 * PAD)
    return _Drawing(block, layout, sizes, inner, width, layout.height + LABEL)


def _draw(drawing: _Drawing, left: float, top: float, out: list[str], top_level: bool = False) -> None:
    weight = ' font-weight="bold"' if top_level else ""
    if not top_level:
        out.append(f'<rect class="frame" x="{_n(left)}" y="{_n(top)}" width="{_n(drawing.width)}" '
                   f'height="{_n(drawing.height)}" rx="6" fill="#ffffff" fill-opacity="0.85" '
                   f'stroke="#8759b3" stroke-dasharray="5,3"/>')
    out.append(f'<text x="{_n(left + PAD)}" y="{_n(top + 14)}" font-size="{_n(TITLE_SIZE)}"{weight} '
               f'fill="#5a3d7a">{escape(drawing.block.label)}</text>')
    origin = (left, top + LABEL)
    for link, route in zip(drawing.block.links, drawing.layout.routes):
        if route:
            out.append(_edge(link, route, origin))
    for box in drawing.block.boxes:
        x, y = drawing.layout.positions[box.id]
        x, y = x + origin[0], y + origin[1]
        out.append(_box(box, x, y, *drawing.sizes[box.id], box.id in drawing.inner))
        for dx, dy, callee in drawing.inner.get(box.id, []):
            _draw(callee, x + dx, y + dy, out)
        if box.id in drawing.inner:
            out.append("</g>")


def _box(box: Box, x: float, y: float, width: float, height: float, container: bool) -> str:
    """A box's group; a container's group stays open for its callees (closed by the caller)."""
    fill, stroke = PALETTE[box.category]
    radius = PORT_HEIGHT / 2 if box.kind in ("input", "output") else 5.0
    dash = ' stroke-dasharray="4,3"' if box.kind == "missing" else ""
    centre = x + width / 2
    parts = [f'<g class="{box.kind}">', f"<title>{escape(box.tooltip)}</title>",
             f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(width)}" height="{_n(height)}" '
             f'rx="{_n(radius)}" fill="{fill}" stroke="{stroke}"{dash}/>',
             f'<text x="{_n(centre)}" y="{_n(y + (16 if _subtitle(box) else 23))}" text-anchor="middle" '
             f'font-size="{_n(TITLE_SIZE)}" '
             f'font-weight="bold" fill="#222222">{escape(elide(box.title))}</text>']
    if _subtitle(box):
        parts.append(f'<text x="{_n(centre)}" y="{_n(y + 29)}" text-anchor="middle" '
                     f'font-size="{_n(NAME_SIZE)}" fill="#555555">{escape(elide(box.subtitle))}</text>')
    if not container:
        parts.append("</g>")
    return "".join(parts)


def _edge(link: Link, route: tuple[Point, ...], origin: Point) -> str:
    points = [(x + origin[0], y + origin[1]) for x, y in route]
    path = [f"M{_n(points[0][0])},{_n(points[0][1])}"]
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        bend = (y1 - y0) / 2
        path.append(f"C{_n(x0)},{_n(y0 + bend)} {_n(x1)},{_n(y1 - bend)} {_n(x1)},{_n(y1)}")
    colour = EDGE_COLOURS[link.control]
    dash = ' stroke-dasharray="5,4"' if link.control else ""
    marker = "control" if link.control else "data"
    return (f'<path class="{"control" if link.control else "edge"}" d="{" ".join(path)}" fill="none" '
            f'stroke="{colour}" stroke-width="1.2"{dash} marker-end="url(#arrow-{marker})"/>')


def _defs() -> str:
    markers = "".join(
        f'<marker id="arrow-{name}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" '
        f'markerHeight="8" markerUnits="userSpaceOnUse" orient="auto">'
        f'<path d="M0,0 L10,5 L0,10 z" fill="{EDGE_COLOURS[control]}"/></marker>'
        for name, control in (("data", False), ("control", True)))
    return f"<defs>{markers}</defs>"


def _n(value: float) -> str:
    """Coordinates with one decimal, and no `-0.0`, so the output is byte-stable."""
    text = f"{value:.1f}"
    return "0.0" if text == "-0.0" else text
