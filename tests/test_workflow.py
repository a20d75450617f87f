"""The smoke sweep end to end through Snakemake: every cell a job, none overlapping, failures
recorded as data, an interrupted job leaving nothing half-written."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from fwbench.analysis.roofline import read_hardware_limits
from fwbench.io.cell_file import read_cell
from fwbench.io.checks_file import read_equivalence
from fwbench.provenance import installed_versions

from conftest import (
    FAILING_CELL,
    NO_BF16_KERNEL,
    ORT_ERROR,
    REPO,
    SMOKE,
    SNAKEMAKE,
    smoke_configs,
    snakemake,
)

pytestmark = pytest.mark.e2e

# The smoke sweep's one (framework, mode, architecture) its path cannot export: the TFLite
# converter refuses the LSTM's TensorList ops without Flex (tests/test_adapter_contract.py).
UNCONVERTIBLE = ("tensorflow", "litert", "lstm")


def version(framework: str) -> str:
    return next(iter(installed_versions(framework).values()))


def cells(workdir: Path) -> list[Path]:
    return sorted((workdir / "results/cells").rglob("*.nc"))


def float32_cells(workdir: Path) -> list[Path]:
    """The cell files of float32 (no precision tag)."""
    return [path for path in cells(workdir) if "-bf16" not in path.name]


def test_every_configured_cell_is_its_own_output(smoke_run):
    config = yaml.safe_load(Path(SMOKE).read_text())
    variants = sum(len(config["modes"][fw]) for fw in config["frameworks"])
    assert variants == 12  # every mode of every framework, export modes too
    expected = variants * len(config["architectures"]) * len(config["batch_sizes"])
    assert len(float32_cells(smoke_run)) == expected
    # bfloat16 for mlp at the table batch, in every mode but litert (a recorded failure where
    # the runtime has no kernel: ONNX Runtime's)
    bf16 = [path for path in cells(smoke_run) if path.name == "b8-bf16.nc"]
    assert len(bf16) == len(cells(smoke_run)) - expected == variants - 1
    attrs = {(path.parts[-5], path.parts[-3]): read_cell(path).attrs for path in bf16}
    assert all(cell["precision"] == "bfloat16" for cell in attrs.values())
    failed = {variant: cell for variant, cell in attrs.items() if cell["status"] != "ok"}
    assert set(failed) == {(framework, mode) for framework, mode, _ in NO_BF16_KERNEL}
    assert all(ORT_ERROR in cell["error_message"] for cell in failed.values()), "it says why"
    torch_cell = smoke_run / f"results/cells/local/torch/{version('torch')}/compiled/mlp/b8.nc"
    ds = read_cell(torch_cell)
    assert ds.attrs["status"] == "ok" and ds.attrs["batch"] == 8
    assert float(ds["compiled"]) == 1.0


def test_each_export_mode_wrote_one_artifact_per_architecture_that_its_cells_ran(smoke_run):
    from fwbench.io.artifact_file import artifact_of

    config = yaml.safe_load(Path(SMOKE).read_text())
    for framework, mode in (("torch", "aoti"), ("jax", "export")):
        for arch in config["architectures"]:
            base = f"results/artifacts/local/{framework}/{version(framework)}/{mode}/{arch}"
            manifest = smoke_run / f"{base}.json"
            cell = smoke_run / base.replace("artifacts", "cells") / "b8.nc"
            ds = read_cell(cell)
            if json.loads(manifest.read_text())["status"] == "ok":
                assert ds.attrs["status"] == "ok", ds.attrs.get("error_message")
                assert ds.attrs["artifact"] == artifact_of(manifest).replace(f"{smoke_run}/", "")
            else:  # a path that cannot export the model: its cells say why
                assert "the export failed" in ds.attrs["error_message"]


def test_no_two_timing_jobs_overlapped(smoke_run):
    spans = sorted(
        (ds.attrs["start_ns"], ds.attrs["end_ns"], path.name)
        for path in cells(smoke_run)
        for ds in [read_cell(path)]
    )
    assert len(spans) > 1
    for (_, end, first), (start, _, second) in zip(spans, spans[1:], strict=False):
        assert start >= end, f"{first} and {second} overlapped"


def test_a_failing_cell_is_recorded_and_the_sweep_completes(smoke_run):
    framework, mode, arch = FAILING_CELL.split("/")
    path = smoke_run / f"results/cells/local/{framework}/{version(framework)}/{mode}/{arch}/b1.nc"
    ds = read_cell(path)
    assert ds.attrs["status"] == "failed"
    assert ds.attrs["error_type"] == "InjectedFailure"
    others = [read_cell(p).attrs["status"] for p in float32_cells(smoke_run) if arch not in str(p)]
    # bfloat16's failures: test_every_configured_cell_is_its_own_output
    assert set(others) == {"ok"}
    assert (smoke_run / "results/aggregate/bench.nc").exists()
    assert (smoke_run / "results/hardware/local.json").exists()


def test_a_target_outside_the_config_is_rejected(smoke_run):
    outside = f"results/cells/local/torch/{version('torch')}/xla/mlp/b8.nc"
    result = snakemake("-n", outside, "--configfile", SMOKE, cwd=smoke_run)
    assert result.returncode != 0
    assert "mode 'xla' is not configured for torch" in result.stdout + result.stderr
    wrong_version = "results/cells/local/torch/0.0.1/eager/mlp/b8.nc"
    result = snakemake("-n", wrong_version, "--configfile", SMOKE, cwd=smoke_run)
    assert result.returncode != 0
    assert "0.0.1" in result.stdout + result.stderr


def test_an_interrupted_job_leaves_no_output_and_only_it_reruns(smoke_copy):
    smoke_run = smoke_copy
    # A sweep stopped midway: one cell not yet written, nothing downstream of it yet (Snakemake
    # does not recreate a missing intermediate file whose consumers are up to date).
    target = smoke_run / f"results/cells/local/torch/{version('torch')}/compiled/lstm/b8.nc"
    target.unlink()
    results = smoke_run / "results"
    (results / "aggregate/bench.nc").unlink()
    (results / "report.md").unlink()
    for later in ("summary", "figures"):
        shutil.rmtree(results / later)
    job = subprocess.Popen(
        [*SNAKEMAKE, "--snakefile", str(REPO / "Snakefile"), "--cores", "1"]
        + [str(target.relative_to(smoke_run)), "--configfile", *smoke_configs(smoke_run)],
        cwd=smoke_run,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    log = Path(str(target).replace("results/cells", "results/logs/bench")).with_suffix(".log")
    deadline = time.monotonic() + 120
    while not log.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1.5)  # inside the job: importing torch / compiling
    os.killpg(job.pid, signal.SIGKILL)
    job.wait()
    assert not target.exists()
    assert not list(target.parent.glob(f".{target.name}.*")), "a temporary file was left"
    # A killed Snakemake leaves its directory lock behind; unlocking is the user's first step.
    unlock = snakemake("--unlock", "--configfile", *smoke_configs(smoke_run), cwd=smoke_run)
    assert unlock.returncode == 0, unlock.stdout + unlock.stderr
    plan = snakemake("-n", "--configfile", *smoke_configs(smoke_run), cwd=smoke_run)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    # (a dry run prints its job-stats table twice: before and after the jobs)
    planned = {line.strip() for line in plan.stdout.splitlines() if line.startswith("bench ")}
    assert {row.split()[1] for row in planned} == {"1"}, plan.stdout
    assert f"output: {target.relative_to(smoke_run)}" in plan.stdout


def test_more_processes_add_only_the_new_processes_jobs_in_a_seeded_shuffled_order(smoke_run):
    rigorous = smoke_run / "three-processes.yaml"
    rigorous.write_text(yaml.safe_dump({"bench": {"processes": 3, "multi_process_share": 1}}))
    configs = [*smoke_configs(smoke_run), str(rigorous)]
    plan = snakemake("-n", "--configfile", *configs, cwd=smoke_run)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    counts = {
        row.split()[0]: int(row.split()[1])
        for row in plan.stdout.splitlines()
        if row.startswith(("bench ", "bench_process "))
    }
    assert "bench" not in counts  # the cells on disk are process 0: none reruns
    assert counts["bench_process"] == 2 * len(float32_cells(smoke_run))  # bf16: process 0
    outputs = [
        line.split("output: ")[1]
        for line in plan.stdout.splitlines()
        if "output: results/cells/" in line
    ]
    priorities = [
        int(line.split("priority: ")[1])
        for line in plan.stdout.splitlines()
        if line.strip().startswith("priority: ")
    ]
    assert len(set(priorities)) == len(outputs) == counts["bench_process"]
    # not sorted by framework: the order mixes them
    frameworks_in_order = [output.split("/")[3] for output in outputs]
    assert frameworks_in_order != sorted(frameworks_in_order)


def test_stats_carry_roofline_metrics_from_the_measured_hardware(smoke_run):
    stats = pd.read_csv(smoke_run / "results/summary/stats.csv")
    batches = yaml.safe_load(Path(SMOKE).read_text())["batch_sizes"]
    ok = stats[stats["status"] == "ok"]
    limits = read_hardware_limits(smoke_run / "results/hardware/local.json")
    # a bf16 cell has a roof only where the CPU computes bf16 natively (the hardware stage
    # measures no emulated peak: an AVX2 Zen 3 has none); never one made up
    roofed = (ok["precision"] == "float32") | math.isfinite(limits.bf16_peak_flops_per_s)
    assert (ok[roofed]["efficiency"] > 0).all() and (ok[roofed]["lower_bound_s"] > 0).all()
    assert ok[~roofed]["efficiency"].isna().all() and ok[~roofed]["lower_bound_s"].isna().all()
    failed = stats[(stats["status"] == "failed") & (stats["precision"] == "float32")]
    variants = failed[["framework", "mode", "arch"]].itertuples(index=False, name=None)
    assert sorted(set(variants)) == sorted({tuple(FAILING_CELL.split("/")), UNCONVERTIBLE})
    low = stats[(stats["status"] == "failed") & (stats["precision"] == "bfloat16")]
    variants = low[["framework", "mode", "arch"]].itertuples(index=False, name=None)
    assert set(variants) == NO_BF16_KERNEL and low["error"].str.contains(ORT_ERROR).all()
    assert len(failed) == 2 * len(batches)
    unconvertible = failed[failed["mode"] == UNCONVERTIBLE[1]]
    assert unconvertible["error"].str.contains("the export failed").all()
    assert set(failed["error_type"]) == {"InjectedFailure", "RuntimeError"}
    assert len(ok) == len(stats) - len(failed) - len(low)


def test_a_reanalysis_of_the_finished_sweep_reproduces_its_comparisons(smoke_run, tmp_path):
    """`python -m fwbench reanalyse`, the before/after of a change of the statistics, reads a
    sweep as the stats rule does: with this checkout's code, the same comparisons."""
    result = subprocess.run(
        [sys.executable, "-m", "fwbench", "reanalyse", str(smoke_run), str(tmp_path)]
        + ["--config", SMOKE],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    again = pd.read_csv(tmp_path / "summary/comparisons.csv")
    swept = pd.read_csv(smoke_run / "results/summary/comparisons.csv")
    assert len(swept) > 0
    pd.testing.assert_frame_equal(again, swept)


def test_equivalence_checks_pass_for_every_framework_and_mode(smoke_run):
    table = read_equivalence(smoke_run / "results/checks/equivalence.csv")
    config = yaml.safe_load(Path(SMOKE).read_text())
    assert set(table["framework"]) == set(config["frameworks"])
    where = list(zip(table["framework"], table["mode"], table["arch"], strict=True))
    failed = table[[w == UNCONVERTIBLE for w in where]]
    assert len(failed) == 1 and "TensorListReserve" in failed["error"].item()  # its reason
    low = table["precision"] == "bfloat16"
    no_kernel = table[[w in NO_BF16_KERNEL and b for w, b in zip(where, low, strict=True)]]
    assert len(no_kernel) == len(NO_BF16_KERNEL) and not no_kernel["pass"].any()
    assert no_kernel["error"].str.contains(ORT_ERROR).all()  # the runtime's own message
    passed = table.drop(index=[*failed.index, *no_kernel.index])
    assert passed["pass"].all(), passed[~passed["pass"]].to_string()


def planned(plan: subprocess.CompletedProcess) -> dict[str, int]:
    """Jobs per rule of a dry run's job-stats table."""
    assert plan.returncode == 0, plan.stdout[-3000:] + plan.stderr[-3000:]
    counts = {}
    for line in plan.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit() and parts[0] != "total":
            counts[parts[0]] = int(parts[1])
    return counts


def test_adding_a_system_plans_only_that_systems_timing_jobs(smoke_run):
    second = smoke_run / "two-systems.yaml"
    second.write_text(yaml.safe_dump({"systems": {"local": {}, "other": {"threads": 1}}}))
    plan = snakemake("-n", "--configfile", *smoke_configs(smoke_run), str(second), cwd=smoke_run)
    counts = planned(plan)
    assert counts["bench"] == len(cells(smoke_run)) and counts["hardware"] == 1
    assert counts["hardware_peak"] == 1  # its int8 peak (fwbench.hardware.peaks)
    outputs = [line.split("output: ")[1] for line in plan.stdout.splitlines() if "output: " in line]
    timing = [o for o in outputs if o.startswith(("results/cells/", "results/hardware/"))]
    assert timing and all(o.split("/")[2].startswith("other") for o in timing), timing


def run_migrate(workdir: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "fwbench.io.migrate", "--system", "local"]
    return subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=60)


