; Functions and methods (decorated or not) in the Python JIT layer.
(function_definition
  name: (identifier) @name
  body: (block) @body) @function
