"""AutoGraph (`sm.autograph`): Python control flow in functions that `sm.function` traces,
converted by transforming the function's syntax tree.

`if`, `while` and `for` statements, `break`, `continue` and `return` inside them, `and`/`or`/
`not` and conditional expressions become calls of the operators in
`savedmodel.autograph.operators` (`ag__.if_stmt`, `ag__.for_stmt`, ...). They run as Python
when the condition or iterable is a Python value, so such conditions are resolved while
tracing, and build `sm.cond` / `sm.while_loop` (StatelessIf, StatelessWhile, ...) when it is a
tensor. `to_code` shows the converted source, as `tf.autograph.to_code` does;
`experimental.do_not_convert` keeps a function as it is.
"""
from savedmodel.autograph import experimental
from savedmodel.autograph.conversion import to_code, to_graph

__all__ = ["experimental", "to_code", "to_graph"]
