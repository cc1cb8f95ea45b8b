from savedmodel.protos import function_pb2 as _function_pb2
from savedmodel.protos import graph_debug_info_pb2 as _graph_debug_info_pb2
from savedmodel.protos import node_def_pb2 as _node_def_pb2
from savedmodel.protos import versions_pb2 as _versions_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GraphDef(_message.Message):
    __slots__ = ("node", "versions", "version", "library", "debug_info")
    NODE_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    LIBRARY_FIELD_NUMBER: _ClassVar[int]
    DEBUG_INFO_FIELD_NUMBER: _ClassVar[int]
    node: _containers.RepeatedCompositeFieldContainer[_node_def_pb2.NodeDef]
    versions: _versions_pb2.VersionDef
    version: int
    library: _function_pb2.FunctionDefLibrary
    debug_info: _graph_debug_info_pb2.GraphDebugInfo
    def __init__(self, node: _Optional[_Iterable[_Union[_node_def_pb2.NodeDef, _Mapping]]] = ..., versions: _Optional[_Union[_versions_pb2.VersionDef, _Mapping]] = ..., version: _Optional[int] = ..., library: _Optional[_Union[_function_pb2.FunctionDefLibrary, _Mapping]] = ..., debug_info: _Optional[_Union[_graph_debug_info_pb2.GraphDebugInfo, _Mapping]] = ...) -> None: ...
