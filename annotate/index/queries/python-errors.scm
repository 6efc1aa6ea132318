(ERROR) @error
