"""self_measurement/sweep_breakdown.py's reading of Snakemake logs: each job's span, keyed by
its first output, and a later partial run's spans in place of the first run's (--after)."""

from __future__ import annotations

import importlib.util

from conftest import REPO

SCRIPT = REPO / "self_measurement" / "sweep_breakdown.py"
spec = importlib.util.spec_from_file_location("sweep_breakdown", SCRIPT)
sweep_breakdown = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sweep_breakdown)


def _log(path, jobs):
    """A Snakemake log of (rule, output, precision tag, start second, end second) jobs."""
    lines = []
    for jobid, (rule, output, tag, start, end) in enumerate(jobs, 1):
        lines += [
            f"[Sun Dec  6 20:00:{start:02d} 2026]",
            f"localrule {rule}:",
            f"    output: {output}",
            f"    jobid: {jobid}",
            f"    wildcards: system=local, precision_tag={tag}",
            "",
            f"[Sun Dec  6 20:00:{end:02d} 2026]",
            f"Finished jobid: {jobid} (Rule: {rule})",
        ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_later_runs_jobs_replace_the_first_runs_spans_by_output(tmp_path):
    first = _log(
        tmp_path / "first.log",
        [
            ("bench", "results/cells/a/b32.nc", "", 0, 10),
            ("bench", "results/cells/a/b32-bf16.nc", "-bf16", 10, 30),
            ("export", "results/artifacts/a.json", "", 30, 40),
        ],
    )
    later = _log(tmp_path / "later.log", [("bench", "results/cells/a/b32-bf16.nc", "-bf16", 0, 5)])
    assert sweep_breakdown.rule_spans(first) == {
        "bench": [(10.0, "float32"), (20.0, "bfloat16")],
        "export": [(10.0, "float32")],
    }
    after = sweep_breakdown.rule_spans(first, [later])
    assert sorted(after["bench"]) == [(5.0, "bfloat16"), (10.0, "float32")]
    assert after["export"] == [(10.0, "float32")]
