"""Every file format has one reader, and that reader refuses a file of another schema version."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from fwbench.io import cell_file, hardware_file
from fwbench.io.cell_file import Cell, read_cell, read_cell_record, write_cell


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
    assert record.key == ("torch", "eager", "mlp", 8)


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
        ({"schema_version": 4, "compute": {}}, "schema_version 4"),
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
