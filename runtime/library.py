"""A graph's function library: FunctionDefs by name, compiled once into cached plans.

Inside a function body an input is either an argument name or `node:output_arg:index`, where
the output argument is named by the node's op definition; this module turns those into flat
output indices using the op definitions the SavedModel carries (its stripped op list) and the
signatures of the library's own functions, which act as ops too.
"""
from __future__ import annotations

from savedmodel.protos import function_pb2, op_def_pb2
from savedmodel.runtime import executor
from savedmodel.runtime.errors import SavedModelError
from savedmodel.runtime.plan import GraphError, GraphSpec, Plan, Ref, arg_length, compile_plan
from savedmodel.runtime.registry import Kernel


class FunctionLibrary:
    def __init__(self, library: function_pb2.FunctionDefLibrary, op_defs: dict[str, op_def_pb2.OpDef]):
        self.functions = {f.signature.name: f for f in library.function}
        self.op_defs = op_defs
        self._plans: dict[str, Plan] = {}
        self._call_kernels = {name: Kernel(name, self._call_kernel(name), True, False)
                              for name in self.functions}

    def function_kernel(self, op: str) -> Kernel | None:
        """The kernel for a node whose op is a library function's name, if it is one."""
        return self._call_kernels.get(op)

    def call(self, name: str, inputs: tuple, ctx: executor.Context) -> tuple:
        plan = self.plan(name)
        if len(inputs) != len(plan.feeds):
            raise SavedModelError(f"function {name!r} takes {len(plan.feeds)} inputs, got {len(inputs)}")
        return tuple(executor.run(plan, inputs, ctx))

    def plan(self, name: str) -> Plan:
        plan = self._plans.get(name)
        if plan is None:
            plan = self._plans[name] = self._compile(name)
        return plan

    def _call_kernel(self, name: str):
        def call_function(ctx, *inputs, **_):
            return ctx.call(name, inputs)
        return call_function

    def _compile(self, name: str) -> Plan:
        function = self.functions.get(name)
        if function is None:
            raise GraphError(f"no function {name!r} in the graph's library")
        signature = function.signature
        nodes = {node.name: node for node in function.node_def}
        spec = GraphSpec(f"function {name!r}", nodes, lambda text: self._resolve(name, nodes, text),
                         self.op_defs, self.function_kernel)
        feeds = [(arg.name, 0) for arg in signature.input_arg]
        fetches = [self._resolve(name, nodes, function.ret[arg.name]) for arg in signature.output_arg]
        targets = [function.control_ret[arg] for arg in signature.control_output]
        return compile_plan(spec, feeds, fetches, targets, keep_stateful=True)

    def _resolve(self, function: str, nodes: dict, text: str) -> Ref:
        parts = text.split(":")
        if len(parts) == 1:
            return parts[0], 0
        if len(parts) != 3 or not parts[2].isdigit():
            raise GraphError(f"function {function!r}: malformed input reference {text!r}")
        node = nodes.get(parts[0])
        if node is None:
            raise GraphError(f"function {function!r}: reference {text!r} to unknown node {parts[0]!r}")
        return parts[0], self._output_offset(node, parts[1], function) + int(parts[2])

    def _output_offset(self, node, arg_name: str, function: str) -> int:
        op_def = self.op_defs.get(node.op)
        if op_def is None and node.op in self.functions:
            op_def = self.functions[node.op].signature
        if op_def is None:
            return 0
        offset = 0
        for arg in op_def.output_arg:
            if arg.name == arg_name:
                return offset
            offset += arg_length(arg, node)
        raise GraphError(f"function {function!r}: op {node.op} of node {node.name!r} has no "
                         f"output {arg_name!r}")

