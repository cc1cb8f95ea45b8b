from savedmodel.protos import classification_pb2 as _classification_pb2
from savedmodel.protos import get_model_metadata_pb2 as _get_model_metadata_pb2
from savedmodel.protos import inference_pb2 as _inference_pb2
from savedmodel.protos import predict_pb2 as _predict_pb2
from savedmodel.protos import regression_pb2 as _regression_pb2
from google.protobuf import descriptor as _descriptor
from typing import ClassVar as _ClassVar

DESCRIPTOR: _descriptor.FileDescriptor
