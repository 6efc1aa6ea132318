; Every C++/CUDA function definition (free, member, out-of-class, operator, specialisation).
(function_definition
  body: (compound_statement) @body) @function
