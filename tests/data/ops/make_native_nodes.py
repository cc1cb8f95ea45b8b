"""Write each group's NodeDefs in binary form for the native engine's fixture replay.

`<group>.json` holds each case's NodeDef in protobuf text format, which the Rust protobuf
library does not read; `<group>.nodes.pb` holds the same NodeDefs as one binary GraphDef whose
node i is case i's NodeDef, renamed to the case id. Derived from the JSON alone (no TensorFlow);
tests/test_native_fixtures.py checks the files are current.

Usage: python tests/data/ops/make_native_nodes.py
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from google.protobuf import text_format

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from savedmodel.protos import graph_pb2, node_def_pb2  # noqa: E402

HERE = Path(__file__).resolve().parent


def nodes_of(group_json: Path) -> bytes:
    """The binary GraphDef of a group's NodeDefs, one per case, named by case id."""
    graph = graph_pb2.GraphDef()
    for record in json.loads(group_json.read_text()):
        node = text_format.Parse(record["node_def"], node_def_pb2.NodeDef())
        node.name = record["id"]
        graph.node.append(node)
    return graph.SerializeToString(deterministic=True)


def main() -> None:
    for path in sorted(HERE.glob("*.json")):
        path.with_suffix(".nodes.pb").write_bytes(nodes_of(path))
        print(path.with_suffix(".nodes.pb").name)


if __name__ == "__main__":
    main()
