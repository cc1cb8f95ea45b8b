"""The protobuf text view: the selected GraphDef as TensorFlow's `as_graph_def()` prints it, or
the selected FunctionDef.

`str()` of a message is that text with the upb protobuf backend that both TensorFlow and we
use: fields in declaration order, map entries in the order the file holds them.
"""
from __future__ import annotations

from savedmodel.views.select import Selection


def render_pbtxt(selection: Selection) -> str:
    """A signature's selection is a GraphDef holding only the nodes it needs and the library
    functions those call, with the graph's versions."""
    return str(selection.proto)
