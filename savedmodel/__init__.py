"""savedmodel: TensorFlow-format graphs, SavedModels and checkpoints without TensorFlow.

This package is the parent of `savedmodel.runtime`, which servers import on its own, so this
module must stay cheap: it imports nothing at import time.
"""
