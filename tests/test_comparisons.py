"""Every comparison's verdict (fwbench.analysis.comparisons), the winners built on it
(fwbench.analysis.winners) and the comparison records (fwbench.io.comparisons_file)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from fwbench.analysis.comparisons import Cells, Estimate, Levels, compare, judge, wrong_verdicts
from fwbench.analysis.estimators import log_interval, t_quantile, welch_satterthwaite
from fwbench.analysis.winners import winner_variables
from fwbench.io.comparisons_file import (
    EQUIVALENT,
    FASTER,
    SLOWER,
    UNDETERMINED,
    comparison_variables,
    comparisons_table,
    fill_padding,
)
from fwbench.io.dims import CellKey
from fwbench.io.variables import EQUIVALENT_FIRST, UNDETERMINED_FIRST, WINNER

LEVELS = Levels(confidence=0.95, min_effect_pct=5.0, resamples=300)
NORMAL_95 = 1.959964


def verdict_of(speedup: float, se: float, dof: float = math.inf, levels=LEVELS) -> str:
    return judge(Estimate(math.log(speedup), se, dof, "test"), levels)[-1]


@pytest.mark.parametrize(
    ("speedup", "se", "expected"),
    [
        (1.20, 0.02, FASTER),  # CI 1.15–1.25: excludes 1, above 1.05
        (1 / 1.20, 0.02, SLOWER),
        (1.01, 0.01, EQUIVALENT),  # CI 0.99–1.03: inside ±5 %
        (1.03, 0.01, UNDETERMINED),  # CI 1.01–1.05: above 1, yet it may be under 5 %
        (1.00, 0.10, UNDETERMINED),  # CI 0.82–1.22: the data cannot tell
        (1.10, 0.10, UNDETERMINED),  # 10 % faster by the medians, but the CI holds 1
    ],
)
def test_the_verdict_has_three_answers_and_says_when_the_data_cannot_tell(speedup, se, expected):
    assert verdict_of(speedup, se) == expected


def test_the_ci_printed_is_the_one_decided_on():
    low, high, p_difference, _, verdict = judge(
        Estimate(math.log(1.2), 0.02, math.inf, "t"), LEVELS
    )
    assert low == pytest.approx(1.2 * math.exp(-NORMAL_95 * 0.02))
    assert high == pytest.approx(1.2 * math.exp(NORMAL_95 * 0.02))
    assert p_difference < 0.05 and verdict == FASTER
    # a CI that just reaches 1 is not a decision, and its p is just above 1 − confidence
    edge = judge(Estimate(NORMAL_95 * 0.03 * 0.999, 0.03, math.inf, "t"), LEVELS)
    assert edge[0] < 1 and edge[2] > 0.05 and edge[-1] == UNDETERMINED


def test_equivalence_is_the_two_one_sided_tests():
    levels = Levels(confidence=0.90, min_effect_pct=5.0)
    for se in (0.005, 0.01, 0.02, 0.03):
        for value in np.linspace(-0.06, 0.06, 25):
            *_, p_equivalence, verdict = judge(Estimate(value, se, 12, "t"), levels)
            assert (verdict == EQUIVALENT) == (p_equivalence < 0.05), (value, se)


def test_students_t_with_few_dof_is_wider_than_the_normal():
    normal = judge(Estimate(math.log(1.1), 0.03, math.inf, "t"), LEVELS)
    student = judge(Estimate(math.log(1.1), 0.03, 2, "t"), LEVELS)
    assert student[0] < normal[0] and student[1] > normal[1]
    assert normal[-1] == FASTER and student[-1] == UNDETERMINED


def test_identical_timings_give_an_exact_ratio_and_no_estimate_gives_no_verdict():
    assert verdict_of(2.0, 0.0) == FASTER and verdict_of(1.0, 0.0) == EQUIVALENT
    assert judge(Estimate(math.nan, 0.1, math.inf, "t"), LEVELS)[-1] == ""
    assert judge(Estimate(0.1, math.nan, math.inf, "t"), LEVELS)[-1] == ""


def test_a_larger_minimum_effect_turns_a_small_real_difference_from_faster_to_undetermined():
    assert verdict_of(1.04, 0.005, levels=Levels(0.95, 0.0)) == FASTER
    assert verdict_of(1.04, 0.005, levels=Levels(0.95, 5.0)) == UNDETERMINED
    assert verdict_of(1.04, 0.005, levels=Levels(0.95, 10.0)) == EQUIVALENT


# --- cells ------------------------------------------------------------------------------------

VARIANTS = (("torch", "eager"), ("torch", "compiled"), ("jax", "jit"))


def cells_of(medians: dict[tuple[str, str], float], spread: float = 0.01, n: int = 60) -> Cells:
    """One row (mlp, batch 1) of cells with lognormal timings around the given medians."""
    frameworks = sorted({f for f, _ in VARIANTS})
    modes = sorted({m for _, m in VARIANTS})
    coords = {
        "framework": frameworks,
        "mode": modes,
        "arch": ["mlp"],
        "precision": ["float32"],
        "batch": [1],
    }
    shape = (len(frameworks), len(modes), 1, 1, 1)
    median_s, latency = np.full(shape, np.nan), np.full((*shape, n), np.nan)
    rng = np.random.default_rng(7)
    for (framework, mode), median in medians.items():
        at = (frameworks.index(framework), modes.index(mode), 0, 0, 0)
        latency[at] = median * rng.lognormal(0.0, spread, n)
        median_s[at] = np.median(latency[at])
    return Cells(coords, median_s, latency, None)


def key(framework: str, mode: str) -> CellKey:
    return CellKey(framework, mode, "mlp", 1)


def test_a_bootstrap_comparison_finds_a_clear_speedup_and_its_ratio():
    cells = cells_of({("torch", "eager"): 2e-3, ("torch", "compiled"): 1e-3})
    found = compare(cells, "compile", key("torch", "eager"), key("torch", "compiled"), LEVELS)
    assert found.verdict == FASTER and found.speedup == pytest.approx(2.0, rel=0.02)
    assert found.ci_low < found.speedup < found.ci_high and "bootstrap" in found.estimate.method
    assert found.row()["baseline"] == "torch/eager" and found.row()["batch"] == 1


def winners(medians, spread=0.01, levels=LEVELS):
    cells = cells_of(medians, spread)
    ok = [key(*variant) for variant in medians]
    variables, compared = winner_variables(cells, ok, set(), levels)
    return {name: values[0, 0, 0, 1] for name, (_, values, _) in variables.items()}, compared


def test_a_winner_is_decided_faster_than_every_rival():
    values, compared = winners(
        {("torch", "eager"): 1.0e-3, ("torch", "compiled"): 1.2e-3, ("jax", "jit"): 1.5e-3}
    )
    assert values["winner_verdict"] == WINNER and values["winner"] == "torch/eager"
    assert values["winner_decided"] == 2
    # the compiled-only scope adds jax/jit against torch/compiled; shared pairs count once
    assert len(compared) == 3
    assert values["winner_ratio_ci_low"] > 1.05 and values["winner_contenders"] == "torch/eager"


def test_two_draws_of_one_speed_are_equivalent_and_named_together():
    values, _ = winners(
        {("torch", "eager"): 1.0e-3, ("torch", "compiled"): 1.0e-3, ("jax", "jit"): 2e-3}
    )
    assert values["winner_verdict"] == EQUIVALENT_FIRST and values["winner"] == ""
    assert set(values["winner_contenders"].split(", ")) == {"torch/eager", "torch/compiled"}


def test_noisy_timings_leave_the_winner_undetermined_with_the_ratio_ci():
    values, _ = winners({("torch", "eager"): 1.0e-3, ("jax", "jit"): 1.06e-3}, spread=0.4)
    assert values["winner_verdict"] == UNDETERMINED_FIRST
    assert values["winner_ratio_ci_low"] < 1 < values["winner_ratio_ci_high"]
    assert values["winner_fastest"] in values["winner_contenders"]


# --- records ----------------------------------------------------------------------------------


def test_systems_with_different_numbers_of_comparisons_stack_and_read_back():
    cells = cells_of({("torch", "eager"): 2e-3, ("torch", "compiled"): 1e-3, ("jax", "jit"): 3e-3})
    compiled = key("torch", "compiled")
    rows = [
        compare(cells, "compile", baseline, compiled, LEVELS).row()
        for baseline in (key("torch", "eager"), key("jax", "jit"))
    ]
    parts = [
        xr.Dataset(comparison_variables(found)).assign_coords(
            arch=["mlp"], precision=["float32"], batch=[1]
        )
        for found in (rows, rows[:1])
    ]
    stacked = xr.concat(parts, dim=pd.Index(["a", "b"], name="system"), join="outer")
    table = comparisons_table(fill_padding(stacked))
    assert list(table["system"]) == ["a", "a", "b"] and table["batch"].dtype == int
    assert list(table["baseline"]) == ["torch/eager", "jax/jit", "torch/eager"]
    assert list(table["verdict"]) == [FASTER, FASTER, FASTER]
    assert table["speedup"].iloc[1] == pytest.approx(3.0, rel=0.03)


def test_the_most_wrong_verdicts_a_calibrated_design_gives_is_half_its_miss_rate_of_all():
    rows = [{"verdict": v} for v in ["faster"] * 30 + ["slower"] * 5 + ["undetermined"] * 5]
    found = wrong_verdicts([*rows, {"verdict": ""}], LEVELS)  # no estimate: no comparison
    assert found == {"comparisons": 40, "decided": 35, "wrong_at_most": pytest.approx(1.0)}


def test_one_quantile_and_one_welch_satterthwaite_build_every_interval():
    assert t_quantile(0.95, math.inf) == pytest.approx(1.959964, rel=1e-6)
    assert t_quantile(0.95, 4) == pytest.approx(2.776445, rel=1e-6)
    assert log_interval(0.1, 0.02, 4, 0.95) == pytest.approx((0.1 - 0.0555289, 0.1 + 0.0555289))
    total, dof = welch_satterthwaite([(0.01, 4), (0.02, 10), (0.0, 1)])
    assert total == pytest.approx(0.03)
    assert dof == pytest.approx(0.03**2 / (0.01**2 / 4 + 0.02**2 / 10))
    assert welch_satterthwaite([(0.0, 3)]) == (0.0, math.inf)
