"""compare: old vs new per cell, with every comparison's verdict (faster / slower / equivalent
/ undetermined at stats.confidence and stats.min_effect_pct)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fwbench.analysis.compare import compare, summary_markdown
from fwbench.analysis.comparisons import Levels
from fwbench.io.cell_file import Cell, write_cell
from fwbench.io.comparisons_file import EQUIVALENT, FASTER, SLOWER, UNDETERMINED
from fwbench.io.dims import STATUS_FAILED


def write(tmp_path, version, arch, latencies, status="ok"):
    cell = Cell("torch", "eager", arch, 8, len(latencies), latency_s=np.asarray(latencies))
    cell.attrs |= {"framework_version": version, "status": status}
    path = tmp_path / version / f"{arch}.nc"
    write_cell(cell, path)
    return path


@pytest.fixture
def versions(tmp_path):
    rng = np.random.default_rng(1)

    def sample(median, spread=0.01):
        return median * (1 + spread * rng.standard_normal(40))

    old = [
        write(tmp_path, "1.0", "mlp", sample(1e-3)),
        write(tmp_path, "1.0", "cnn", sample(1e-3)),
        write(tmp_path, "1.0", "rnn", sample(1e-3, 0.001)),
        write(tmp_path, "1.0", "lstm", sample(1e-3)),
        write(tmp_path, "1.0", "transformer", sample(1e-3)),
    ]
    new = [
        write(tmp_path, "2.0", "mlp", sample(0.9e-3)),  # 10% faster
        write(tmp_path, "2.0", "cnn", sample(1e-3)),  # same distribution
        write(tmp_path, "2.0", "rnn", sample(1.02e-3, 0.001)),  # significant but only 2%
        write(tmp_path, "2.0", "lstm", sample(1.2e-3)),  # 20% slower
        write(tmp_path, "2.0", "transformer", [np.nan] * 40, status=STATUS_FAILED),
    ]
    return compare(old, new, Levels(confidence=0.95, min_effect_pct=5, resamples=500))


LEVELS = Levels(confidence=0.95, min_effect_pct=5, resamples=200)


def by_arch(table: pd.DataFrame, arch: str) -> pd.Series:
    return table[table["arch"] == arch].iloc[0]


def test_a_clear_speedup_is_faster_with_its_ratio(versions):
    row = by_arch(versions, "mlp")
    assert row["verdict"] == FASTER
    assert row["ratio"] == pytest.approx(0.9, abs=0.01)
    assert row["ratio_ci_low"] < row["ratio"] < row["ratio_ci_high"]
    assert (row["old_version"], row["new_version"]) == ("1.0", "2.0")


def test_a_clear_slowdown_is_slower(versions):
    assert by_arch(versions, "lstm")["verdict"] == SLOWER


def test_the_same_distribution_is_equivalent(versions):
    assert by_arch(versions, "cnn")["verdict"] == EQUIVALENT


def test_a_real_change_below_the_minimum_effect_is_equivalent_not_faster_or_slower(versions):
    row = by_arch(versions, "rnn")
    assert row["p_difference"] < 0.01  # real, yet its whole CI lies within ±5 %
    assert row["verdict"] == EQUIVALENT and row["p_equivalence"] < 0.025


def test_a_failed_cell_is_named_not_compared(versions):
    assert by_arch(versions, "transformer")["verdict"] == "not compared (old ok, new failed)"


def test_the_summary_lists_the_changed_cells(versions):
    text = summary_markdown({"torch": versions})
    assert "## torch 1.0 → 2.0" in text
    assert "eager/mlp/b8: faster" in text and "eager/lstm/b8: slower" in text
    bullets = [line for line in text.splitlines() if line.startswith("- ")]
    assert len(bullets) == 2 and not any("cnn" in line for line in bullets)


def process(tmp_path, version: str, k: int, timings: np.ndarray):
    """Process k of torch/eager/mlp/b8 of one version, with these timings."""
    cell = Cell("torch", "eager", "mlp", 8, len(timings), latency_s=timings)
    cell.attrs |= {"framework_version": version, "process": k}
    path = tmp_path / version / f"p{k}.nc"
    write_cell(cell, path)
    return path


def test_a_cells_processes_are_pooled_into_one_comparison(tmp_path):
    old = [process(tmp_path, "1.0", k, np.full(3, 1e-3)) for k in range(3)]
    new = [process(tmp_path, "2.0", k, np.full(3, 0.5e-3)) for k in range(3)]
    table = compare(old, new, LEVELS)
    assert len(table) == 1
    row = table.iloc[0]
    assert row["ratio"] == pytest.approx(0.5) and "between processes" in row["method"]
    with pytest.raises(ValueError, match="process 1"):
        compare(old + [old[1]], new, LEVELS)


def test_with_several_processes_the_spread_between_them_decides(tmp_path):
    # within each process the timings agree to 0.1 %, but whole processes differ by ±10 %:
    # a 3 % change cannot be told from that spread
    rng = np.random.default_rng(10)

    def timings(median: float, k: int) -> np.ndarray:
        return median * (1 + 0.1 * (k - 1)) * (1 + 0.001 * rng.standard_normal(30))

    old = [process(tmp_path, "1.0", k, timings(1e-3, k)) for k in range(3)]
    new = [process(tmp_path, "2.0", k, timings(0.97e-3, k)) for k in range(3)]
    row = compare(old, new, LEVELS).iloc[0]
    assert row["verdict"] == UNDETERMINED
    assert row["ratio_ci_low"] < 0.9 and row["ratio_ci_high"] > 1.05


def test_cells_measured_on_another_kind_of_node_are_not_compared(tmp_path):
    def on(version, cpu_model):
        cell = Cell("torch", "eager", "mlp", 8, 20, latency_s=np.full(20, 1e-3))
        cell.attrs |= {"framework_version": version, "cpu_model": cpu_model}
        path = tmp_path / version / "mlp.nc"
        write_cell(cell, path)
        return [path]

    row = compare(on("1.0", "AMD EPYC 9R14"), on("2.0", "Intel Xeon 8488C"), LEVELS).iloc[0]
    assert row["verdict"] == (
        "not compared (measured on other nodes: AMD EPYC 9R14 and Intel Xeon 8488C)"
    )
    assert np.isnan(row["ratio"])
