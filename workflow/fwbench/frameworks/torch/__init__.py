"""The torch package: the only modules that import torch (infer, models, train, hardware)."""
