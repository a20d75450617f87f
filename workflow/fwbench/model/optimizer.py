"""The optimizer every training adapter applies, as data: SGD with momentum and weight decay,
and its step learning-rate schedule (torch.optim semantics, framework-free)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


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
