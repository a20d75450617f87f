"""The aggregate: every given cell at its coordinates, nothing mixed, nothing lost."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from fwbench.analysis.aggregate import aggregate_cells, write_aggregate
from fwbench.io import cell_file as dataset
from fwbench.io.bench_file import read_bench
from fwbench.io.cell_file import Cell, read_cell_record, write_cell
from fwbench.io.dims import STATUS_FAILED, CellKey
from fwbench.io.per_system import one_system, systems_of

REPO = Path(__file__).resolve().parents[1]
PROVENANCE = {
    "host": "testhost",
    "device": "cpu",
    "threads": {"threads": 1, "cores": [0]},
    "config_hash": "c0ffee",
    "git_commit": "abc123",
}


def make_cell(
    framework: str,
    mode: str,
    arch: str = "mlp",
    batch: int = 1,
    latency_s: list[float] | None = None,
    version: str = "1.0",
    **attrs: object,
) -> Cell:
    cell = Cell(framework, mode, arch, batch, repeats=len(latency_s or [0, 0, 0]))
    cell.latency_s = np.array(latency_s if latency_s is not None else [1e-3, 2e-3, 3e-3])
    cell.scalars = {"first_call_s": 0.5, "flops": 2e6, "bytes": 1e6, "compiled": 1.0}
    cell.attrs = PROVENANCE | {"framework_version": version, "versions": {framework: version}}
    cell.attrs |= attrs
    return cell


def write(tmp_path: Path, cell: Cell, name: str | None = None) -> Path:
    path = tmp_path / (name or f"{cell.framework}-{cell.mode}-{cell.arch}-b{cell.batch}.nc")
    write_cell(cell, path)
    return path


def test_fast_reader_agrees_with_the_cell_format(tmp_path):
    cell = make_cell("jax", "jit", latency_s=[1e-3, 5e-4], contended=1, attempts=2)
    cell.scalars |= {"busy_cpu_other": 0.3, "graph_count": 2.0}
    path = write(tmp_path, cell)
    record = read_cell_record(path)
    reference = dataset.read_cell(path)
    np.testing.assert_array_equal(record.latency_s, reference["latency_s"].values)
    for name in dataset.SCALARS:
        np.testing.assert_equal(record.scalars[name], reference[name].item())
    for key, value in reference.attrs.items():
        assert record.attrs[key] == value, key
    assert record.key == CellKey("jax", "jit", "mlp", 1)


def test_each_cell_lands_at_its_coordinates(tmp_path):
    paths = [
        write(tmp_path, make_cell("torch", "eager", batch=1, latency_s=[1.0, 2.0])),
        write(tmp_path, make_cell("torch", "eager", batch=8, latency_s=[3.0, 4.0])),
        write(tmp_path, make_cell("jax", "jit", arch="lstm", batch=8, latency_s=[5.0, 6.0])),
    ]
    ds = aggregate_cells(paths)
    dims = ("system", "framework", "mode", "arch", "precision", "batch", "process", "repeat")
    assert ds["latency_s"].dims == dims
    assert ds["process"].values.tolist() == [0]  # a one-process sweep
    assert ds["system"].values.tolist() == ["local"]  # cells that name no system
    assert ds["precision"].values.tolist() == ["float32"]  # cells that name none
    ds = ds.sel(system="local", process=0, precision="float32")
    assert ds["framework"].values.tolist() == ["torch", "jax"]
    assert ds["mode"].values.tolist() == ["eager", "jit"]
    assert ds["arch"].values.tolist() == ["mlp", "lstm"]
    assert ds["batch"].values.tolist() == [1, 8]
    jit = ds.sel(framework="jax", mode="jit", arch="lstm", batch=8)
    assert jit["latency_s"].values.tolist() == [5.0, 6.0]
    eager_b8 = ds.sel(framework="torch", mode="eager", arch="mlp", batch=8)
    assert eager_b8["latency_s"].values.tolist() == [3.0, 4.0]
    assert eager_b8["status"].item() == "ok"


def test_modes_a_framework_does_not_have_are_absent_and_nan(tmp_path):
    paths = [
        write(tmp_path, make_cell("torch", "compiled")),
        write(tmp_path, make_cell("jax", "jit")),
    ]
    ds = aggregate_cells(paths).sel(system="local", process=0)
    torch_jit = ds.sel(framework="torch", mode="jit", arch="mlp", batch=1)
    assert torch_jit["status"].item() == "absent"
    assert np.isnan(torch_jit["latency_s"].values).all()
    assert np.isnan(torch_jit["first_call_s"].item())
    assert ds["status"].sel(framework="jax", mode="jit").item() == "ok"


def test_a_failed_cell_stays_failed_with_its_message(tmp_path):
    failed = make_cell("tensorflow", "xla", error_type="InternalError")
    failed.latency_s = None
    failed.attrs |= {"status": STATUS_FAILED, "error_message": "XLA could not compile While"}
    paths = [write(tmp_path, failed), write(tmp_path, make_cell("tensorflow", "eager"))]
    cell = aggregate_cells(paths).sel(
        framework="tensorflow", mode="xla", arch="mlp", batch=1, process=0
    )
    assert cell["status"].item() == "failed"
    assert cell["error"].item() == "XLA could not compile While"
    assert cell["error_type"].item() == "InternalError"
    assert np.isnan(cell["latency_s"].values).all()


def test_each_precision_of_a_cell_lands_beside_the_other(tmp_path):
    bf16 = make_cell("torch", "eager", latency_s=[1.0, 2.0])
    bf16.precision = "bfloat16"
    paths = [
        write(tmp_path, make_cell("torch", "eager", latency_s=[3.0, 4.0])),
        write(tmp_path, bf16, "bf16.nc"),
    ]
    ds = aggregate_cells(paths).sel(system="local", process=0)
    assert ds["precision"].values.tolist() == ["float32", "bfloat16"]
    cell = ds["latency_s"].sel(framework="torch", mode="eager", arch="mlp", batch=1)
    assert cell.sel(precision="bfloat16").values.tolist() == [1.0, 2.0]
    assert cell.sel(precision="float32").values.tolist() == [3.0, 4.0]
    assert read_cell_record(paths[1]).key == CellKey("torch", "eager", "mlp", 1, "bfloat16")


def test_shorter_cells_are_padded_with_nan(tmp_path):
    paths = [
        write(tmp_path, make_cell("torch", "eager", latency_s=[1.0, 2.0, 3.0, 4.0])),
        write(tmp_path, make_cell("torch", "compiled", latency_s=[1.0, 2.0])),
    ]
    ds = aggregate_cells(paths).sel(system="local", process=0, precision="float32")
    assert ds.sizes["repeat"] == 4
    short = ds["latency_s"].sel(framework="torch", mode="compiled", arch="mlp", batch=1)
    assert np.isnan(short.values[2:]).all() and short.values[:2].tolist() == [1.0, 2.0]


def test_two_cells_for_one_position_raise_naming_both_paths(tmp_path):
    first = write(tmp_path, make_cell("torch", "eager"), "first.nc")
    second = write(tmp_path, make_cell("torch", "eager"), "second.nc")
    with pytest.raises(ValueError, match="torch/eager/mlp/b1") as error:
        aggregate_cells([first, second])
    assert str(first) in str(error.value) and str(second) in str(error.value)


def test_a_cells_processes_land_along_the_process_dimension(tmp_path):
    paths = [
        write(tmp_path, make_cell("torch", "eager", latency_s=[1.0, 2.0], process=0), "p0.nc"),
        write(tmp_path, make_cell("torch", "eager", latency_s=[3.0, 4.0], process=2), "p2.nc"),
        write(tmp_path, make_cell("jax", "jit", latency_s=[5.0, 6.0], process=2), "j2.nc"),
    ]
    ds = aggregate_cells(paths).sel(system="local", precision="float32")
    assert ds["process"].values.tolist() == [0, 2]
    torch_eager = ds.sel(framework="torch", mode="eager", arch="mlp", batch=1)
    assert torch_eager["latency_s"].values.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    jax_jit = ds.sel(framework="jax", mode="jit", arch="mlp", batch=1)
    assert jax_jit["status"].values.tolist() == ["absent", "ok"]  # process 0 never ran
    assert np.isnan(jax_jit["first_call_s"].sel(process=0).item())


def test_two_cells_for_one_process_raise_and_name_the_process(tmp_path):
    first = write(tmp_path, make_cell("torch", "eager", process=3), "first.nc")
    second = write(tmp_path, make_cell("torch", "eager", process=3), "second.nc")
    with pytest.raises(ValueError, match="torch/eager/mlp/b1 process 3"):
        aggregate_cells([first, second])


def test_two_versions_of_one_framework_raise_naming_both_paths(tmp_path):
    old = write(tmp_path, make_cell("torch", "eager", version="2.12.0"))
    new = write(tmp_path, make_cell("torch", "compiled", version="2.13.0"))
    with pytest.raises(ValueError, match="2.12.0") as error:
        aggregate_cells([old, new])
    assert str(old) in str(error.value) and str(new) in str(error.value)


def test_a_runtime_only_one_mode_uses_joins_the_frameworks_versions(tmp_path):
    eager = make_cell("torch", "eager", version="2.13.0")
    onnxrt = make_cell("torch", "onnxrt", version="2.13.0")
    onnxrt.attrs["versions"] = {"torch": "2.13.0", "onnxruntime": "1.31.1"}
    ds = aggregate_cells([write(tmp_path, eager), write(tmp_path, onnxrt)])
    versions = json.loads(ds["versions"].sel(system="local", framework="torch").item())
    assert versions == {"onnxruntime": "1.31.1", "torch": "2.13.0"}


def test_two_versions_of_one_runtime_raise_naming_the_runtime(tmp_path):
    cells = [make_cell("torch", "onnxrt", batch=b, version="2.13.0") for b in (1, 8)]
    for cell, runtime in zip(cells, ("1.31.1", "1.30.0"), strict=True):
        cell.attrs["versions"] = {"torch": "2.13.0", "onnxruntime": runtime}
    with pytest.raises(ValueError, match="disagree on onnxruntime: '1.31.1'.*'1.30.0'"):
        aggregate_cells([write(tmp_path, cell) for cell in cells])


def test_cells_of_two_devices_on_one_system_raise(tmp_path):
    here = write(tmp_path, make_cell("torch", "eager"))
    there = write(tmp_path, make_cell("jax", "jit", device="cuda"))
    with pytest.raises(ValueError, match="local cells disagree on device.*cuda"):
        aggregate_cells([here, there])


def test_systems_sit_side_by_side_and_each_cell_keeps_its_node(tmp_path):
    paths = [
        write(tmp_path, make_cell("torch", "eager", system="a", host="n1", cpu_model="X"), "a1.nc"),
        write(tmp_path, make_cell("torch", "eager", host="n2", cpu_model="Y"), "b1.nc"),
        write(tmp_path, make_cell("torch", "eager", system="a", host="n3", batch=8), "a8.nc"),
    ]
    ds = aggregate_cells(paths, systems=["a", "b", "a"]).sel(process=0, precision="float32")
    assert ds["system"].values.tolist() == ["a", "b"]
    cell = ds.sel(framework="torch", mode="eager", arch="mlp")
    assert cell["host"].values.tolist() == [["n1", "n3"], ["n2", ""]]  # nodes of one partition
    assert cell["cpu_model"].sel(system="b", batch=1).item() == "Y"
    assert cell["status"].sel(system="b", batch=8).item() == "absent"
    assert ds["framework_version"].dims == ("system", "framework")


def test_a_cell_listed_under_another_system_than_its_own_raises(tmp_path):
    path = write(tmp_path, make_cell("torch", "eager", system="gpu_nodes"))
    with pytest.raises(ValueError, match="records system 'gpu_nodes', listed as 'cpu_nodes'"):
        aggregate_cells([path], systems=["cpu_nodes"])


def test_versions_and_provenance_are_recorded(tmp_path):
    paths = [
        write(tmp_path, make_cell("torch", "eager", version="2.13.0")),
        write(tmp_path, make_cell("jax", "jit", version="0.10.2", git_commit="def456")),
    ]
    ds = aggregate_cells(paths).sel(system="local", process=0)
    assert ds["framework_version"].sel(framework="jax").item() == "0.10.2"
    assert ds["versions"].sel(framework="torch").item() == '{"torch": "2.13.0"}'
    assert ds.attrs["host"] == "testhost" and ds.attrs["device"] == "cpu"
    assert ds.attrs["config_hash"] == "c0ffee"
    assert ds.attrs["git_commit"] == '["abc123", "def456"]'  # differing values are all listed
    assert ds["git_commit"].sel(framework="jax", mode="jit").item() == "def456"


def test_the_written_file_opens_with_units_on_every_number(tmp_path):
    paths = [write(tmp_path, make_cell("torch", "eager")), write(tmp_path, make_cell("jax", "jit"))]
    output = tmp_path / "aggregate" / "bench.nc"
    write_aggregate(paths, output)
    with xr.open_dataset(output) as ds:
        numeric = [name for name, var in ds.data_vars.items() if var.dtype.kind == "f"]
        assert {"latency_s", "first_call_s", "flops", "contended"} <= set(numeric)
        assert all("units" in ds[name].attrs for name in numeric)
        assert ds["latency_s"].attrs["units"] == "s"
        assert ds["status"].sel(framework="torch", mode="jit", process=0).item() == "absent"
        assert ds.attrs["cells"] == 2


def test_a_file_that_is_not_a_cell_is_named(tmp_path):
    other = tmp_path / "other.nc"
    xr.Dataset({"x": ("t", [1.0])}).to_netcdf(other, engine="h5netcdf")
    with pytest.raises(ValueError, match="other.nc is not a cell file"):
        aggregate_cells([other])
    with pytest.raises(ValueError, match="no cell files"):
        aggregate_cells([])


def test_the_rule_script_aggregates_the_given_cells(tmp_path):
    paths = [str(write(tmp_path, make_cell("torch", "eager")))]
    output, log = tmp_path / "bench.nc", tmp_path / "aggregate.log"
    runner = (  # a process of its own, as Snakemake runs a script: the job's log takes fd 1 and 2
        "import json, runpy, sys, types\n"
        "snakemake = types.SimpleNamespace(\n"
        "    input=types.SimpleNamespace(cells=json.loads(sys.argv[1])),\n"
        "    params=types.SimpleNamespace(systems=['local'] * len(json.loads(sys.argv[1]))),\n"
        "    output=[sys.argv[2]], log=[sys.argv[3]],\n"
        ")\n"
        "runpy.run_path(sys.argv[4], init_globals={'snakemake': snakemake})\n"
    )
    script = REPO / "workflow/scripts/aggregate.py"
    subprocess.run(
        [sys.executable, "-c", runner, json.dumps(paths), str(output), str(log), str(script)],
        check=True,
        timeout=120,
    )
    with xr.open_dataset(output) as ds:
        assert ds.attrs["cells"] == 1
    assert "aggregated 1 cells" in log.read_text()


def test_bench_nc_read_back_is_the_aggregate_as_built(tmp_path):
    paths = [write(tmp_path, make_cell("torch", "eager")), write(tmp_path, make_cell("jax", "jit"))]
    built = write_aggregate(paths, tmp_path / "bench.nc", systems=["a", "a"])
    xr.testing.assert_identical(read_bench(tmp_path / "bench.nc"), built)


def test_one_system_of_the_aggregate_carries_that_systems_own_provenance(tmp_path):
    paths = [
        write(tmp_path, make_cell("torch", "eager", system="a", host="n1"), "a.nc"),
        write(
            tmp_path, make_cell("torch", "eager", system="b", host="n2", latency_s=[7.0]), "b.nc"
        ),
    ]
    ds = aggregate_cells(paths)
    assert systems_of(ds) == ["a", "b"] and ds.attrs["host"] == '["n1", "n2"]'
    b = one_system(ds, "b")
    assert "system" not in b.dims and "system_attrs" not in b
    assert b.attrs["host"] == "n2" and b.attrs["cells"] == 2  # its own over the file's
    assert b["latency_s"].sel(framework="torch", mode="eager", arch="mlp", batch=1).item(0) == 7.0
    with pytest.raises(ValueError, match="2 systems: name the one to take"):
        one_system(ds)
    with pytest.raises(ValueError, match="no system 'c' here"):
        one_system(ds, "c")
    assert systems_of(b) == [] and one_system(b) is b
