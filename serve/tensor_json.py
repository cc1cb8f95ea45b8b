"""TensorFlow Serving's JSON encoding of tensors (its REST API), to and from numpy.

Requests: the row format (`instances`: one item per batch row, objects keyed by input name when
the signature has several inputs) and the columnar format (`inputs`: one value, or an object of
named values); `{"b64": "..."}` for binary strings; the NaN, Infinity and -Infinity tokens
(Python's json module reads and writes them). Responses: `predictions` for row requests (a list,
or a list of objects when there are several outputs), `outputs` for columnar ones; string outputs
whose name ends in `_bytes`, or that are not UTF-8, as `{"b64": ...}`.

Values here only become arrays (a list of lists of different lengths is an error naming the
input); dtypes and shapes are checked against the signature by the servable, the same way for
REST and gRPC.
"""
from __future__ import annotations

import base64
import binascii
import json

import numpy as np

from savedmodel.serve.errors import invalid

try:
    import orjson
except ImportError:  # optional (in the serve extra): the standard library parses the same JSON
    orjson = None

B64 = "b64"
BYTES_SUFFIX = "_bytes"


def parse_body(body: bytes) -> dict:
    """The request's JSON object; INVALID_ARGUMENT naming the position of a syntax error."""
    try:
        document = _loads(body)
    except UnicodeDecodeError as err:
        raise invalid(f"JSON Parse error: the body is not UTF-8 text (byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise invalid(f"JSON Parse error: {err.msg} at line {err.lineno} column {err.colno} "
                      f"(char {err.pos})") from None
    except RecursionError:
        raise invalid("JSON Parse error: the document is nested too deeply") from None
    if not isinstance(document, dict):
        raise invalid(f"JSON Parse error: the request must be a JSON object, got {_json_type(document)}")
    return document


def _loads(body: bytes):
    """orjson when installed (it reads numbers several times faster); the standard parser for
    what orjson refuses: the NaN / Infinity tokens TensorFlow Serving accepts, and syntax errors,
    which it then locates."""
    if orjson is not None:
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
    return json.loads(body)


def signature_name(document: dict) -> str | None:
    name = document.get("signature_name")
    if name is not None and not isinstance(name, str):
        raise invalid(f"JSON Value: {_short(name)} not formatted correctly. 'signature_name' key "
                      "must be a string value.")
    return name or None


def predict_inputs(document: dict, input_names: list[str], string_inputs: set[str]) -> tuple[dict, bool]:
    """(inputs by name as arrays, whether the request used the row format)."""
    has_rows, has_columns = "instances" in document, "inputs" in document
    if has_rows == has_columns:
        raise invalid("Missing 'inputs' or 'instances' key" if not has_rows else
                      "Request can have either 'inputs' or 'instances' keys, but not both")
    if has_rows:
        return _rows(document["instances"], input_names, string_inputs), True
    return _columns(document["inputs"], input_names, string_inputs), False


def _is_named(value, input_names: list[str]) -> bool:
    """Whether a JSON object names inputs (rather than being a single input's {"b64": ...})."""
    return isinstance(value, dict) and not _is_b64(value)


def _rows(instances, input_names: list[str], string_inputs: set[str]) -> dict:
    if not isinstance(instances, list):
        raise invalid(f"Expecting 'instances' to be an list/array, got {_json_type(instances)}")
    if not instances:
        raise invalid("No values in 'instances' (an empty list)")
    named = [_is_named(item, input_names) for item in instances]
    if not any(named):
        if len(input_names) != 1:
            raise invalid(f"Expecting each item of 'instances' to be an object naming the inputs "
                          f"{input_names}; got {_json_type(instances[0])}")
        name = input_names[0]
        return {name: to_array(instances, name, name in string_inputs)}
    if not all(named):
        row = named.index(not named[0])
        raise invalid(f"Expecting object but got list at item {row} of instances: every item must "
                      "be an object when one is")
    columns: dict[str, list] = {}
    for row, item in enumerate(instances):
        if row and item.keys() != columns.keys():
            raise invalid(f"Failed to process element: {row} of 'instances' list. It names "
                          f"{sorted(item)}, but item 0 names {sorted(columns)}")
        for name, value in item.items():
            columns.setdefault(name, []).append(value)
    return {name: to_array(values, name, name in string_inputs) for name, values in columns.items()}


def _columns(inputs, input_names: list[str], string_inputs: set[str]) -> dict:
    if _is_named(inputs, input_names):
        return {name: to_array(value, name, name in string_inputs) for name, value in inputs.items()}
    if len(input_names) != 1:
        raise invalid(f"Expecting 'inputs' to be an object naming the inputs {input_names}; "
                      f"got {_json_type(inputs)}")
    name = input_names[0]
    return {name: to_array(inputs, name, name in string_inputs)}


