"""The torch package: the only modules that import torch (infer, models, train, hardware,
export). This file does not: it holds torch's FrameworkInfo."""

from fwbench.frameworks.info import FrameworkInfo

INFO = FrameworkInfo(
    name="torch",
    modes=("eager", "compiled", "aoti"),
    distributions=("torch",),
    # torch.compile's arguments, and inductor's freezing (frameworks.torch.infer)
    compile_options=("mode", "fullgraph", "dynamic", "freezing"),
    compile_modes=("compiled",),
    compiled_variant=r"compiled_[a-z0-9_]+",
    compile_cache_env=("TORCHINDUCTOR_CACHE_DIR",),  # inductor's FX graph and code caches
    export_modes=("aoti",),  # torch.export -> AOTInductor package (frameworks.torch.export)
    stream_probe=True,
)
