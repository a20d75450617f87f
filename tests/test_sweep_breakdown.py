"""`python -m fwbench breakdown` (fwbench.tools.breakdown): its reading of Snakemake logs (each
job's span, keyed by its first output, and a later partial run's spans in place of the first
run's: --after), a precision's work inside shared jobs, and a directory without cells."""

from __future__ import annotations

from fwbench.__main__ import main
from fwbench.tools import breakdown


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
    assert breakdown.rule_spans(first) == {
        "bench": [(10.0, "float32"), (20.0, "bfloat16")],
        "export": [(10.0, "float32")],
    }
    after = breakdown.rule_spans(first, [later])
    assert sorted(after["bench"]) == [(5.0, "bfloat16"), (10.0, "float32")]
    assert after["export"] == [(10.0, "float32")]


def test_a_dtypes_hardware_peak_job_counts_as_that_precisions(tmp_path):
    log = tmp_path / "run.log"
    log.write_text(
        "[Sun Dec  6 20:00:00 2026]\nlocalrule hardware_peak:\n    output: results/hw/int8.json\n"
        "    jobid: 7\n    wildcards: system=local, dtype=int8\n\n"
        "[Sun Dec  6 20:00:15 2026]\nFinished jobid: 7 (Rule: hardware_peak)\n"
    )
    assert breakdown.rule_spans(log) == {"hardware_peak": [(15.0, "int8")]}


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
    assert breakdown.checks_seconds(tmp_path) == {"float32": 1.5, "int8_static": 6.0}
    record = RunRecord(epochs=1)
    record.attrs["evaluated_in_s"] = {"bfloat16": 2.0, "int8_static_onnxrt": 3.0, "int8": 0.5}
    run = tmp_path / "results/train/local/torch/1/eager/resnet8-digits.nc"
    run.parent.mkdir(parents=True)
    write_run(record.to_dataset(), run)
    spent = breakdown.evaluation_seconds(tmp_path)
    assert spent == {"bfloat16": 2.0, "int8_static": 3.0, "int8": 0.5}


def test_a_directory_without_cells_is_refused_naming_where_it_looked(tmp_path, capsys):
    assert main(["breakdown", str(tmp_path)]) == 1
    assert f"no cells under {tmp_path / 'results/cells'}" in capsys.readouterr().err


def test_the_command_splits_a_cells_window_and_sets_it_against_the_logs_span(tmp_path, capsys):
    import numpy as np

    from fwbench.io.cell_file import Cell, write_cell

    cell = Cell("torch", "eager", "mlp", 1, repeats=10)
    cell.latency_s = np.full(10, 0.1)
    cell.scalars = {"flops": 1.0, "bytes": 1.0, "first_call_s": 2.0}
    cell.attrs = {"host": "h", "device": "cpu", "framework_version": "1", "process": 0}
    cell.attrs |= {"start_ns": 0, "end_ns": 10_000_000_000, "import_s": 3.0}
    path = tmp_path / "results/cells/local/torch/1/eager/mlp/b1.nc"
    path.parent.mkdir(parents=True)
    write_cell(cell, path)
    (tmp_path / ".snakemake/log").mkdir(parents=True)
    _log(tmp_path / ".snakemake/log/a.snakemake.log", [("bench", str(path), "", 0, 20)])
    assert main(["breakdown", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    # import 3 s, first call 2 s, timed 10 × 0.1 s: the other 4 s of the 10 s window
    assert (
        f"{'torch':<11}{1:>6}" + "".join(f"{v:>14.1f}" for v in (3, 0, 2, 0, 1, 0, 0, 4, 10)) in out
    )
    assert "sweep wall time (Snakemake log a.snakemake.log): 20 s = 0.3 min" in out
    assert "inside cell windows: 10 s (50%)" in out
    assert f"{'bench':<18}{1:>6}{20:>10}" in out
