"""Memory bandwidth, framework-free: STREAM's kernels and their checks, the working-set sweep
(its C kernels, sizes and each level's plateau) and the clock kernel."""
