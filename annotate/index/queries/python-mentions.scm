; Annotations (parameters, return types, variables): the names in them may be classes.
(type) @ann
