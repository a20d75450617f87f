"""The precisions a model computes in, named once (every layer of the library reads them here).

float32 is every mode's and every cell's unless it names another; a framework's FrameworkInfo
names, per mode, the others it runs (fwbench.frameworks.mode_precisions). PRECISIONS are in
the order tables and coordinates show them.
"""

FLOAT32 = "float32"
BFLOAT16 = "bfloat16"
INT8 = "int8"
INT8_STATIC = "int8_static"
PRECISIONS = (FLOAT32, BFLOAT16, INT8, INT8_STATIC)
# The precisions a deployment runtime makes by quantizing the framework's float32 export (its
# `quantize`, fwbench.runtimes, or its converter): weights and activations rounded to 8-bit
# integers by scales, integer products accumulated in int32. Their error bound comes from those
# scales (fwbench.model.precision_bound.quantization_bound), not from a unit roundoff.
# int8: dynamic quantization, each call's activations rounded by a scale taken from that call's
# range; int8_static: static quantization, every activation's scale fixed beforehand from a
# seeded calibration set (fwbench.model.weights.make_calibration), never the check's input.
QUANTIZED = (INT8, INT8_STATIC)
# What each precision's products compute in: the dtype its roof (the hardware stage's GEMM
# peak), its kernel-precision share and its cost model's widths are named by.
ARITHMETIC = {FLOAT32: FLOAT32, BFLOAT16: BFLOAT16, INT8: INT8, INT8_STATIC: INT8}


def arithmetic_of(precision: str) -> str:
    """The dtype `precision`'s products compute in; raises naming an unknown precision."""
    if precision not in ARITHMETIC:
        raise ValueError(f"unknown precision {precision!r}; known: {', '.join(PRECISIONS)}")
    return ARITHMETIC[precision]


# The precisions a training run trains in (config train.precisions): bfloat16 is mixed
# precision (fwbench.training.config.MIXED_BFLOAT16).
TRAIN_PRECISIONS = (FLOAT32, BFLOAT16)


def check_training_precision(precision: str) -> str:
    """`precision` if runs train in it; raises naming it and the known ones otherwise."""
    if precision not in TRAIN_PRECISIONS:
        raise ValueError(
            f"unknown training precision {precision!r}; known: {', '.join(TRAIN_PRECISIONS)}"
        )
    return precision
