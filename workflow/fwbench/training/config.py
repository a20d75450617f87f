"""The `train` config section as typed values: the optimizer (fwbench.model.optimizer) and
what a run trains. Framework-free."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fwbench.model.optimizer import SGDConfig, StepSchedule
from fwbench.precisions import FLOAT32
from fwbench.precisions import check_training_precision as check_precision

_SETTING_KEYS = {
    "modes",
    "models",
    "datasets",
    "architectures",
    "epochs",
    "batch_size",
    "learning_rate",
    "momentum",
    "weight_decay",
    "lr_milestones",
    "lr_gamma",
    "target_accuracy",
    "val_fraction",
    "max_train_samples",
    "max_val_samples",
    "allow_tf32",
    "imagefolder",
    "inject_failure",
}


# What every adapter applies the weight decay to (recorded with each run).
WEIGHT_DECAY_ON = "every trainable tensor: conv kernels, BN gamma and beta, head W and b"

# bfloat16 training is mixed precision, as users of each framework train in it (torch.autocast,
# Keras's mixed_bfloat16 policy, JAX with bfloat16 compute over float32 parameters), the same
# policy in all three (fwbench.precisions.TRAIN_PRECISIONS): recorded with each run.
MIXED_BFLOAT16 = (
    "mixed: every convolution and the head's matmul take bfloat16 operands (the float32 "
    "weights cast at each use) and return bfloat16, so the activations between layers are "
    "bfloat16; batch norm computes its statistics and normalization in float32; the logits "
    "for the loss, the weights, the batch-norm running statistics and the optimizer state are "
    "float32; no loss scaling (bfloat16 has float32's exponent range)"
)
# Keys of the train section the plan reads and a run does not: the rule passes the section
# without them (run_settings), so that adding a precision reruns no existing run.
PLAN_ONLY_KEYS = frozenset({"precisions", "low_precision_modes"})
# A run's own precision, in its settings where it is not float32 (so a float32 run's settings,
# and its job's params, are those from before precision was a dimension).
PRECISION_KEY = "precision"


def run_settings(section: dict[str, Any], precision: str = FLOAT32) -> dict[str, Any]:
    """The train section as one run's settings: without the plan's keys (PLAN_ONLY_KEYS), with
    the run's precision where it is not float32."""
    settings = {key: value for key, value in section.items() if key not in PLAN_ONLY_KEYS}
    return settings | ({} if precision == FLOAT32 else {PRECISION_KEY: check_precision(precision)})


@dataclass(frozen=True)
class TrainConfig:
    epochs: int
    batch_size: int
    optimizer: SGDConfig
    target_accuracy: float
    allow_tf32: bool
    architectures: dict[str, dict[str, Any]]
    inject_failure: tuple[str, ...]


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def parse_settings(settings: dict[str, Any]) -> TrainConfig:
    """The typed config of a validated `train` section (every key present, defaults filled)."""
    missing = _SETTING_KEYS - set(settings)
    unknown = set(settings) - _SETTING_KEYS - PLAN_ONLY_KEYS - {PRECISION_KEY}
    _require(not missing, f"train settings lack {sorted(missing)}: validate them first")
    _require(not unknown, f"unknown train settings {sorted(unknown)}")
    epochs, batch = settings["epochs"], settings["batch_size"]
    _require(isinstance(epochs, int) and epochs >= 1, f"train.epochs must be ≥ 1, got {epochs!r}")
    _require(
        isinstance(batch, int) and batch >= 2,
        f"train.batch_size must be ≥ 2 (batch norm needs two samples), got {batch!r}",
    )
    lr, momentum = settings["learning_rate"], settings["momentum"]
    weight_decay, gamma = settings["weight_decay"], settings["lr_gamma"]
    _require(lr > 0, f"train.learning_rate must be > 0, got {lr!r}")
    _require(0 <= momentum < 1, f"train.momentum must lie in [0, 1), got {momentum!r}")
    _require(weight_decay >= 0, f"train.weight_decay must be ≥ 0, got {weight_decay!r}")
    _require(0 < gamma <= 1, f"train.lr_gamma must lie in (0, 1], got {gamma!r}")
    target = settings["target_accuracy"]
    _require(0 < target <= 1, f"train.target_accuracy must lie in (0, 1], got {target!r}")
    schedule = StepSchedule.from_fractions(lr, settings["lr_milestones"], gamma, epochs)
    return TrainConfig(
        epochs=epochs,
        batch_size=batch,
        optimizer=SGDConfig(momentum, weight_decay, schedule),
        target_accuracy=float(target),
        allow_tf32=bool(settings["allow_tf32"]),
        architectures=dict(settings["architectures"]),
        inject_failure=tuple(settings["inject_failure"]),
    )
