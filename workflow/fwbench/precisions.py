"""The precisions a model computes in, named once (every layer of the library reads them here).

float32 is every mode's and every cell's unless it names another; a framework's FrameworkInfo
names, per mode, the others it runs (fwbench.frameworks.mode_precisions). PRECISIONS are in
the order tables and coordinates show them.
"""

FLOAT32 = "float32"
BFLOAT16 = "bfloat16"
PRECISIONS = (FLOAT32, BFLOAT16)
