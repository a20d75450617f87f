"""The torch package: the only modules that import torch (infer, models, train, hardware,
export). This file does not: it holds torch's FrameworkInfo."""

from fwbench.frameworks.info import BFLOAT16, INT8, INT8_STATIC, FrameworkInfo

INFO = FrameworkInfo(
    name="torch",
    modes=("eager", "compiled", "aoti", "onnxrt"),
    distributions=("torch",),
    # torch.compile's arguments, and inductor's freezing (frameworks.torch.infer)
    compile_options=("mode", "fullgraph", "dynamic", "freezing"),
    compile_modes=("compiled",),
    compiled_variant=r"compiled_[a-z0-9_]+",
    compile_cache_env=("TORCHINDUCTOR_CACHE_DIR",),  # inductor's FX graph and code caches
    cache_seed_module="fwbench.frameworks.torch.cache_seed",
    cache_seed_modes=("compiled", "aoti"),  # torch.compile, and AOTInductor's export and load
    # torch.export -> AOTInductor package; torch.onnx.export(dynamo=True) -> ONNX Runtime
    # (frameworks.torch.export, runtimes.onnxrt)
    export_modes=("aoti", "onnxrt"),
    runtime_modes={"onnxrt": "onnxrt"},
    mode_distributions={"onnxrt": ("onnxruntime", "onnxruntime-gpu", "onnx", "onnxscript")},
    precision_distributions=dict.fromkeys(("compiled", "aoti"), {INT8_STATIC: ("torchao",)}),
    # bfloat16: the module and its input cast (module.to(torch.bfloat16)); compiled_<name>
    # variants take what compiled takes; int8 and int8_static: ONNX Runtime's dynamic and
    # static (QDQ, calibrated) quantization of the float32 ONNX export (runtimes.onnxrt);
    # compiled's and aoti's int8_static: PT2E with the x86 Inductor quantizer
    # (frameworks.torch.quantize), compiled by torch.compile in the cell or packaged by
    # AOTInductor in the export job. Quantizations in the order users pick them (the first is
    # the default sweep's): ONNX Runtime's dynamic first (one call, no calibration set; its
    # docs' advice for RNNs and transformers, 3 of the 5 architectures); PT2E is static only.
    precisions={
        "eager": (BFLOAT16,),
        "compiled": (BFLOAT16, INT8_STATIC),
        "aoti": (BFLOAT16, INT8_STATIC),
        "onnxrt": (BFLOAT16, INT8, INT8_STATIC),
    },
    stream_probe=True,
)