def to_array(value, name: str, strings: bool) -> np.ndarray:
    """A JSON value as an array: nested lists must be rectangular."""
    try:
        if strings:
            value = _decode_strings(value, name)
        array = np.asarray(value, dtype=object if strings else None)
    except RecursionError:
        raise invalid(f"input {name!r}: the lists are nested too deeply for a tensor") from None
    except ValueError as err:
        if "maximum supported dimension" in str(err) or "exceed the maximum number of dimension" in str(err):
            raise invalid(f"input {name!r}: the lists are nested too deeply for a tensor ({err})") from None
        raise invalid(f"input {name!r}: the lists are ragged (they must be rectangular): {err}") from None
    if not strings and array.dtype.kind == "O":
        raise invalid(f"input {name!r}: {_json_types_in(value)} cannot be a tensor value")
    if strings and array.dtype.kind == "O" and array.size and not all(
            isinstance(v, bytes) for v in array.flat):
        raise invalid(f"input {name!r}: the lists are ragged (they must be rectangular)")
    return array


def _decode_strings(value, name: str):
    """Strings as bytes (UTF-8, or the bytes of a {"b64": ...} object); other values pass
    through, for the servable to reject with the dtype they have."""
    if isinstance(value, list):
        return [_decode_strings(v, name) for v in value]
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, dict):
        if not _is_b64(value):
            raise invalid(f"input {name!r}: JSON Value: {_short(value)} not formatted correctly for "
                          "base64 data (an object with one key, \"b64\", holding a string)")
        try:
            return base64.b64decode(value[B64], validate=True)
        except (binascii.Error, ValueError):
            raise invalid(f"input {name!r}: Unable to base64 decode {_short(value[B64])}") from None
    raise invalid(f"input {name!r}: JSON Value: {_short(value)} Type: {_json_type(value)} is not of "
                  "expected type: string")


def _is_b64(value) -> bool:
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get(B64), str)


def predict_response(outputs: dict[str, np.ndarray], rows: bool) -> dict:
    """`{"predictions": ...}` for a row request, `{"outputs": ...}` for a columnar one."""
    values = {name: _to_json(array, name) for name, array in outputs.items()}
    if not rows:
        return {"outputs": next(iter(values.values())) if len(values) == 1 else values}
    batch = None
    for name, array in outputs.items():
        size = array.shape[0] if array.ndim else None
        if size is None or batch is not None and size != batch:
            raise invalid(f"Tensor name: {name} has inconsistent batch size: "
                          f"{'a scalar' if size is None else size}, expecting: {batch}; use the "
                          "columnar format ('inputs') for outputs without a common batch dimension")
        batch = size
    if len(values) == 1:
        return {"predictions": next(iter(values.values()))}
    names = list(values)
    return {"predictions": [dict(zip(names, row)) for row in zip(*values.values())]}


def _to_json(array: np.ndarray, name: str):
    if array.dtype.kind in "OSU":
        binary = name.endswith(BYTES_SUFFIX)
        return _map_nested(array.tolist(), lambda v: _string_json(v, binary))
    if array.dtype.kind == "c":
        raise invalid(f"output {name!r}: complex values have no JSON form")
    if array.dtype.kind == "f" and array.dtype.itemsize < 4:
        array = array.astype(np.float32)
    return array.tolist()


def _string_json(value, binary: bool):
    if isinstance(value, str):
        value = value.encode()
    if not binary:
        try:
            return value.decode()
        except UnicodeDecodeError:
            pass
    return {B64: base64.b64encode(value).decode()}


def _map_nested(value, fn):
    if isinstance(value, list):
        return [_map_nested(v, fn) for v in value]
    return fn(value)


def dumps(document) -> bytes:
    """JSON with TensorFlow Serving's NaN / Infinity / -Infinity tokens for non-finite floats."""
    return json.dumps(document, separators=(",", ":")).encode()


def _json_type(value) -> str:
    return {dict: "Object", list: "Array", str: "String", bool: "Boolean", type(None): "Null"}.get(
        type(value), "Number")


def _json_types_in(value) -> str:
    """What a value that numpy could not make a numeric array of holds, for the message."""
    kinds: set[str] = set()

    def walk(v):
        if isinstance(v, list):
            for item in v:
                walk(item)
        else:
            kinds.add(_json_type(v))
    walk(value)
    return "a value holding " + ", ".join(sorted(kinds))


def _short(value) -> str:
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."
