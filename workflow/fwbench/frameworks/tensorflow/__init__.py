"""The tensorflow package: the only modules that import tensorflow (infer, models, train,
hardware)."""
