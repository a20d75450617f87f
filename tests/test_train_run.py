"""A training run becomes one self-describing file: every variable with its units, the
provenance, and on failure a file with status 'failed' instead of a crash."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fwbench.frameworks import MODES, is_export_mode
from fwbench.frameworks.cache_dirs import UNSEEDED
from fwbench.host.contention import OtherCpu
from fwbench.io import train_file
from fwbench.io.train_file import EPOCH_UNITS, SCALAR_UNITS, RunRecord, read_run, write_run
from fwbench.training import run as training
from fwbench.training.config import parse_settings

from training_cases import default_settings, tiny_settings

pytestmark = pytest.mark.per_framework

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "workflow" / "scripts" / "train.py"


@pytest.mark.torch
def test_a_train_run_writes_every_variable_with_units_and_provenance(tmp_path):
    settings = tiny_settings()
    result = training.run(
        "torch", "eager", "tiny", "digits", settings, seed=0, threads={"threads": 1}
    )
    path = tmp_path / "run.nc"
    write_run(result, path)
    ds = read_run(path)

    assert ds.attrs["status"] == "ok", ds.attrs.get("error_message")
    assert ds.sizes["epoch"] == 2
    for name, unit in EPOCH_UNITS.items():
        assert ds[name].dims == ("epoch",) and ds[name].attrs["units"] == unit, name
        if name == "busy_cpu_other":  # unmeasurable (NaN) on epochs shorter than the window
            short = ds["epoch_time_s"] < OtherCpu.MIN_WINDOW_S
            assert (np.isfinite(ds[name]) | short).all(), name
        else:
            assert np.isfinite(ds[name]).all(), name
    for name, unit in SCALAR_UNITS.items():
        assert ds[name].dims == () and ds[name].attrs["units"] == unit, name

    epoch_time = ds.epoch_time_s.values
    assert (epoch_time > 0).all()
    np.testing.assert_allclose(ds.samples_per_s, 64 / epoch_time)  # 8 steps × 8 samples
    assert ds.first_epoch_overhead_s.item() == pytest.approx(epoch_time[0] - epoch_time[1])
    assert ds.learning_rate.values.tolist() == pytest.approx([0.1, 0.01])
    assert ((ds.val_accuracy >= 0) & (ds.val_accuracy <= 1)).all()
    assert ds.peak_mem_bytes.item() == ds.peak_rss_bytes.item() > 50e6
    assert ds.compiled.item() == 0

    attrs = ds.attrs
    assert attrs["framework"] == "torch" and attrs["framework_version"].startswith("2.")
    assert json.loads(attrs["threads"]) == {"threads": 1}
    assert json.loads(attrs["config"])["epochs"] == 2
    assert attrs["steps_per_epoch"] == 8 and attrs["train_samples"] == 64
    assert json.loads(attrs["spec"])["base_width"] == 8
    assert attrs["start_ns"] < attrs["end_ns"] and attrs["git_commit"]
    assert attrs["compile_cache"] == UNSEEDED  # torch's: a private, empty one
    assert len(attrs["dataset_fingerprint"]) == 64 and len(attrs["batch_order_hash"]) == 64


def test_a_train_file_records_its_schema_version_and_a_newer_one_is_refused(tmp_path):
    ds = RunRecord(epochs=2, attrs={"framework": "torch"}).to_dataset()
    write_run(ds, tmp_path / "run.nc")
    assert read_run(tmp_path / "run.nc").attrs["schema_version"] == train_file.SCHEMA_VERSION == 1
    ds.attrs["schema_version"] = 2
    write_run(ds, tmp_path / "newer.nc")
    with pytest.raises(ValueError, match="newer.nc is a train file of schema_version 2"):
        read_run(tmp_path / "newer.nc")


def test_a_train_file_from_before_versioning_reads_as_version_1(tmp_path):
    record = RunRecord(epochs=2)
    record.per_epoch["epoch_time_s"] = np.array([3.0, 1.5])
    ds = record.to_dataset()
    del ds.attrs["schema_version"]
    write_run(ds, tmp_path / "old.nc")
    assert read_run(tmp_path / "old.nc").epoch_time_s.values.tolist() == [3.0, 1.5]


def test_time_to_target_sums_epochs_through_the_first_that_reaches_it():
    times = np.array([5.0, 1.0, 1.0, 1.0])
    assert training.time_to_target(times, np.array([0.5, 0.92, 0.89, 0.95]), 0.9) == 6.0
    assert math.isnan(training.time_to_target(times, np.array([0.5, 0.6, 0.7, 0.8]), 0.9))


def test_first_epoch_overhead_is_measured_against_the_median_of_the_rest():
    overhead, steady = training.first_epoch_overhead(np.array([10.0, 2.0, 3.0, 100.0]))
    assert (overhead, steady) == (7.0, 3.0)
    assert all(math.isnan(value) for value in training.first_epoch_overhead(np.array([4.0])))


def test_a_forced_failure_writes_a_failed_file(tmp_path):
    settings = tiny_settings(inject_failure=["jax/jit/tiny"])
    result = training.run("jax", "jit", "tiny", "digits", settings)
    write_run(result, tmp_path / "failed.nc")
    ds = read_run(tmp_path / "failed.nc")
    assert ds.attrs["status"] == "failed"
    assert ds.attrs["error_type"] == "RuntimeError"
    assert "jax/jit/tiny" in ds.attrs["error_message"]
    assert "Traceback" in ds.attrs["traceback_tail"]
    assert set(EPOCH_UNITS) | set(SCALAR_UNITS) <= set(ds.data_vars)
    assert np.isnan(ds.epoch_time_s).all() and np.isnan(ds.val_accuracy).all()


def test_a_missing_imagefolder_is_a_failed_run_naming_the_path(tmp_path):
    missing = tmp_path / "no-such-tree"
    settings = tiny_settings(
        imagefolder={"root": str(missing), "image_size": 16, "max_images_per_class": 2}
    )
    ds = training.run("torch", "eager", "tiny", "imagefolder", settings)
    assert ds.attrs["status"] == "failed"
    assert ds.attrs["error_type"] == "FileNotFoundError"
    assert str(missing) in ds.attrs["error_message"]


@pytest.mark.torch
def test_a_run_trains_on_an_imagefolder_tree(tmp_path):
    from PIL import Image

    rng = np.random.default_rng(0)
    for name in ("cats", "dogs"):
        (tmp_path / name).mkdir()
        for i in range(5):
            pixels = rng.integers(0, 256, (20, 24, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(tmp_path / name / f"{i}.png")
    settings = tiny_settings(
        batch_size=2,
        max_train_samples=None,
        max_val_samples=None,
        imagefolder={"root": str(tmp_path), "image_size": 16},
    )
    ds = training.run("torch", "eager", "tiny", "imagefolder", settings)
    assert ds.attrs["status"] == "ok", ds.attrs.get("error_message")
    assert json.loads(ds.attrs["image_shape"]) == [3, 16, 16]
    assert ds.attrs["train_samples"] + ds.attrs["val_samples"] == 10
    assert json.loads(ds.attrs["spec"])["classes"] == 2


def test_an_unknown_model_is_a_failed_run_naming_it():
    ds = training.run("torch", "eager", "resnet9000", "digits", tiny_settings())
    assert ds.attrs["status"] == "failed" and "resnet9000" in ds.attrs["error_message"]


@pytest.mark.parametrize(
    ("key", "value"), [("batch_size", 1), ("momentum", 1.0), ("lr_gamma", 0.0), ("epochs", 0)]
)
def test_parse_settings_names_a_bad_value(key, value):
    settings = tiny_settings() | {key: value}
    with pytest.raises(ValueError, match=f"train.{key}.*{value}"):
        parse_settings(settings)


def test_parse_settings_names_unknown_and_missing_keys():
    with pytest.raises(ValueError, match="lr_warmup"):
        parse_settings(tiny_settings() | {"lr_warmup": 5})
    settings = tiny_settings()
    del settings["epochs"]
    with pytest.raises(ValueError, match="epochs"):
        parse_settings(settings)


def test_the_schema_fills_defaults_and_rejects_bad_values():
    from snakemake.exceptions import WorkflowError

    settings = default_settings()
    assert settings["modes"]["jax"] == ["jit"]
    assert settings["architectures"]["resnet50"]["stages"] == [3, 4, 6, 3]
    assert parse_settings(settings).optimizer.schedule.milestones == (4, 6)
    with pytest.raises(WorkflowError, match="minimum of 2"):
        default_settings(batch_size=1)
    with pytest.raises(WorkflowError, match="lr_warmup"):
        default_settings(lr_warmup=5)


@pytest.mark.torch
def test_the_script_writes_the_file_and_log_under_the_timing_lock(tmp_path):
    params = {
        "framework": "torch",
        "mode": "eager",
        "model": "tiny",
        "dataset": "digits",
        "settings": tiny_settings(epochs=1),
        "system": {"device": "cpu", "threads": 1},
        "seed": 0,
    }
    config = {"timing_lock": str(tmp_path / "timing.lock")}
    output, log = tmp_path / "out" / "tiny-digits.nc", tmp_path / "train.log"
    runner = (
        "import json, runpy, sys, types\n"
        "params = types.SimpleNamespace(**json.loads(sys.argv[1]))\n"
        "snakemake = types.SimpleNamespace(\n"
        "    params=params, output=[sys.argv[2]], log=[sys.argv[3]],\n"
        "    config=json.loads(sys.argv[5]), wildcards=types.SimpleNamespace(system='box'),\n"
        ")\n"
        "runpy.run_path(sys.argv[4], init_globals={'snakemake': snakemake}, run_name='__main__')\n"
    )
    subprocess.run(
        [sys.executable, "-c", runner, json.dumps(params), str(output), str(log), str(SCRIPT)]
        + [json.dumps(config)],
        check=True,
        timeout=300,
    )
    ds = read_run(output)
    assert ds.attrs["status"] == "ok", ds.attrs.get("error_message")
    assert json.loads(ds.attrs["threads"])["threads"] == 1
    assert ds.attrs["lock_wait_s"] >= 0 and (tmp_path / "timing.lock").exists()
    assert ds.attrs["system"] == "box" and ds.attrs["cpu_model"]  # the node it ran on
    assert ds.attrs["precision"] == "float32"
    assert "torch/eager/tiny/digits: status=ok" in log.read_text()


@pytest.fixture(scope="module")
def runs_in_every_mode():
    settings = tiny_settings()
    return {
        (framework, mode): training.run(framework, mode, "tiny", "digits", settings)
        for framework, modes in MODES.items()
        for mode in modes
        if not is_export_mode(framework, mode)
    }


@pytest.mark.parametrize(("framework", "mode"), [("torch", "aoti"), ("jax", "export")])
def test_an_export_mode_cannot_train_and_says_so(framework, mode):
    run = training.run(framework, mode, "tiny", "digits", tiny_settings())
    assert run.attrs["status"] == "failed"
    assert f"{framework}/{mode} runs an exported inference artifact" in run.attrs["error_message"]


@pytest.mark.e2e  # every framework in one process, on the same data
def test_every_mode_trains_on_the_same_data_and_reports_real_compilation(runs_in_every_mode):
    failed = {
        key: ds.attrs["error_message"]
        for key, ds in runs_in_every_mode.items()
        if ds.attrs["status"] != "ok"
    }
    assert not failed
    reference = runs_in_every_mode[("torch", "eager")]
    for (framework, mode), ds in runs_in_every_mode.items():
        key = f"{framework}/{mode}"
        assert ds.attrs["dataset_fingerprint"] == reference.attrs["dataset_fingerprint"], key
        assert ds.attrs["batch_order_hash"] == reference.attrs["batch_order_hash"], key
        # Same data, weights and steps: the epoch losses agree far below the training signal.
        np.testing.assert_allclose(ds.train_loss, reference.train_loss, rtol=1e-3, err_msg=key)
        compiled = mode not in ("eager",)
        assert ds.compiled.item() == compiled, key
        if compiled:
            assert ds.graph_breaks.item() == 0, key
            # One graph for the train step and one for the eval forward: no recompilation.
            assert ds.graph_count.item() == 2, f"{key}: {ds.attrs['compile_details']}"
