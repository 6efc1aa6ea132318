; Highlight captures for C, C++ and CUDA sources (tree-sitter-cuda 0.21).
; tree-sitter-cuda ships only its CUDA additions ("; inherits: cpp"), so this file holds the
; small subset we colour. Capture names are the site's token classes (site_builder/highlight.py
; TOKEN_CLASSES); the first capture covering a byte wins, so the broad nodes come first.

(comment) @comment

[
  (string_literal)
  (raw_string_literal)
  (char_literal)
  (system_lib_string)
] @string

(number_literal) @number

[
  "#include" "#define" "#if" "#ifdef" "#ifndef" "#elif" "#else" "#endif"
  "#elifdef" "#elifndef" (preproc_directive)
] @preproc

[
  "__host__" "__device__" "__global__" "__managed__" "__forceinline__" "__noinline__"
  "__launch_bounds__" "__shared__" "__constant__" "__restrict__" "__grid_constant__"
] @cuda

[
  "break" "case" "catch" "class" "co_await" "co_return" "co_yield" "const" "consteval"
  "constexpr" "constinit" "continue" "decltype" "default" "delete" "do" "else" "enum"
  "explicit" "extern" "final" "for" "friend" "goto" "if" "inline" "mutable" "namespace"
  "new" "noexcept" "operator" "override" "private" "protected" "public" "register"
  "requires" "return" "sizeof" "static" "static_assert" "struct" "switch" "template"
  "throw" "try" "typedef" "typename" "union" "using" "virtual" "volatile" "while"
  "alignas" "alignof" "asm" "__asm__" "__volatile__" "thread_local" "concept" "long"
  "short" "signed" "unsigned" "defined"
] @keyword

[(true) (false) (null) (this) "nullptr"] @constant

[(primitive_type) (auto) (type_identifier)] @type

(function_declarator declarator: (identifier) @function)
(function_declarator declarator: (field_identifier) @function)
(function_declarator declarator: (qualified_identifier name: (identifier) @function))
(function_declarator declarator: (template_function name: (identifier) @function))
(function_declarator declarator: (operator_name) @function)
(function_declarator declarator: (destructor_name) @function)
