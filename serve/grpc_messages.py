"""TensorFlow Serving's gRPC messages to and from what the serving core takes and gives.

TensorProtos become numpy arrays through the runtime's own reader (every encoding TensorFlow
writes; sizes checked against the shape before anything is allocated); Examples become the
serialized strings a classify or regress signature reads; signature defs and version states
become TensorFlow Serving's metadata and status messages.
"""
from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass

import numpy as np

from savedmodel.protos import (error_codes_pb2, example_pb2, get_model_metadata_pb2, get_model_status_pb2,
                               input_pb2, meta_graph_pb2, tensor_pb2, types_pb2)
from savedmodel.runtime.errors import SavedModelError
from savedmodel.runtime.limits import Limits
from savedmodel.runtime.tensor_proto import from_numpy, to_numpy
from savedmodel.serve.errors import ServingError, invalid
from savedmodel.serve.manager import VersionStatus

SIGNATURE_DEF_FIELD = "signature_def"
SIGNATURE_DEF_MAP_TYPE_URL = "type.googleapis.com/tensorflow.serving.SignatureDefMap"
"""The Any type URL TensorFlow Serving packs the signature defs with; TensorFlow's client checks
it when it unpacks them, so it names TensorFlow Serving's message, not our copy of it."""


def model_spec_of(spec) -> tuple[str, int | None, str | None]:
    """(model name, version or None, version label or None) of a ModelSpec."""
    choice = spec.WhichOneof("version_choice")
    return (spec.name, spec.version.value if choice == "version" else None,
            spec.version_label if choice == "version_label" else None)


@dataclass(frozen=True)
class _RequestLimits(Limits):
    """Limits on a request's tensors: a compact TensorProto (fewer values than its shape holds)
    may expand to no more than a message of the largest size accepted could carry."""

    def exceeded(self, field: str) -> str:
        return f"the server's limit of {self.max_const_bytes} bytes per request tensor"


_DTYPE_NAMES = {number: name for name, number in types_pb2.DataType.items()}


def check_dtypes(signature, protos: Mapping[str, tensor_pb2.TensorProto]) -> None:
    """INVALID_ARGUMENT for an input whose TensorProto has another dtype than the signature's:
    a gRPC request states its dtypes, so, as TensorFlow Serving does, nothing is converted
    (REST's JSON numbers are converted; they have no dtype of their own)."""
    for alias, proto in protos.items():
        spec = signature.inputs.get(alias)
        given = _DTYPE_NAMES.get(proto.dtype) or f"unknown dtype {proto.dtype}"
        if spec is not None and given != spec.dtype:
            raise invalid(f"input {alias!r} of signature {signature.name!r}: expects {_dtype(spec.dtype)} but "
                          f"the TensorProto holds {_dtype(given)}")


def _dtype(name: str) -> str:
    return name[3:].lower() if name.startswith("DT_") else name


def request_tensors(protos: Mapping[str, tensor_pb2.TensorProto], max_bytes: int) -> dict[str, np.ndarray]:
    """The request's input tensors as arrays, INVALID_ARGUMENT naming the input whose
    TensorProto does not hold what its dtype and shape say."""
    limits = _RequestLimits(max_const_bytes=max_bytes)
    arrays = {}
    for alias in sorted(protos):
        try:
            arrays[alias] = to_numpy(protos[alias], f"input {alias!r}", limits)
        except SavedModelError as err:
            raise invalid(str(err)) from None
    return arrays


def response_tensors(outputs: Mapping[str, np.ndarray], protos: MutableMapping[str, tensor_pb2.TensorProto]) -> None:
    """Fill the response's output map, encoded as TensorFlow's make_tensor_proto encodes them."""
    for alias, value in outputs.items():
        try:
            protos[alias].CopyFrom(from_numpy(value))
        except SavedModelError as err:
            raise ServingError("INTERNAL", f"output {alias!r} has no TensorProto form: {err}") from None


def serialized_examples(request_input: input_pb2.Input) -> list[bytes]:
    """The serialized tf.Examples a classify or regress signature reads, one per example. With
    a context, each example is the context's features overlaid by its own (the merge protobuf
    parsing gives context bytes followed by the example's, as TensorFlow Serving feeds them)."""
    kind = request_input.WhichOneof("kind")
    if kind is None:
        raise invalid("Input is empty: set example_list or example_list_with_context")
    if kind == "example_list":
        return [e.SerializeToString(deterministic=True) for e in request_input.example_list.examples]
    listed = request_input.example_list_with_context
    context = listed.context.SerializeToString()
    return [example_pb2.Example.FromString(context + e.SerializeToString()).SerializeToString(deterministic=True)
            for e in listed.examples]


def metadata_response(signature_defs: Mapping[str, meta_graph_pb2.SignatureDef],
                      fields: list[str]) -> get_model_metadata_pb2.GetModelMetadataResponse:
    """The signature defs in a SignatureDefMap, packed into the response's Any under
    "signature_def" (the one metadata field TensorFlow Serving defines)."""
    if not fields:
        raise invalid("GetModelMetadataRequest must specify at least one metadata_field")
    unsupported = [f for f in fields if f != SIGNATURE_DEF_FIELD]
    if unsupported:
        raise invalid(f"Metadata field {unsupported[0]} is not supported (the one supported is "
                      f"\"{SIGNATURE_DEF_FIELD}\")")
    signature_map = get_model_metadata_pb2.SignatureDefMap()
    for key in sorted(signature_defs):
        signature_map.signature_def[key].CopyFrom(signature_defs[key])
    response = get_model_metadata_pb2.GetModelMetadataResponse()
    packed = response.metadata[SIGNATURE_DEF_FIELD]
    packed.type_url = SIGNATURE_DEF_MAP_TYPE_URL
    packed.value = signature_map.SerializeToString(deterministic=True)
    return response


def status_response(statuses: list[VersionStatus]) -> get_model_status_pb2.GetModelStatusResponse:
    response = get_model_status_pb2.GetModelStatusResponse()
    states = get_model_status_pb2.ModelVersionStatus.State
    for status in statuses:
        entry = response.model_version_status.add(version=status.version, state=states.Value(status.state))
        entry.status.error_code = error_codes_pb2.Code.Value(status.error_code)
        entry.status.error_message = status.error_message
    return response
