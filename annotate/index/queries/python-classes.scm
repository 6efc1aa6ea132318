; Classes (decorated or not), with their bodies: dataclass and NamedTuple fields are the
; annotated assignments of the body.
(class_definition
  name: (identifier) @name
  body: (block) @body) @class
