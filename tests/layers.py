"""The test layers and the frameworks' top-level modules, named once (tests/conftest.py
assigns every test its layer; tests/run_layers.py runs them; tests/test_layout.py checks the
library's imports against the same modules). Imports nothing but the standard library."""

LAYERS = {
    "fast": "units, properties and contracts on synthetic data and fake adapters (the default)",
    "torch": "torch's layer: its adapter, exports, profilers, training (a process of its own)",
    "jax": "jax's layer: its adapter, exports, profilers, training (a process of its own)",
    "tensorflow": "tensorflow's layer: its adapter, exports, profilers, training (its own process)",
    "e2e": "end to end: the smoke sweep and what reads it, SLURM, upgrade, recovery",
}
FRAMEWORK_LAYERS = ("torch", "jax", "tensorflow")
# Each framework's top-level modules: importing one makes a test that framework's.
FRAMEWORK_IMPORTS = {"torch": "torch", "jax": "jax", "jaxlib": "jax", "optax": "jax"}
FRAMEWORK_IMPORTS |= {"tensorflow": "tensorflow", "keras": "tensorflow"}
