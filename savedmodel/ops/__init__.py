"""TensorFlow's op functions (`sm.add`, `sm.matmul`, `sm.nn.relu`, ...), built on `apply_op`.

Each function names its nodes as TensorFlow's function of the same name does, so traced graphs
print as TensorFlow's do; eagerly, each runs the runtime's kernel for its op.
"""
