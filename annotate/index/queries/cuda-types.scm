; Type definitions: every struct / class / union / enum with a body (a forward declaration
; `struct X;` has none). Local types inside function bodies are dropped by the extractor.
[(struct_specifier body: (field_declaration_list))
 (class_specifier body: (field_declaration_list))
 (union_specifier body: (field_declaration_list))
 (enum_specifier body: (enumerator_list))] @type
