; Highlight captures for Python (tree-sitter-python 0.25). The grammar ships a fuller
; highlights.scm that captures every identifier; the site colours only what helps reading,
; which keeps the pages small. Capture names are the site's token classes.

(comment) @comment
(string) @string
[(integer) (float)] @number
[(none) (true) (false)] @constant

[
  "as" "assert" "async" "await" "break" "class" "continue" "def" "del" "elif" "else"
  "except" "finally" "for" "from" "global" "if" "import" "lambda" "nonlocal" "pass"
  "raise" "return" "try" "while" "with" "yield" "match" "case" "and" "in" "is" "not" "or"
] @keyword

(decorator) @preproc
(function_definition name: (identifier) @function)
(class_definition name: (identifier) @type)
(type (identifier) @type)
