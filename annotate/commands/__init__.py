"""The command line's adapters, one module per group of commands, above every stage.

Each module has `register(subparsers)` and handlers `cmd_x(args, config) -> exit code`. A
handler checks its arguments, makes a Project (annotate.project) when it needs more than one
stage, calls the stage functions and prints through annotate.terminal / annotate.jsonout. No
stage imports these modules; they import nothing heavy at module level, because every
`annotate` run (including `annotate run` on a GPU machine) imports all of them.
"""
