from google.protobuf import any_pb2 as _any_pb2
from savedmodel.protos import tensor_shape_pb2 as _tensor_shape_pb2
from savedmodel.protos import types_pb2 as _types_pb2
from savedmodel.protos import variable_pb2 as _variable_pb2
from savedmodel.protos import versions_pb2 as _versions_pb2
from savedmodel.protos import struct_pb2 as _struct_pb2
from savedmodel.protos import trackable_object_graph_pb2 as _trackable_object_graph_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SavedObjectGraph(_message.Message):
    __slots__ = ("nodes", "concrete_functions")
    class ConcreteFunctionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: SavedConcreteFunction
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[SavedConcreteFunction, _Mapping]] = ...) -> None: ...
    NODES_FIELD_NUMBER: _ClassVar[int]
    CONCRETE_FUNCTIONS_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[SavedObject]
    concrete_functions: _containers.MessageMap[str, SavedConcreteFunction]
    def __init__(self, nodes: _Optional[_Iterable[_Union[SavedObject, _Mapping]]] = ..., concrete_functions: _Optional[_Mapping[str, SavedConcreteFunction]] = ...) -> None: ...

class SavedObject(_message.Message):
    __slots__ = ("children", "dependencies", "slot_variables", "user_object", "asset", "function", "variable", "bare_concrete_function", "constant", "resource", "captured_tensor", "saveable_objects", "registered_name", "serialized_user_proto", "registered_saver")
    class SaveableObjectsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: SaveableObject
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[SaveableObject, _Mapping]] = ...) -> None: ...
    CHILDREN_FIELD_NUMBER: _ClassVar[int]
    DEPENDENCIES_FIELD_NUMBER: _ClassVar[int]
    SLOT_VARIABLES_FIELD_NUMBER: _ClassVar[int]
    USER_OBJECT_FIELD_NUMBER: _ClassVar[int]
    ASSET_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    VARIABLE_FIELD_NUMBER: _ClassVar[int]
    BARE_CONCRETE_FUNCTION_FIELD_NUMBER: _ClassVar[int]
    CONSTANT_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    CAPTURED_TENSOR_FIELD_NUMBER: _ClassVar[int]
    SAVEABLE_OBJECTS_FIELD_NUMBER: _ClassVar[int]
    REGISTERED_NAME_FIELD_NUMBER: _ClassVar[int]
    SERIALIZED_USER_PROTO_FIELD_NUMBER: _ClassVar[int]
    REGISTERED_SAVER_FIELD_NUMBER: _ClassVar[int]
    children: _containers.RepeatedCompositeFieldContainer[_trackable_object_graph_pb2.TrackableObjectGraph.TrackableObject.ObjectReference]
    dependencies: _containers.RepeatedCompositeFieldContainer[_trackable_object_graph_pb2.TrackableObjectGraph.TrackableObject.ObjectReference]
    slot_variables: _containers.RepeatedCompositeFieldContainer[_trackable_object_graph_pb2.TrackableObjectGraph.TrackableObject.SlotVariableReference]
    user_object: SavedUserObject
    asset: SavedAsset
    function: SavedFunction
    variable: SavedVariable
    bare_concrete_function: SavedBareConcreteFunction
    constant: SavedConstant
    resource: SavedResource
    captured_tensor: CapturedTensor
    saveable_objects: _containers.MessageMap[str, SaveableObject]
    registered_name: str
    serialized_user_proto: _any_pb2.Any
    registered_saver: str
    def __init__(self, children: _Optional[_Iterable[_Union[_trackable_object_graph_pb2.TrackableObjectGraph.TrackableObject.ObjectReference, _Mapping]]] = ..., dependencies: _Optional[_Iterable[_Union[_trackable_object_graph_pb2.TrackableObjectGraph.TrackableObject.ObjectReference, _Mapping]]] = ..., slot_variables: _Optional[_Iterable[_Union[_trackable_object_graph_pb2.TrackableObjectGraph.TrackableObject.SlotVariableReference, _Mapping]]] = ..., user_object: _Optional[_Union[SavedUserObject, _Mapping]] = ..., asset: _Optional[_Union[SavedAsset, _Mapping]] = ..., function: _Optional[_Union[SavedFunction, _Mapping]] = ..., variable: _Optional[_Union[SavedVariable, _Mapping]] = ..., bare_concrete_function: _Optional[_Union[SavedBareConcreteFunction, _Mapping]] = ..., constant: _Optional[_Union[SavedConstant, _Mapping]] = ..., resource: _Optional[_Union[SavedResource, _Mapping]] = ..., captured_tensor: _Optional[_Union[CapturedTensor, _Mapping]] = ..., saveable_objects: _Optional[_Mapping[str, SaveableObject]] = ..., registered_name: _Optional[str] = ..., serialized_user_proto: _Optional[_Union[_any_pb2.Any, _Mapping]] = ..., registered_saver: _Optional[str] = ...) -> None: ...

class SavedUserObject(_message.Message):
    __slots__ = ("identifier", "version", "metadata")
    IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    identifier: str
    version: _versions_pb2.VersionDef
    metadata: str
    def __init__(self, identifier: _Optional[str] = ..., version: _Optional[_Union[_versions_pb2.VersionDef, _Mapping]] = ..., metadata: _Optional[str] = ...) -> None: ...

class SavedAsset(_message.Message):
    __slots__ = ("asset_file_def_index",)
    ASSET_FILE_DEF_INDEX_FIELD_NUMBER: _ClassVar[int]
    asset_file_def_index: int
    def __init__(self, asset_file_def_index: _Optional[int] = ...) -> None: ...

