"""Files fwbench writes and reads: atomic writes, and one module per file format."""
