; `auto kernel = Foo<...>;`, `auto kernel = &Foo<...>;`, `kernel = Foo<...>;` -- the
; function-pointer variables that launches go through.
(init_declarator
  declarator: (identifier) @var
  value: (_) @value)
(assignment_expression
  left: (identifier) @var
  right: (_) @value)
