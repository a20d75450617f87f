"""The step learning-rate schedule: milestones from fractions of the epochs, ×gamma per
milestone, and every framework applying it per epoch exactly as the framework-free one says."""

from __future__ import annotations

import numpy as np
import pytest

from fwbench.frameworks import load
from fwbench.model import resnet
from fwbench.model.optimizer import SGDConfig, StepSchedule
from fwbench.training.data import to_layout


def test_milestones_are_rounded_fractions_of_the_epochs():
    schedule = StepSchedule.from_fractions(0.1, [0.3, 0.6, 0.9], gamma=0.1, epochs=10)
    assert schedule.milestones == (3, 6, 9)
    rates = [schedule.lr_at_epoch(epoch) for epoch in range(10)]
    assert rates == pytest.approx([0.1] * 3 + [0.01] * 3 + [0.001] * 3 + [0.0001])


def test_a_milestone_never_falls_on_the_first_epoch():
    schedule = StepSchedule.from_fractions(1.0, [0.1], gamma=0.5, epochs=3)
    assert schedule.milestones == (1,)
    assert schedule.lr_at_epoch(0) == 1.0


def test_repeated_milestones_multiply_repeatedly():
    schedule = StepSchedule.from_fractions(1.0, [0.5, 0.5], gamma=0.5, epochs=2)
    assert schedule.milestones == (1, 1)
    assert schedule.lr_at_epoch(1) == pytest.approx(0.25)


@pytest.mark.parametrize("fraction", [0.0, 1.0, 1.5])
def test_a_fraction_outside_the_open_unit_interval_is_rejected(fraction):
    with pytest.raises(ValueError, match=str(fraction)):
        StepSchedule.from_fractions(0.1, [fraction], gamma=0.1, epochs=10)


TINY = resnet.ResNetSpec(block="basic", stages=(1,), base_width=2, channels=1, height=4, width=4)
# Milestones (1, 2, 2): rates 0.4, 0.2, 0.05, 0.05 over four epochs.
OPTIMIZER = SGDConfig(0.9, 1e-4, StepSchedule.from_fractions(0.4, [0.25, 0.5, 0.5], 0.5, 4))
STEPS_PER_EPOCH = 2


@pytest.mark.per_framework
@pytest.mark.parametrize(
    ("framework", "mode"), [("torch", "eager"), ("jax", "jit"), ("tensorflow", "function")]
)
def test_each_framework_uses_the_schedules_rate_in_every_epoch(framework, mode):
    module = load(framework, "train")
    trainer = module.build(
        TINY,
        resnet.make_weights(TINY),
        OPTIMIZER,
        steps_per_epoch=STEPS_PER_EPOCH,
        mode=mode,
        device="cpu",
    )
    rng = np.random.default_rng(0)
    images = rng.standard_normal((STEPS_PER_EPOCH, 4, 1, 4, 4)).astype(np.float32)
    labels = rng.integers(0, 10, (STEPS_PER_EPOCH, 4)).astype(np.int32)
    batches = [(to_layout(x, module.INPUT_LAYOUT), y) for x, y in zip(images, labels, strict=True)]
    used = []
    for _ in range(4):
        used.append(trainer.learning_rate())
        trainer.train_epoch(batches)
        trainer.end_epoch()
    expected = [OPTIMIZER.schedule.lr_at_epoch(epoch) for epoch in range(4)]
    assert used == pytest.approx(expected, rel=1e-6)
    assert expected == pytest.approx([0.4, 0.2, 0.05, 0.05])


@pytest.mark.jax
def test_the_optax_schedule_switches_at_the_first_step_of_a_milestone_epoch():
    module = load("jax", "train")
    trainer = module.build(
        TINY,
        resnet.make_weights(TINY),
        OPTIMIZER,
        steps_per_epoch=STEPS_PER_EPOCH,
        mode="jit",
        device="cpu",
    )
    for step in range(4 * STEPS_PER_EPOCH):
        epoch = step // STEPS_PER_EPOCH
        assert float(trainer.schedule(step)) == pytest.approx(
            OPTIMIZER.schedule.lr_at_epoch(epoch), rel=1e-6
        ), f"step {step}"
