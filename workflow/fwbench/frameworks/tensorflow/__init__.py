"""The tensorflow package: the only modules that import tensorflow (infer, models, train,
hardware). This file does not: it holds tensorflow's FrameworkInfo."""

from fwbench.frameworks.info import FrameworkInfo

_ENV = {"TF_CPP_MIN_LOG_LEVEL": "2", "TF_FORCE_GPU_ALLOW_GROWTH": "true"}

INFO = FrameworkInfo(
    name="tensorflow",
    modes=("eager", "function", "xla"),
    distributions=("tensorflow-cpu", "tensorflow"),
    recorded=("keras",),
    pre_import_env={"cpu": _ENV | {"CUDA_VISIBLE_DEVICES": ""}, "cuda": _ENV},
)
