"""The hardware stage: theoretical peaks and the per-framework GEMM, STREAM and working-set
measurements in worker processes, written as one hardware file."""
