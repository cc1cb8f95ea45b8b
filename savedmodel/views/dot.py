"""The Graphviz DOT view: for `dot -Tsvg`, or any tool that reads DOT.

One node statement per box (labelled with op and node name), one edge statement per link
(control inputs dashed), and with expansion a `cluster_` subgraph per callee, nested inside
its caller's cluster, and a dotted edge from the call node to each callee's cluster.
"""
from __future__ import annotations

from savedmodel.views.diagram import PALETTE, Block, Box, build
from savedmodel.views.select import Selection

_SHAPES = {"node": "box", "input": "ellipse", "output": "ellipse", "missing": "box"}


def render_dot(selection: Selection, *, expand: bool = False, all_attrs: bool = False) -> str:
    top = build(selection, expand, all_attrs)
    lines = [f"digraph {quote(selection.body.name)} {{",
             f'  graph [compound=true, rankdir=TB, labelloc=t, fontname="Helvetica", '
             f"label={quote(top.label)}];",
             '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];',
             '  edge [color="#555555", arrowsize=0.7];']
    _block_lines(top, "  ", lines)
    lines.append("}")
    return "\n".join(lines) + "\n"


def quote(text: str) -> str:
    """A DOT double-quoted string; newlines become DOT's `\\n` line breaks."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _block_lines(block: Block, pad: str, lines: list[str]) -> None:
    lines += [pad + _box_statement(box) for box in block.boxes]
    for link in block.links:
        style = " [style=dashed]" if link.control else ""
        lines.append(f"{pad}{quote(link.source)} -> {quote(link.target)}{style};")
    for call_id, children in block.children.items():
        for child in children:
            cluster = "cluster_" + child.id
            lines.append(f"{pad}subgraph {quote(cluster)} {{")
            lines.append(f'{pad}  graph [label={quote(child.label)}, style="rounded,dashed", color="#8759b3"];')
            _block_lines(child, pad + "  ", lines)
            lines.append(f"{pad}}}")
            if child.boxes:
                lines.append(pad + _call_edge(call_id, child.boxes[0].id, cluster))


def _box_statement(box: Box) -> str:
    fill, stroke = PALETTE[box.category]
    style = ', style="rounded,dashed"' if box.kind == "missing" else ""
    return (f"{quote(box.id)} [label={quote(box.title + chr(10) + box.subtitle)}, "
            f'shape={_SHAPES[box.kind]}, fillcolor="{fill}", color="{stroke}", '
            f"tooltip={quote(box.tooltip)}{style}];")


def _call_edge(call_id: str, first: str, cluster: str) -> str:
    """The call node points at its callee's cluster (at its first box, clipped to the cluster)."""
    return (f"{quote(call_id)} -> {quote(first)} "
            f'[style=dotted, arrowhead=empty, color="#8759b3", lhead={quote(cluster)}];')