class SavedFunction(_message.Message):
    __slots__ = ("concrete_functions", "function_spec")
    CONCRETE_FUNCTIONS_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_SPEC_FIELD_NUMBER: _ClassVar[int]
    concrete_functions: _containers.RepeatedScalarFieldContainer[str]
    function_spec: FunctionSpec
    def __init__(self, concrete_functions: _Optional[_Iterable[str]] = ..., function_spec: _Optional[_Union[FunctionSpec, _Mapping]] = ...) -> None: ...

class CapturedTensor(_message.Message):
    __slots__ = ("name", "concrete_function")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CONCRETE_FUNCTION_FIELD_NUMBER: _ClassVar[int]
    name: str
    concrete_function: str
    def __init__(self, name: _Optional[str] = ..., concrete_function: _Optional[str] = ...) -> None: ...

class SavedConcreteFunction(_message.Message):
    __slots__ = ("bound_inputs", "canonicalized_input_signature", "output_signature")
    BOUND_INPUTS_FIELD_NUMBER: _ClassVar[int]
    CANONICALIZED_INPUT_SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    bound_inputs: _containers.RepeatedScalarFieldContainer[int]
    canonicalized_input_signature: _struct_pb2.StructuredValue
    output_signature: _struct_pb2.StructuredValue
    def __init__(self, bound_inputs: _Optional[_Iterable[int]] = ..., canonicalized_input_signature: _Optional[_Union[_struct_pb2.StructuredValue, _Mapping]] = ..., output_signature: _Optional[_Union[_struct_pb2.StructuredValue, _Mapping]] = ...) -> None: ...

class SavedBareConcreteFunction(_message.Message):
    __slots__ = ("concrete_function_name", "argument_keywords", "allowed_positional_arguments", "function_spec")
    CONCRETE_FUNCTION_NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENT_KEYWORDS_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_POSITIONAL_ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_SPEC_FIELD_NUMBER: _ClassVar[int]
    concrete_function_name: str
    argument_keywords: _containers.RepeatedScalarFieldContainer[str]
    allowed_positional_arguments: int
    function_spec: FunctionSpec
    def __init__(self, concrete_function_name: _Optional[str] = ..., argument_keywords: _Optional[_Iterable[str]] = ..., allowed_positional_arguments: _Optional[int] = ..., function_spec: _Optional[_Union[FunctionSpec, _Mapping]] = ...) -> None: ...

class SavedConstant(_message.Message):
    __slots__ = ("operation",)
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    operation: str
    def __init__(self, operation: _Optional[str] = ...) -> None: ...

class SavedVariable(_message.Message):
    __slots__ = ("dtype", "shape", "trainable", "synchronization", "aggregation", "name", "device", "experimental_distributed_variable_components")
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    TRAINABLE_FIELD_NUMBER: _ClassVar[int]
    SYNCHRONIZATION_FIELD_NUMBER: _ClassVar[int]
    AGGREGATION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    EXPERIMENTAL_DISTRIBUTED_VARIABLE_COMPONENTS_FIELD_NUMBER: _ClassVar[int]
    dtype: _types_pb2.DataType
    shape: _tensor_shape_pb2.TensorShapeProto
    trainable: bool
    synchronization: _variable_pb2.VariableSynchronization
    aggregation: _variable_pb2.VariableAggregation
    name: str
    device: str
    experimental_distributed_variable_components: _containers.RepeatedCompositeFieldContainer[SavedVariable]
    def __init__(self, dtype: _Optional[_Union[_types_pb2.DataType, str]] = ..., shape: _Optional[_Union[_tensor_shape_pb2.TensorShapeProto, _Mapping]] = ..., trainable: _Optional[bool] = ..., synchronization: _Optional[_Union[_variable_pb2.VariableSynchronization, str]] = ..., aggregation: _Optional[_Union[_variable_pb2.VariableAggregation, str]] = ..., name: _Optional[str] = ..., device: _Optional[str] = ..., experimental_distributed_variable_components: _Optional[_Iterable[_Union[SavedVariable, _Mapping]]] = ...) -> None: ...

class FunctionSpec(_message.Message):
    __slots__ = ("fullargspec", "is_method", "input_signature", "jit_compile")
    class JitCompile(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        DEFAULT: _ClassVar[FunctionSpec.JitCompile]
        ON: _ClassVar[FunctionSpec.JitCompile]
        OFF: _ClassVar[FunctionSpec.JitCompile]
    DEFAULT: FunctionSpec.JitCompile
    ON: FunctionSpec.JitCompile
    OFF: FunctionSpec.JitCompile
    FULLARGSPEC_FIELD_NUMBER: _ClassVar[int]
    IS_METHOD_FIELD_NUMBER: _ClassVar[int]
    INPUT_SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    JIT_COMPILE_FIELD_NUMBER: _ClassVar[int]
    fullargspec: _struct_pb2.StructuredValue
    is_method: bool
    input_signature: _struct_pb2.StructuredValue
    jit_compile: FunctionSpec.JitCompile
    def __init__(self, fullargspec: _Optional[_Union[_struct_pb2.StructuredValue, _Mapping]] = ..., is_method: _Optional[bool] = ..., input_signature: _Optional[_Union[_struct_pb2.StructuredValue, _Mapping]] = ..., jit_compile: _Optional[_Union[FunctionSpec.JitCompile, str]] = ...) -> None: ...

class SavedResource(_message.Message):
    __slots__ = ("device",)
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    device: str
    def __init__(self, device: _Optional[str] = ...) -> None: ...

class SaveableObject(_message.Message):
    __slots__ = ("save_function", "restore_function")
    SAVE_FUNCTION_FIELD_NUMBER: _ClassVar[int]
    RESTORE_FUNCTION_FIELD_NUMBER: _ClassVar[int]
    save_function: int
    restore_function: int
    def __init__(self, save_function: _Optional[int] = ..., restore_function: _Optional[int] = ...) -> None: ...
