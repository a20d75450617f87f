"""compare: old vs new per cell, with a verdict that needs significance and practical size."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fwbench.analysis.compare import (
    FASTER,
    SAME,
    SLOWER,
    CompareSettings,
    compare,
    summary_markdown,
)
from fwbench.io.cell_file import Cell, write_cell
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
    return compare(old, new, CompareSettings(threshold_pct=5, resamples=500))


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


def test_the_same_distribution_is_no_change(versions):
    assert by_arch(versions, "cnn")["verdict"] == SAME


def test_a_significant_change_below_the_practical_threshold_is_no_change(versions):
    row = by_arch(versions, "rnn")
    assert row["p_holm"] < 0.01
    assert row["verdict"] == SAME


def test_a_failed_cell_is_named_not_compared(versions):
    assert by_arch(versions, "transformer")["verdict"] == "not compared (old ok, new failed)"


def test_the_summary_lists_the_changed_cells(versions):
    text = summary_markdown({"torch": versions})
    assert "## torch 1.0 → 2.0" in text
    assert "eager/mlp/b8: faster" in text and "eager/lstm/b8: slower" in text
    bullets = [line for line in text.splitlines() if line.startswith("- ")]
    assert len(bullets) == 2 and not any("cnn" in line for line in bullets)


def test_a_cells_processes_are_pooled_into_one_comparison(tmp_path):
    def process(version, k, median):
        cell = Cell("torch", "eager", "mlp", 8, 3, latency_s=np.full(3, median))
        cell.attrs |= {"framework_version": version, "process": k}
        path = tmp_path / version / f"p{k}.nc"
        write_cell(cell, path)
        return path

    old = [process("1.0", k, 1e-3) for k in range(3)]
    new = [process("2.0", k, 0.5e-3) for k in range(3)]
    table = compare(old, new, CompareSettings(resamples=200))
    assert len(table) == 1
    row = table.iloc[0]
    assert row["ratio"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="process 1"):
        compare(old + [old[1]], new, CompareSettings(resamples=200))
