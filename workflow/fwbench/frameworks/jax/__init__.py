"""The jax package: the only modules that import jax (infer, models, train, hardware)."""
