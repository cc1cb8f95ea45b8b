from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GraphDebugInfo(_message.Message):
    __slots__ = ("files", "frames_by_id", "traces_by_id", "traces", "name_to_trace_id")
    class FileLineCol(_message.Message):
        __slots__ = ("file_index", "line", "col", "func", "code")
        FILE_INDEX_FIELD_NUMBER: _ClassVar[int]
        LINE_FIELD_NUMBER: _ClassVar[int]
        COL_FIELD_NUMBER: _ClassVar[int]
        FUNC_FIELD_NUMBER: _ClassVar[int]
        CODE_FIELD_NUMBER: _ClassVar[int]
        file_index: int
        line: int
        col: int
        func: str
        code: str
        def __init__(self, file_index: _Optional[int] = ..., line: _Optional[int] = ..., col: _Optional[int] = ..., func: _Optional[str] = ..., code: _Optional[str] = ...) -> None: ...
    class StackTrace(_message.Message):
        __slots__ = ("file_line_cols", "frame_id")
        FILE_LINE_COLS_FIELD_NUMBER: _ClassVar[int]
        FRAME_ID_FIELD_NUMBER: _ClassVar[int]
        file_line_cols: _containers.RepeatedCompositeFieldContainer[GraphDebugInfo.FileLineCol]
        frame_id: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, file_line_cols: _Optional[_Iterable[_Union[GraphDebugInfo.FileLineCol, _Mapping]]] = ..., frame_id: _Optional[_Iterable[int]] = ...) -> None: ...
    class FramesByIdEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: GraphDebugInfo.FileLineCol
        def __init__(self, key: _Optional[int] = ..., value: _Optional[_Union[GraphDebugInfo.FileLineCol, _Mapping]] = ...) -> None: ...
    class TracesByIdEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: GraphDebugInfo.StackTrace
        def __init__(self, key: _Optional[int] = ..., value: _Optional[_Union[GraphDebugInfo.StackTrace, _Mapping]] = ...) -> None: ...
    class TracesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: GraphDebugInfo.StackTrace
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[GraphDebugInfo.StackTrace, _Mapping]] = ...) -> None: ...
    class NameToTraceIdEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    FILES_FIELD_NUMBER: _ClassVar[int]
    FRAMES_BY_ID_FIELD_NUMBER: _ClassVar[int]
    TRACES_BY_ID_FIELD_NUMBER: _ClassVar[int]
    TRACES_FIELD_NUMBER: _ClassVar[int]
    NAME_TO_TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    files: _containers.RepeatedScalarFieldContainer[str]
    frames_by_id: _containers.MessageMap[int, GraphDebugInfo.FileLineCol]
    traces_by_id: _containers.MessageMap[int, GraphDebugInfo.StackTrace]
    traces: _containers.MessageMap[str, GraphDebugInfo.StackTrace]
    name_to_trace_id: _containers.ScalarMap[str, int]
    def __init__(self, files: _Optional[_Iterable[str]] = ..., frames_by_id: _Optional[_Mapping[int, GraphDebugInfo.FileLineCol]] = ..., traces_by_id: _Optional[_Mapping[int, GraphDebugInfo.StackTrace]] = ..., traces: _Optional[_Mapping[str, GraphDebugInfo.StackTrace]] = ..., name_to_trace_id: _Optional[_Mapping[str, int]] = ...) -> None: ...
