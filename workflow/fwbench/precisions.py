"""The precisions a model computes in, named once (every layer of the library reads them here).

float32 is every mode's and every cell's unless it names another; a framework's FrameworkInfo
names, per mode, the others it runs (fwbench.frameworks.mode_precisions). PRECISIONS are in
the order tables and coordinates show them.
"""

FLOAT32 = "float32"
BFLOAT16 = "bfloat16"
INT8 = "int8"
PRECISIONS = (FLOAT32, BFLOAT16, INT8)
# The precisions a deployment runtime makes by quantizing the framework's float32 export (its
# `quantize`, fwbench.runtimes): weights and activations rounded to 8-bit integers by scales,
# integer products accumulated in int32. Their error bound comes from those scales
# (fwbench.model.precision_bound.quantization_bound), not from a unit roundoff.
QUANTIZED = (INT8,)