def test_results_of_the_layout_before_systems_are_refused_then_migrated_and_not_rerun(smoke_copy):
    results = smoke_copy / "results"
    # The layout before systems: stage/framework/..., the hardware file named by host.
    for stage in ("cells", "train", "checks", "logs/bench", "logs/train", "logs/checks"):
        for framework in (results / stage / "local").iterdir():
            framework.rename(results / stage / framework.name)
        (results / stage / "local").rmdir()
    # ... written before it recorded its system and node (hardware file schema 2)
    hardware = json.loads((results / "hardware/local.json").read_text())
    old = {k: v for k, v in hardware.items() if k not in ("system", "node")}
    (results / "hardware/vm-cpu.json").write_text(json.dumps(old | {"schema_version": 2}))
    (results / "hardware/local.json").unlink()
    configs = smoke_configs(smoke_copy)
    refused = snakemake("-n", "--configfile", *configs, cwd=smoke_copy)
    assert refused.returncode != 0
    assert "python -m fwbench.io.migrate --system <name>" in refused.stdout + refused.stderr

    migrate = run_migrate(smoke_copy)
    assert migrate.returncode == 0, migrate.stderr
    assert "results/hardware/vm-cpu.json -> results/hardware/local.json" in migrate.stdout
    counts = planned(snakemake("-n", "--configfile", *configs, cwd=smoke_copy))
    # Nothing measured again: the moved cells, runs, checks and hardware file all count.
    assert not {"bench", "train", "checks", "hardware"} & set(counts), counts
    again = run_migrate(smoke_copy)
    assert again.returncode == 0 and "nothing of the layout before systems" in again.stdout
