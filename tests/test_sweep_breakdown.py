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


def test_a_dtypes_hardware_peak_job_counts_as_that_precisions(tmp_path):
    log = tmp_path / "run.log"
    log.write_text(
        "[Sun Dec  6 20:00:00 2026]\nlocalrule hardware_peak:\n    output: results/hw/int8.json\n"
        "    jobid: 7\n    wildcards: system=local, dtype=int8\n\n"
        "[Sun Dec  6 20:00:15 2026]\nFinished jobid: 7 (Rule: hardware_peak)\n"
    )
    assert sweep_breakdown.rule_spans(log) == {"hardware_peak": [(15.0, "int8")]}


def test_a_precisions_check_rows_and_trained_model_evaluations_are_counted(tmp_path):
    from fwbench.io.train_file import RunRecord, write_run

    checks = tmp_path / "results/checks/local/torch/1"
    checks.mkdir(parents=True)
    (checks / "equivalence.csv").write_text(
        "arch,precision,seconds\nmlp,float32,1.5\nmlp,int8_static,4.0\ncnn,int8_static,2.0\n"
    )
    old = tmp_path / "results/checks/local/jax/1"  # a file from before the column
    old.mkdir(parents=True)
    (old / "equivalence.csv").write_text("arch,precision\nmlp,bfloat16\n")
    merged = tmp_path / "results/checks/equivalence.csv"  # merge_checks' copy: not counted again
    merged.write_text("system,arch,precision,seconds\nlocal,mlp,int8_static,4.0\n")
    assert sweep_breakdown.checks_seconds(tmp_path) == {"float32": 1.5, "int8_static": 6.0}
    record = RunRecord(epochs=1)
    record.attrs["evaluated_in_s"] = {"bfloat16": 2.0, "int8_static_onnxrt": 3.0, "int8": 0.5}
    run = tmp_path / "results/train/local/torch/1/eager/resnet8-digits.nc"
    run.parent.mkdir(parents=True)
    write_run(record.to_dataset(), run)
    spent = sweep_breakdown.evaluation_seconds(tmp_path)
    assert spent == {"bfloat16": 2.0, "int8_static": 3.0, "int8": 0.5}
