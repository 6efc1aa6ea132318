(preproc_include
  path: [(string_literal) (system_lib_string)] @path)
