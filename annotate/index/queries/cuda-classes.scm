; Class-like scopes named in a file: an out-of-class definition `Foo::bar` is a method when
; Foo is one of them.
[(struct_specifier name: (_) @name body: (_))
 (class_specifier name: (_) @name body: (_))
 (union_specifier name: (_) @name body: (_))]
