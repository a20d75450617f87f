"""Every file format has one reader, and that reader refuses a file of another schema version."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pandas as pd
import pytest
import xarray as xr

from fwbench.io import bench_file, cell_file, hardware_file, stats_file
from fwbench.io.atomic import write_netcdf
from fwbench.io.bench_file import read_bench, write_bench
from fwbench.io.cell_file import Cell, read_cell, read_cell_record, write_cell
from fwbench.io.dims import CellKey
from fwbench.io.stats_file import read_stats, read_stats_table, write_stats, write_stats_table


def _cell(tmp_path, name="cell.nc"):
    path = tmp_path / name
    write_cell(Cell("torch", "eager", "mlp", 8, repeats=3, latency_s=np.ones(3) * 1e-3), path)
    return path


def _set_version(path, version):
    with h5py.File(path, "r+") as handle:
        if version is None:
            del handle.attrs["schema_version"]
        else:
            handle.attrs["schema_version"] = version


def test_a_cell_carries_the_current_schema_version_and_both_readers_agree(tmp_path):
    path = _cell(tmp_path)
    assert read_cell(path).attrs["schema_version"] == cell_file.SCHEMA_VERSION
    record = read_cell_record(path)
    assert record.attrs["schema_version"] == cell_file.SCHEMA_VERSION
    assert record.key == CellKey("torch", "eager", "mlp", 8)


@pytest.mark.parametrize("reader", [read_cell, read_cell_record])
def test_a_cell_of_another_schema_version_is_refused_naming_file_and_versions(tmp_path, reader):
    path = _cell(tmp_path)
    _set_version(path, 99)
    with pytest.raises(
        ValueError, match=rf"{path.name}.*schema_version 99.*reads schema_version 1 or 2"
    ):
        reader(path)


@pytest.mark.parametrize("reader", [read_cell, read_cell_record])
def test_a_cell_written_before_versioning_is_read_as_version_1(tmp_path, reader):
    path = _cell(tmp_path)
    _set_version(path, None)
    assert reader(path) is not None


def test_the_hardware_file_is_written_with_its_version_and_read_back(tmp_path):
    path = tmp_path / "host-cpu.json"
    hardware_file.write_hardware({"host": "h", "compute": {}}, path)
    document = hardware_file.read_hardware(path)
    assert document["schema_version"] == hardware_file.SCHEMA_VERSION
    assert document["host"] == "h"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ({"schema_version": 5, "compute": {}}, "schema_version 5"),
        ({"compute": {}}, "schema_version None"),
        ([1, 2], "must hold a JSON object"),
    ],
)
def test_a_hardware_file_of_another_version_or_shape_is_refused(tmp_path, content, message):
    path = tmp_path / "hw.json"
    path.write_text(json.dumps(content))
    with pytest.raises(ValueError, match=message):
        hardware_file.read_hardware(path)


def test_a_hardware_file_that_is_not_json_is_refused_naming_it(tmp_path):
    path = tmp_path / "hw.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match=r"hw\.json is not valid JSON"):
        hardware_file.read_hardware(path)


def _stacked(title: str) -> xr.Dataset:
    """A two-system dataset laid out as bench.nc and stats.nc are (system, system_attrs)."""
    return xr.Dataset(
        {
            "median_s": (
                ("system", "precision", "batch"),
                np.array([[[1e-3, 2e-3]], [[3e-3, 4e-3]]]),
            ),
            "system_attrs": ("system", np.array(['{"host": "n1"}', '{"host": "n2"}'], object)),
        },
        coords={"system": ["a", "b"], "precision": ["float32"], "batch": [1, 8]},
        attrs={"title": title},
    )


def test_a_bench_file_before_precision_reads_every_cell_at_float32(tmp_path):
    """bench.nc of schema 2 has no precision dimension: its per-cell variables get one
    (before batch, as the aggregate writes it), the per-system ones do not."""
    old = _stacked("t").sel(precision="float32", drop=True)
    path = tmp_path / "bench.nc"
    write_netcdf(old.assign_attrs(schema_version=2), path)
    back = read_bench(path)
    assert back["median_s"].dims == ("system", "precision", "batch")
    assert back["precision"].values.tolist() == ["float32"]
    assert back["system_attrs"].dims == ("system",)


@pytest.mark.parametrize(
    ("module", "write", "read"),
    [(bench_file, write_bench, read_bench), (stats_file, write_stats, read_stats)],
)
def test_bench_and_stats_files_carry_their_version_on_disk_only(tmp_path, module, write, read):
    ds = _stacked("t")
    path = tmp_path / "out.nc"
    write(ds, path)
    with h5py.File(path, "r") as handle:
        assert handle.attrs["schema_version"] == module.SCHEMA_VERSION
    assert "schema_version" not in ds.attrs  # the caller's dataset is not changed
    back = read(path)
    # The version is the file's: data read from it (stats from bench.nc) does not inherit it.
    assert "schema_version" not in back.attrs and back.attrs["title"] == "t"
    xr.testing.assert_identical(back.drop_attrs(), ds.drop_attrs())


@pytest.mark.parametrize(
    ("write", "read", "rule"),
    [(write_bench, read_bench, "aggregate_bench"), (write_stats, read_stats, "stats")],
)
def test_bench_and_stats_files_of_another_version_are_refused_naming_file_and_rule(
    tmp_path, write, read, rule
):
    path = tmp_path / "out.nc"
    write(_stacked("t"), path)
    _set_version(path, 99)
    with pytest.raises(ValueError, match=rf"out\.nc .*schema_version 99.*--forcerun {rule}\)"):
        read(path)


def test_a_stats_file_without_a_version_is_refused_naming_it_and_the_stats_rule(tmp_path):
    path = tmp_path / "stats.nc"
    _stacked("t").to_netcdf(path, engine="h5netcdf")  # as stats.nc was written before versions
    with pytest.raises(ValueError, match=r"stats\.nc .*schema_version None.*the stats rule"):
        read_stats(path)


def test_a_bench_file_written_before_versioning_is_read_as_version_1(tmp_path):
    path = tmp_path / "bench.nc"
    _stacked("old").to_netcdf(path, engine="h5netcdf")
    assert read_bench(path).attrs == {"title": "old"}


def test_the_stats_table_is_written_and_read_back_without_an_index(tmp_path):
    path = tmp_path / "stats.csv"
    table = pd.DataFrame({"system": ["a", "b"], "median_s": [1e-3, 2e-3]})
    write_stats_table(table, path)
    assert path.read_text().splitlines()[0] == "system,median_s"
    pd.testing.assert_frame_equal(read_stats_table(path), table)
