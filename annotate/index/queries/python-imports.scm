(import_from_statement
  module_name: (_) @module)
(import_statement
  name: [(dotted_name) (aliased_import)] @module)
