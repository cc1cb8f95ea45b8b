"""A graph's function library: FunctionDefs by name, their bodies with resolved inputs, and
their compiled plans, each made once and cached.

Inside a function body an input is either an argument name or `node:output_arg:index`, where
the output argument is named by the node's op definition; this module turns those into flat
output indices using the op definitions the SavedModel carries (its stripped op list) and the
signatures of the library's own functions, which act as ops too.

Calls made while a plan runs (branches, loop bodies, calls left in place because a function
calls itself) nest Python frames; their depth is counted per thread and bounded by
`Limits.max_function_depth`, so a recursive or absurdly deep model is an error naming the
chain of calls, never a RecursionError.
"""
from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

from savedmodel.protos import function_pb2, op_def_pb2
from savedmodel.runtime import executor
from savedmodel.runtime.errors import SavedModelError
from savedmodel.runtime.limits import DEFAULT, Limits
from savedmodel.runtime.plan import (GraphError, GraphNode, GraphSpec, LoopBody, Plan, Ref, arg_length,
                                     compile_plan, loop_body, nesting_error)
from savedmodel.runtime.registry import Kernel

_CALLS: ContextVar[tuple[str, ...]] = ContextVar("savedmodel_calls", default=())
"""The functions running in this thread, outermost first."""


@dataclass(frozen=True)
class FunctionBody:
    nodes: dict[str, GraphNode]
    args: list[str]
    rets: list[Ref]
    control_rets: list[str]


class FunctionLibrary:
    def __init__(self, library: function_pb2.FunctionDefLibrary, op_defs: dict[str, op_def_pb2.OpDef],
                 limits: Limits = DEFAULT):
        self.functions = {f.signature.name: f for f in library.function}
        self.op_defs = op_defs
        self.limits = limits
        self._plans: dict[str, Plan] = {}
        self._loops: dict[tuple[str, str], LoopBody] = {}
        self._bodies: dict[str, FunctionBody] = {}
        self._call_kernels = {name: Kernel(name, self._call_kernel(name), True, False)
                              for name in self.functions}

    def function_kernel(self, op: str) -> Kernel | None:
        """The kernel for a node whose op is a library function's name, if it is one."""
        return self._call_kernels.get(op)

    def call(self, name: str, inputs: tuple, ctx: executor.Context) -> tuple:
        """Run a function from inside a running plan (a call, branch or loop body)."""
        chain = _CALLS.get() + (name,)
        if len(chain) > self.limits.max_function_depth:
            raise nesting_error(f"function {chain[0]!r}", chain, self.limits)
        token = _CALLS.set(chain)
        try:
            plan = self.plan(name)
            if len(inputs) != len(plan.feeds):
                raise SavedModelError(f"function {name!r} takes {len(plan.feeds)} inputs, got {len(inputs)}")
            return executor.run_nested(plan, inputs, ctx)
        finally:
            _CALLS.reset(token)

    def plan(self, name: str) -> Plan:
        plan = self._plans.get(name)
        if plan is None:
            body = self.body(name)
            spec = GraphSpec(f"function {name!r}", body.nodes, self.op_defs, self, limits=self.limits)
            plan = self._plans[name] = compile_plan(spec, [(a, 0) for a in body.args], body.rets,
                                                    body.control_rets, keep_stateful=True)
        return plan

    def loop_body(self, body: str, cond: str) -> LoopBody:
        """The plan of a While loop's body, split for running many times (see plan.LoopBody)."""
        loop = self._loops.get((body, cond))
        if loop is None:
            loop = self._loops[body, cond] = loop_body(self.plan(body), self.plan(cond))
        return loop

    def body(self, name: str) -> FunctionBody:
        body = self._bodies.get(name)
        if body is None:
            body = self._bodies[name] = self._read_body(name)
        return body

    def _call_kernel(self, name: str):
        def call_function(ctx, *inputs, **_):
            return ctx.call(name, inputs)
        return call_function

    def _read_body(self, name: str) -> FunctionBody:
        function = self.functions.get(name)
        if function is None:
            raise GraphError(f"no function {name!r} in the graph's library")
        signature = function.signature
        defs = {node.name: node for node in function.node_def}
        nodes = {}
        for node in function.node_def:
            data = [self._resolve(name, defs, text) for text in node.input if not text.startswith("^")]
            control = [text[1:] for text in node.input if text.startswith("^")]
            nodes[node.name] = GraphNode(node.name, node.op, node.attr, data, control)
        rets = [self._resolve(name, defs, function.ret[arg.name]) for arg in signature.output_arg]
        control_rets = [function.control_ret[arg] for arg in signature.control_output]
        return FunctionBody(nodes, [arg.name for arg in signature.input_arg], rets, control_rets)

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
            offset += arg_length(arg, node.attr)
        raise GraphError(f"function {function!r}: op {node.op} of node {node.name!r} has no "
                         f"output {arg_name!r}")
