"""The training tests' shared cases: the `train` settings as the workflow validates them, a
tiny run's settings, and the ResNets, optimizer and seed the equivalence tests step through."""

from __future__ import annotations

from pathlib import Path

from fwbench.model import resnet
from fwbench.model.optimizer import SGDConfig, StepSchedule

SCHEMA = Path(__file__).resolve().parents[1] / "workflow" / "schemas" / "train.schema.yaml"


def default_settings(**overrides):
    """The `train` section with the schema's defaults filled in, then `overrides` validated
    on top (as the workflow validates the config)."""
    from snakemake.utils import validate

    settings = dict(overrides)
    validate(settings, str(SCHEMA), set_default=True)
    return settings


def tiny_settings(**overrides):
    """A 2-stage, width-4 ResNet on 64 digits for two epochs: seconds per framework."""
    settings = {
        "architectures": {"tiny": {"block": "basic", "stages": [1, 1], "base_width": 8}},
        "models": ["tiny"],
        "epochs": 2,
        "batch_size": 8,
        "max_train_samples": 64,
        "max_val_samples": 32,
        "lr_milestones": [0.5],
    }
    return default_settings(**(settings | overrides))


# Weight decay larger than the default so that decoupled or missing decay shows at step 2.
OPTIMIZER = SGDConfig(momentum=0.9, weight_decay=5e-3, schedule=StepSchedule(0.1, (1,), 0.1))
# 8 channels, not 4: on an AVX2-only CPU (AMD Zen 3) torch 2.13's compiled backward of a
# 4-channel channels-last convolution corrupts the heap (oneDNN's AVX2 kernel; correct with
# ONEDNN_MAX_CPU_ISA=SSE41 or 8 channels): gradients 34x off, or the process aborts.
SPECS = {
    "basic-small": resnet.ResNetSpec(
        block="basic", stages=(1, 1), base_width=8, stem="small", channels=1, height=8, width=8
    ),
    "bottleneck-imagenet": resnet.ResNetSpec(
        block="bottleneck",
        stages=(1, 1),
        base_width=8,
        stem="imagenet",
        channels=3,
        height=16,
        width=16,
        classes=5,
    ),
}


# Weights and batches whose pre-activations keep MIN_MARGIN from every ReLU and max-pool kink
# in both specs (searched: seeds 1-8 come closer at 8 channels).
SEED = 9
