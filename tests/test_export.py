"""The export job: the artifact beside its manifest, or the manifest of the failure; the cell
of an export mode runs the artifact, or fails with the export's own reason; the checks run
every artifact against the reference."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fwbench.io.artifact_file import artifact_of, read_manifest
from fwbench.io.cell_file import read_cell
from fwbench.plan import paths

from plans import plan_of

# jax.export writes and runs the artifacts the tests below export (the cheapest export to make):
# they are jax's layer; the plan's tests are fast.

CONFIG = {
    "frameworks": ["jax"],
    "modes": {"jax": ["eager", "export"]},
    "architectures": ["mlp"],
    "dims": {"mlp": {"input": 16, "hidden": [8], "classes": 4}},
    "batch_sizes": [1, 3],
    "bench": {"warmup": 1, "repeats": 3, "min_sample_s": 0.0, "processes": 1},
}
EXPORT = {"system": "local", "framework": "jax", "version": "0.0-fake", "mode": "export"}


@pytest.fixture
def no_pinning(monkeypatch):
    """The jobs' thread set-up pins the process: the test process keeps its cores."""
    from fwbench.measure import bench, export

    for module in (bench, export):
        monkeypatch.setattr(module, "setup_threads", lambda threads: {"threads": threads})


def _export(tmp_path: Path, arch: str = "mlp") -> tuple[Path, dict]:
    from fwbench.measure.export import run_export

    pytest.importorskip("jax")
    request = plan_of(CONFIG).export_request(EXPORT | {"arch": arch})
    request.lock = str(tmp_path / "lock")
    manifest = tmp_path / paths.artifact_manifest(EXPORT | {"arch": arch})
    run_export(request, manifest)
    return manifest, read_manifest(manifest)


def _cell(tmp_path: Path, manifest: Path, batch: int):
    from fwbench.measure.bench import run_cell

    wildcards = EXPORT | {"arch": "mlp", "batch": batch}
    request = plan_of(CONFIG).cell_request(wildcards)
    request.lock, request.artifact = str(tmp_path / "lock"), str(manifest)
    output = tmp_path / f"b{batch}.nc"
    run_cell(request, output)
    return read_cell(output)


@pytest.mark.jax
def test_an_export_writes_its_artifact_beside_a_manifest_of_its_costs(tmp_path, no_pinning):
    manifest, document = _export(tmp_path)
    artifact = Path(artifact_of(manifest))
    assert document["status"] == "ok" and artifact.parent == manifest.parent
    assert artifact.name == "mlp.jaxexport" and document["size_bytes"] == artifact.stat().st_size
    assert all(document[name] > 0 for name in ("import_s", "build_s", "export_s"))
    assert document["peak_rss_bytes"] > 0 and document["details"]["dynamic"].startswith("batch")
    assert not list(manifest.parent.glob("*.tmp"))  # moved into place whole


@pytest.mark.jax
def test_the_cells_of_every_batch_run_the_one_artifact(tmp_path, no_pinning):
    manifest, _ = _export(tmp_path)
    for batch in (1, 3):
        ds = _cell(tmp_path, manifest, batch)
        assert ds.attrs["status"] == "ok", ds.attrs.get("error_message")
        assert np.isfinite(ds["latency_s"]).all() and ds.attrs["artifact"].endswith(".jaxexport")
        assert "jax.export" in ds.attrs["compile_how"] and float(ds["compiled"]) == 1.0


@pytest.mark.jax
def test_a_failed_export_is_a_manifest_and_its_cells_fail_with_its_reason(
    tmp_path, no_pinning, monkeypatch
):
    from fwbench.frameworks.jax import export as jax_export

    def refuse(*args, **kwargs):
        raise NotImplementedError("no lowering for this op (test)")

    monkeypatch.setattr(jax_export, "export", refuse)
    manifest, document = _export(tmp_path)
    assert document["status"] == "failed" and document["file"] == ""
    assert document["error_type"] == "NotImplementedError"
    assert "no lowering for this op" in document["error_message"]
    ds = _cell(tmp_path, manifest, 1)
    assert ds.attrs["status"] == "failed"
    assert "the export failed" in ds.attrs["error_message"]
    assert "NotImplementedError: no lowering for this op (test)" in ds.attrs["error_message"]


@pytest.mark.jax
def test_the_checks_run_the_artifact_and_say_why_a_failed_one_fails(
    tmp_path, no_pinning, monkeypatch
):
    from fwbench.measure import checks

    manifest, _ = _export(tmp_path)
    arguments = dict(
        framework="jax", archs=["mlp"], dims=CONFIG["dims"], seed=0, batch=2, tolerance=1e-4
    )
    rows = checks.equivalence_rows(
        **arguments, modes=["export"], artifacts=checks.artifacts_by_cell([str(manifest)])
    )
    assert rows[0]["pass"] and rows[0]["error"] == "", rows
    failed = json.loads(manifest.read_text()) | {"status": "failed", "error_type": "E"}
    manifest.write_text(json.dumps(failed | {"error_message": "cannot convert"}))
    rows = checks.equivalence_rows(
        **arguments, modes=["export"], artifacts=checks.artifacts_by_cell([str(manifest)])
    )
    assert not rows[0]["pass"] and "the export failed" in rows[0]["error"]
    assert "E: cannot convert" in rows[0]["error"]


def test_the_plan_exports_each_architecture_once_for_every_batch():
    plan = plan_of(CONFIG)
    # one artifact per precision (bfloat16 at the table batch, by default)
    assert [(e["arch"], e["precision"]) for e in plan.exports] == [
        ("mlp", "float32"),
        ("mlp", "bfloat16"),
    ]
    manifest = paths.artifact_manifest(EXPORT | {"arch": "mlp"})
    bf16 = paths.artifact_manifest(EXPORT | {"arch": "mlp", "precision": "bfloat16"})
    assert plan.artifact_manifests("local", "jax") == [manifest, bf16]
    for batch in (1, 3):
        cell = EXPORT | {"arch": "mlp", "batch": batch}
        assert plan.artifact_input(cell) == [manifest]
        assert plan.artifact_input(cell | {"mode": "eager"}) == []


def test_an_export_request_for_a_mode_that_exports_nothing_names_it():
    with pytest.raises(ValueError, match=r"jax/eager is not a configured export mode"):
        plan_of(CONFIG).export_request(EXPORT | {"arch": "mlp", "mode": "eager"})
