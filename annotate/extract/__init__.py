"""`annotate extract`: a harness's upstream closure flattened into one file, proven faithful by
the compiler (docs/extract.md). Modules, in the order the data flows: cxx (pieces of a header),
closure (the include closure, flattened), reach (what the instantiation reaches), oracle and
reduce (what the compiler lets go), emit (kernel.cu's text), folder (the one writer), api."""
