"""Upgrading one framework reruns only its cells, keeps the old ones, and `compare` says what
changed. The upgrade is simulated with a fake dist-info on PYTHONPATH (importlib.metadata then
reports the new version for the whole workflow run)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import yaml

from fwbench.io.comparisons_file import VERDICTS
from fwbench.io.rounds_file import read_rounds
from fwbench.provenance import installed_versions

from conftest import FAILING_CELL, SMOKE, smoke_configs, snakemake
from plans import plan_of

# the tests that rerun a copy of the smoke sweep are e2e (conftest: they read `smoke_run`)
NEW_VERSION = "99.0"


def fake_upgrade(root: Path, distribution: str, version: str) -> dict[str, str]:
    info = root / f"{distribution}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n"
    )
    return {"PYTHONPATH": str(root)}


def planned_jobs(result) -> dict[str, int]:
    """{rule: count} from the job-stats table of a dry run."""
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    table = result.stdout.split("Job stats:")[1].split("\n\n")[0]
    rows = (re.match(r"^(\w+)\s+(\d+)$", line.strip()) for line in table.splitlines())
    return {row[1]: int(row[2]) for row in rows if row and row[1] != "total"}


def modes_in(config: dict) -> int:
    """Framework-mode pairs of the smoke config."""
    return sum(len(config["modes"][framework]) for framework in config["frameworks"])


def snapshot(paths: list[Path]) -> dict[Path, tuple[bytes, int]]:
    return {path: (path.read_bytes(), path.stat().st_mtime_ns) for path in paths}


def assert_plans_only(framework: str, workdir: Path, env: dict[str, str]) -> int:
    """A dry run after `framework`'s upgrade plans its cells, exports, checks and rounds, and
    nothing of another framework's or of the hardware stage. Returns its cell count."""
    config = yaml.safe_load(Path(SMOKE).read_text())
    plan = plan_of(base=SMOKE)
    # every precision's: float32's, and bfloat16's where the smoke sweep runs it
    cells = sum(cell["framework"] == framework for cell in plan.cells)
    exports = sum(export["framework"] == framework for export in plan.exports)
    configs = smoke_configs(workdir)
    jobs = planned_jobs(snakemake("-n", "--configfile", *configs, cwd=workdir, env=env))
    assert jobs.get("bench") == cells
    # its export modes export again, once per architecture and precision; no other's do
    assert jobs.get("export") == exports
    assert jobs.get("checks") == 1 and "hardware" not in jobs
    assert jobs.get("aggregate_bench") == 1
    # the rounds of every architecture its comparisons sit in (the smoke sweep's: mlp, both batches)
    rows = len(config["rounds"]["architectures"])
    assert jobs.get("rounds") == rows * config["rounds"]["sets"]
    return cells


def test_upgrading_torch_plans_only_torch_jobs(smoke_copy, tmp_path):
    env = fake_upgrade(tmp_path / "site", "torch", NEW_VERSION)
    assert assert_plans_only("torch", smoke_copy, env) > 0


# The upgrade run for real takes jax, the smoke sweep's cheapest framework to rerun (torch's
# compiled and aoti cells compile for half a minute each); the mechanism is the same for each.
def test_upgrading_jax_reruns_only_jax_cells_and_keeps_the_old_ones(smoke_copy, tmp_path):
    workdir = smoke_copy
    env = fake_upgrade(tmp_path / "site", "jax", NEW_VERSION)
    jax_cells = assert_plans_only("jax", workdir, env)

    cells = workdir / "results/cells/local"  # the default config's one system
    old_jax = sorted((cells / "jax").rglob("*.nc"))
    others = snapshot(
        sorted((cells / "torch").rglob("*.nc")) + sorted(cells.glob("tensorflow/**/*.nc"))
    )
    configs = smoke_configs(workdir)
    result = snakemake("--cores", "2", "--configfile", *configs, cwd=workdir, env=env, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]

    assert snapshot(list(others)) == others, "another framework's cell was recomputed"
    assert all(path.exists() for path in old_jax), "the previous version's cells were lost"
    new_jax = sorted((cells / "jax" / NEW_VERSION).rglob("*.nc"))
    assert len(new_jax) == jax_cells

    table = pd.read_csv(workdir / "results/compare/local/jax.csv", dtype={"new_version": str})
    assert len(table) == jax_cells
    assert set(table["new_version"]) == {NEW_VERSION}
    assert set(table["old_version"]) == {installed_versions("jax")["jax"]}
    # the cell the smoke sweep makes fail (jax's jit lstm, float32) fails in both versions
    failed = table[table["old_status"] != "ok"]
    where = zip(failed["framework"], failed["mode"], failed["arch"], strict=True)
    assert {"/".join(cell) for cell in where} == {FAILING_CELL}
    assert set(failed["precision"]) == {"float32"}
    assert set(failed["verdict"]) == {"not compared (old failed, new failed)"}
    compared = table.drop(index=failed.index)
    assert set(compared["verdict"]) <= set(VERDICTS)
    assert (compared["ratio"] > 0).all()
    assert "## local/jax" in (workdir / "results/compare/summary.md").read_text()
    for k in range(yaml.safe_load(Path(SMOKE).read_text())["rounds"]["sets"]):
        rounds = read_rounds(workdir / f"results/rounds/local/mlp/b8/set{k}.nc")
        jax = rounds["version"].sel(variant=rounds["framework"] == "jax").values
        assert set(jax) == {NEW_VERSION}


def test_a_dimension_edit_reruns_only_that_architectures_cells(smoke_copy):
    override = smoke_copy / "wider.yaml"
    config = yaml.safe_load(Path(SMOKE).read_text())
    mlp = config["dims"]["mlp"] | {"hidden": [48]}
    override.write_text(yaml.safe_dump({"dims": {"mlp": mlp}}))
    configs = [*smoke_configs(smoke_copy), str(override)]
    plan = planned_jobs(snakemake("-n", "--configfile", *configs, cwd=smoke_copy))
    # every mlp cell, each precision's (the bf16 ones too)
    mlp_cells = sum(cell["arch"] == "mlp" for cell in plan_of(base=SMOKE).cells)
    assert mlp_cells > modes_in(config) * len(config["batch_sizes"])
    assert plan.get("bench") == mlp_cells
    assert "hardware" not in plan and "train" not in plan


def test_changing_repeats_reruns_every_cell_and_nothing_upstream(smoke_copy):
    override = smoke_copy / "repeats.yaml"
    override.write_text(yaml.safe_dump({"bench": {"repeats": 6}}))
    configs = [*smoke_configs(smoke_copy), str(override)]
    plan = planned_jobs(snakemake("-n", "--configfile", *configs, cwd=smoke_copy))
    assert plan.get("bench") == len(plan_of(base=SMOKE).cells)  # every precision's
    assert "hardware" not in plan and "checks" not in plan and "train" not in plan


def test_installed_versions_sees_the_fake_upgrade(tmp_path, monkeypatch):
    fake_upgrade(tmp_path, "torch", NEW_VERSION)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert installed_versions("torch")["torch"] == NEW_VERSION
