"""The `train` config section as typed values: the SGD optimizer and its step learning-rate
schedule, and what a run trains. Framework-free, and importing nothing of fwbench: the
framework adapters (fwbench.frameworks.<framework>.train) import SGDConfig from here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

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


@dataclass(frozen=True)
class StepSchedule:
    """Learning rate base_lr · gamma^k in epoch e, k = how many milestones are ≤ e (repeated
    milestones count repeatedly): torch's MultiStepLR, stepped once per epoch."""

    base_lr: float
    milestones: tuple[int, ...]
    gamma: float

    @classmethod
    def from_fractions(
        cls, base_lr: float, fractions: Iterable[float], gamma: float, epochs: int
    ) -> StepSchedule:
        """Milestones at round(fraction · epochs) (Python rounding, half to even), at least
        epoch 1."""
        fractions = list(fractions)
        for fraction in fractions:
            if not 0.0 < fraction < 1.0:
                raise ValueError(f"lr milestone fractions must lie in (0, 1), got {fraction}")
        milestones = sorted(max(1, round(fraction * epochs)) for fraction in fractions)
        return cls(base_lr, tuple(milestones), gamma)

    def lr_at_epoch(self, epoch: int) -> float:
        passed = sum(1 for milestone in self.milestones if milestone <= epoch)
        return self.base_lr * self.gamma**passed


@dataclass(frozen=True)
class SGDConfig:
    """torch.optim.SGD semantics: g ← g + weight_decay·w; buf ← momentum·buf + g (buf = g on
    the first step); w ← w − lr·buf, with lr from `schedule` per epoch."""

    momentum: float
    weight_decay: float
    schedule: StepSchedule


# What every adapter applies the weight decay to (recorded with each run).
WEIGHT_DECAY_ON = "every trainable tensor: conv kernels, BN gamma and beta, head W and b"


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
    missing, unknown = _SETTING_KEYS - set(settings), set(settings) - _SETTING_KEYS
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
