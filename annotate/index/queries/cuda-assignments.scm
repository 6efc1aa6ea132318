; `auto kernel = Foo<...>;`, `auto* kernel = &Foo<...>;`, `kernel = Foo<...>;`,
; `void (*kernel)(Params) = Foo<...>;` -- the function-pointer variables launches go through.
(init_declarator
  declarator: (identifier) @var
  value: (_) @value)
(init_declarator
  declarator: [(pointer_declarator declarator: (identifier) @var)
               (reference_declarator (identifier) @var)]
  value: (_) @value)
(init_declarator
  declarator: (function_declarator
    declarator: (parenthesized_declarator (pointer_declarator declarator: (identifier) @var)))
  value: (_) @value)
(assignment_expression
  left: (identifier) @var
  right: (_) @value)
