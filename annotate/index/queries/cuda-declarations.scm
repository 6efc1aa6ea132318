; Declared types of local variables and parameters: the receiver `v` of a member call `v.f()`
; narrows `f` to methods of its class (`vec_t<float, 4> v;` -> vec_t::f).
(declaration
  type: (_) @type
  declarator: [(identifier) @var
               (init_declarator declarator: (identifier) @var)
               (init_declarator declarator: (reference_declarator (identifier) @var))
               (init_declarator declarator: (pointer_declarator declarator: (identifier) @var))
               (reference_declarator (identifier) @var)
               (pointer_declarator declarator: (identifier) @var)
               (array_declarator declarator: (identifier) @var)])
(parameter_declaration
  type: (_) @type
  declarator: [(identifier) @var
               (reference_declarator (identifier) @var)
               (pointer_declarator declarator: (identifier) @var)])
(optional_parameter_declaration
  type: (_) @type
  declarator: [(identifier) @var
               (reference_declarator (identifier) @var)
               (pointer_declarator declarator: (identifier) @var)])
