"""fwbench: PyTorch vs JAX vs TensorFlow, eager vs compiled, against the hardware's limits."""
