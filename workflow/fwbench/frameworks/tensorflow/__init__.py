"""The tensorflow package: the only modules that import tensorflow (infer, models, train,
hardware, export). This file does not: it holds tensorflow's FrameworkInfo."""

from fwbench.frameworks.info import BFLOAT16, INT8, INT8_STATIC, FrameworkInfo

_ENV = {"TF_CPP_MIN_LOG_LEVEL": "2", "TF_FORCE_GPU_ALLOW_GROWTH": "true"}

INFO = FrameworkInfo(
    name="tensorflow",
    modes=("eager", "function", "xla", "litert", "onnxrt"),
    distributions=("tensorflow-cpu", "tensorflow"),
    recorded=("keras",),
    # the TFLite converter -> LiteRT's interpreter; tf2onnx -> ONNX Runtime
    # (frameworks.tensorflow.export, runtimes.litert, runtimes.onnxrt)
    export_modes=("litert", "onnxrt"),
    runtime_modes={"litert": "litert", "onnxrt": "onnxrt"},
    mode_distributions={
        "litert": ("ai-edge-litert",),
        "onnxrt": ("onnxruntime", "onnxruntime-gpu", "onnx", "tf2onnx"),
    },
    # bfloat16: Keras's bfloat16 dtype policy (weights and activations); LiteRT has no
    # bfloat16 kernels; int8 and int8_static: ONNX Runtime's dynamic and static quantization
    # of the float32 ONNX export (runtimes.onnxrt), the TFLite converter's dynamic-range and
    # full-integer quantization (frameworks.tensorflow.export). Quantizations in the order
    # users pick them (the first is the default sweep's): dynamic first in both runtimes (the
    # TFLite post-training guide's starting point; ONNX Runtime's, as for torch's onnxrt)
    precisions=dict.fromkeys(("eager", "function", "xla"), (BFLOAT16,))
    | {"litert": (INT8, INT8_STATIC), "onnxrt": (BFLOAT16, INT8, INT8_STATIC)},
    pre_import_env={"cpu": _ENV | {"CUDA_VISIBLE_DEVICES": ""}, "cuda": _ENV},
)
