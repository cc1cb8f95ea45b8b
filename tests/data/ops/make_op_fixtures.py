"""Record kernel fixtures with TensorFlow: for each case, the NodeDef TensorFlow builds, the
inputs, and TensorFlow's outputs (or the fact that TensorFlow rejects the inputs at run time).

Cases live in `cases_<group>.py` beside this file, each defining CASES, a list of `case(...)`
calls. Writes `<group>.json` (cases, NodeDefs in text format, strings inline) and `<group>.npz`
(the raw bytes of numeric arrays; loading needs no pickle). Needs TensorFlow 2.21.

Usage: python tests/data/ops/make_op_fixtures.py [GROUP ...]   (default: every cases_*.py)
"""
from __future__ import annotations

import base64
import importlib.util
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

HERE = Path(__file__).resolve().parent


def case(op: str, name: str = "", error: bool = False, rtol: float | None = None,
         atol: float | None = None, dynamic: bool = False, **args) -> dict:
    """One call of `tf.raw_ops.<op>`: numpy arrays (or lists of them) are inputs, anything else
    attrs. `error`: TensorFlow must reject the inputs when the op runs. `dynamic`: trace with
    unknown dimensions so that TensorFlow's shape checks do not reject bad inputs early."""
    return {"op": op, "name": name, "error": error, "rtol": rtol, "atol": atol,
            "dynamic": dynamic, "args": args}


def _is_input(value) -> bool:
    if isinstance(value, (np.ndarray, np.generic)):
        return True
    return isinstance(value, (list, tuple)) and len(value) > 0 and all(
        isinstance(v, (np.ndarray, np.generic)) for v in value)


def _spec(array: np.ndarray, dynamic: bool) -> tf.TensorSpec:
    shape = [None] * array.ndim if dynamic else array.shape
    return tf.TensorSpec(shape, tf.string if array.dtype.kind in "OSU" else tf.as_dtype(array.dtype))


def _record(spec: dict, index: int, arrays: dict) -> dict:
    op, args = spec["op"], spec["args"]
    flat, layout = [], {}
    for key, value in args.items():
        if _is_input(value):
            items = [np.asarray(v) for v in value] if isinstance(value, (list, tuple)) else [np.asarray(value)]
            layout[key] = (len(flat), len(items), isinstance(value, (list, tuple)))
            flat += items
    attrs = {k: v for k, v in args.items() if k not in layout}

    def call(*tensors):
        kwargs = {k: (list(tensors[s:s + n]) if is_list else tensors[s]) for k, (s, n, is_list) in layout.items()}
        return getattr(tf.raw_ops, op)(**kwargs, **attrs)

    concrete = tf.function(call).get_concrete_function(*[_spec(a, spec["dynamic"]) for a in flat])
    graph = concrete.graph.as_graph_def()
    placeholders = [n.name for n in graph.node if n.op == "Placeholder"]
    nodes = [n for n in graph.node if n.op == op
             and all(i.lstrip("^").split(":")[0] in placeholders for i in n.input)]
    assert len(nodes) == 1, f"{op}: expected one {op} node fed by the inputs, got {len(nodes)}"
    order = [placeholders.index(i.split(":")[0]) for i in nodes[0].input if not i.startswith("^")]
    case_id = f"{op}/{spec['name'] or index}"
    record = {"id": case_id, "op": op, "node_def": str(nodes[0]),
              "inputs": [_store(arrays, f"{case_id}/in{i}", flat[j]) for i, j in enumerate(order)],
              "rtol": spec["rtol"], "atol": spec["atol"]}
    try:
        outputs = tf.nest.flatten(concrete(*flat))
    except (tf.errors.InvalidArgumentError, tf.errors.OutOfRangeError, tf.errors.UnimplementedError) as err:
        assert spec["error"], f"{case_id}: TensorFlow raised {err.message}"
        record["error"] = type(err).__name__
        return record
    assert not spec["error"], f"{case_id}: TensorFlow accepted inputs the case says it rejects"
    record["outputs"] = [_store(arrays, f"{case_id}/out{i}", o.numpy()) for i, o in enumerate(outputs)]
    return record


def _store(arrays: dict, key: str, value) -> dict:
    value = np.asarray(value)
    if value.dtype.kind in "OSU":
        items = [v if isinstance(v, bytes) else str(v).encode() for v in value.ravel()]
        return {"dtype": "string", "shape": list(value.shape),
                "b64": [base64.b64encode(v).decode("ascii") for v in items]}
    arrays[key] = np.ascontiguousarray(value).reshape(-1).view(np.uint8)
    return {"dtype": tf.as_dtype(value.dtype).name, "shape": list(value.shape), "key": key}


def _load_cases(path: Path) -> list[dict]:
    module_spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(module_spec)
    module.case = case
    module_spec.loader.exec_module(module)
    return module.CASES


def main(groups: list[str]) -> None:
    paths = [HERE / f"cases_{g}.py" for g in groups] if groups else sorted(HERE.glob("cases_*.py"))
    for path in paths:
        group = path.stem.removeprefix("cases_")
        arrays: dict = {}
        records = [_record(spec, i, arrays) for i, spec in enumerate(_load_cases(path))]
        ids = [r["id"] for r in records]
        assert len(ids) == len(set(ids)), f"{group}: duplicate case ids"
        (HERE / f"{group}.json").write_text(json.dumps(records, indent=1) + "\n")
        np.savez_compressed(HERE / f"{group}.npz", **arrays)
        print(f"{group}: {len(records)} cases")


if __name__ == "__main__":
    main(sys.argv[1:])
