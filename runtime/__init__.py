"""File readers and the numpy runtime; imports only numpy, protobuf and `savedmodel.protos`."""
