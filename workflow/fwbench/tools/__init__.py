"""The commands a user runs on sweeps already made (`python -m fwbench COMMAND`): one module per
command, each with `add_arguments(parser)` and `run(args) -> exit status`. They read the files a
sweep wrote and print; none changes them or decides anything."""
