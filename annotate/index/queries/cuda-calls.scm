; Call sites: the callee expression of every call (plain, qualified, template, member,
; `.template name<...>`). Kernel launches `f<<<...>>>(...)` are call_expressions carrying a
; kernel_call_syntax child; the extractor tells them apart.
(call_expression
  function: (_) @callee
  arguments: (argument_list) @args) @call
