"""The jax package: the only modules that import jax (infer, models, train, hardware, export).
This file does not: it holds jax's FrameworkInfo."""

from fwbench.frameworks.info import FrameworkInfo

_ENV = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}

INFO = FrameworkInfo(
    name="jax",
    modes=("eager", "jit", "export"),
    distributions=("jax",),
    recorded=("jaxlib",),
    export_modes=("export",),  # jax.export's serialized StableHLO (frameworks.jax.export)
    pre_import_env={
        "cpu": {"JAX_PLATFORMS": "cpu"} | _ENV,
        "cuda": {"JAX_PLATFORMS": "cuda"} | _ENV,
    },
)
