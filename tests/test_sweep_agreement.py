"""`python -m fwbench agreement` (fwbench.tools.agreement) on two hand-made sweeps."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from fwbench.__main__ import main
from fwbench.analysis.rounds import METHOD as ROUNDS_METHOD
from fwbench.tools import agreement


def sweep(rows: list[tuple[str, float, float, str]], precision: str = "float32") -> pd.DataFrame:
    """(arch, speedup, se_log, verdict) per comparison of one sweep."""
    frame = pd.DataFrame(
        [
            {
                "system": "local",
                "kind": "winner",
                "arch": arch,
                "precision": precision,
                "batch": 32,
                "baseline": "jax/jit",
                "candidate": "torch/compiled",
                "speedup": speedup,
                "ci_low": speedup * math.exp(-1.96 * se),
                "ci_high": speedup * math.exp(1.96 * se),
                "se_log": se,
                "dof": math.inf,
                "verdict": verdict,
            }
            for arch, speedup, se, verdict in rows
        ]
    )
    return frame.set_index(agreement.KEY)


def test_agreement_tests_the_difference_and_counts_reversals():
    a = sweep(
        [
            ("mlp", 1.20, 0.02, "faster"),
            ("cnn", 1.00, 0.01, "equivalent"),
            ("rnn", 1.3, 0.01, "faster"),
        ]
    )
    b = sweep(
        [
            ("mlp", 1.25, 0.02, "faster"),
            ("cnn", 1.08, 0.01, "undetermined"),
            ("rnn", 0.7, 0.01, "slower"),
        ]
    )
    found = agreement.agreement(a, b, 0.95)
    # mlp: |log 1.25/1.20| = 0.041 ≤ 1.96·0.028 = 0.055; cnn: 0.077 > 0.028; rnn: far apart
    assert found == {
        "shared": 3,
        "agree": 1,
        "reversed": 1,
        "decided_in_one_only": 1,
        "same_verdict": 1,
    }
    assert "3 comparisons, 3 decided (100%), median CI half-width 2.0%" in agreement.report("A", a)


def test_the_same_pair_in_two_precisions_is_two_comparisons():
    """bfloat16's jax/jit against torch/compiled is not float32's: keyed apart, never paired
    across precisions; a file that repeats a key is refused."""
    a = pd.concat(
        [sweep([("mlp", 1.2, 0.02, "faster")]), sweep([("mlp", 2.0, 0.02, "faster")], "bfloat16")]
    )
    b = pd.concat(
        [sweep([("mlp", 1.2, 0.02, "faster")]), sweep([("mlp", 2.0, 0.02, "faster")], "bfloat16")]
    )
    assert agreement.agreement(a, b, 0.95)["shared"] == 2
    with pytest.raises(ValueError, match="repeats a comparison"):
        agreement.agreement(pd.concat([a, a]), b, 0.95)


def test_the_command_reads_two_results_dirs_and_prints_the_shared_figures(tmp_path, capsys):
    rows_a = [("mlp", 1.20, 0.02, "faster"), ("cnn", 1.00, 0.01, "equivalent")]
    rows_b = [("mlp", 1.25, 0.02, "faster"), ("cnn", 1.08, 0.01, "undetermined")]
    for name, rows in (("a", rows_a + [("rnn", 1.3, 0.01, "faster")]), ("b", rows_b)):
        (tmp_path / name / "summary").mkdir(parents=True)
        sweep(rows).reset_index().to_csv(tmp_path / name / "summary/comparisons.csv", index=False)
    assert main(["agreement", str(tmp_path / "a"), str(tmp_path / "b"), "--kind", "winner"]) == 0
    out = capsys.readouterr().out
    assert "A " + str(tmp_path / "a") + ": 3 comparisons, 3 decided (100%)" in out
    assert "shared comparisons: 2 (only in A: 1, only in B: 0)" in out
    assert "agree within the joint uncertainty: 1 (50%)" in out
    assert "decided in one, undetermined in the other: 1" in out


def test_decided_prints_per_batch_and_kind_the_share_decided_and_the_median_half_width(
    tmp_path, capsys
):
    frame = sweep([("mlp", 1.20, 0.02, "faster"), ("cnn", 1.00, 0.05, "undetermined")])
    frame = frame.reset_index().assign(method=[ROUNDS_METHOD, "bootstrap"])
    at_one = frame.assign(batch=1, kind="compile", verdict="slower", method=ROUNDS_METHOD)
    (tmp_path / "summary").mkdir()
    pd.concat([frame, at_one]).to_csv(tmp_path / "summary/comparisons.csv", index=False)
    assert main(["decided", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("b1 every kind: 2 comparisons, 2 decided (100%)")
    assert out[0].endswith("from the rounds: 2")
    half = math.expm1(1.96 * 0.035) * 100  # the median of the two half-widths
    assert out[2].startswith(
        f"b32 every kind: 2 comparisons, 1 decided (50%), median CI half-width {half:.1f}%"
    )
    assert out[2].endswith("from the rounds: 1") and out[3].startswith("b32 winner: 2 comparisons")
