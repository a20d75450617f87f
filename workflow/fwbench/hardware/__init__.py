"""The hardware stage: identity, theoretical peaks, STREAM and GEMM measurements."""
