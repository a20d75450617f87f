"""The jax package: the only modules that import jax (infer, models, train, hardware, export).
This file does not: it holds jax's FrameworkInfo."""

from fwbench.frameworks.info import BFLOAT16, FrameworkInfo

# The JAX persistent compilation cache (its directory: compile_cache_env) keeps every
# executable, however quick its compile, so a later process starts warm on every cell.
_ENV = {
    "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
}

INFO = FrameworkInfo(
    name="jax",
    modes=("eager", "jit", "export"),
    distributions=("jax",),
    recorded=("jaxlib",),
    compile_cache_env=("JAX_COMPILATION_CACHE_DIR",),
    export_modes=("export",),  # jax.export's serialized StableHLO (frameworks.jax.export)
    # bfloat16: the parameters and the input as jnp.bfloat16
    precisions=dict.fromkeys(("eager", "jit", "export"), (BFLOAT16,)),
    pre_import_env={
        "cpu": {"JAX_PLATFORMS": "cpu"} | _ENV,
        "cuda": {"JAX_PLATFORMS": "cuda"} | _ENV,
    },
)
