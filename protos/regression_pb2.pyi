from savedmodel.protos import input_pb2 as _input_pb2
from savedmodel.protos import model_pb2 as _model_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Regression(_message.Message):
    __slots__ = ("value",)
    VALUE_FIELD_NUMBER: _ClassVar[int]
    value: float
    def __init__(self, value: _Optional[float] = ...) -> None: ...

class RegressionResult(_message.Message):
    __slots__ = ("regressions",)
    REGRESSIONS_FIELD_NUMBER: _ClassVar[int]
    regressions: _containers.RepeatedCompositeFieldContainer[Regression]
    def __init__(self, regressions: _Optional[_Iterable[_Union[Regression, _Mapping]]] = ...) -> None: ...

class RegressionRequest(_message.Message):
    __slots__ = ("model_spec", "input")
    MODEL_SPEC_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    model_spec: _model_pb2.ModelSpec
    input: _input_pb2.Input
    def __init__(self, model_spec: _Optional[_Union[_model_pb2.ModelSpec, _Mapping]] = ..., input: _Optional[_Union[_input_pb2.Input, _Mapping]] = ...) -> None: ...

class RegressionResponse(_message.Message):
    __slots__ = ("model_spec", "result")
    MODEL_SPEC_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    model_spec: _model_pb2.ModelSpec
    result: RegressionResult
    def __init__(self, model_spec: _Optional[_Union[_model_pb2.ModelSpec, _Mapping]] = ..., result: _Optional[_Union[RegressionResult, _Mapping]] = ...) -> None: ...
