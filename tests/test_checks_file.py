"""The equivalence check file (fwbench.io.checks_file): its columns, its schema version, the
files written before it had one, and the errors that name a bad file."""

from __future__ import annotations

import csv
import math

import pytest

from fwbench.io import checks_file
from fwbench.io.checks_file import merge_equivalence, read_equivalence, write_equivalence


def _row(**values):
    row = {
        "arch": "mlp",
        "framework": "jax",
        "mode": "jit",
        "precision": "bfloat16",
        "max_abs_err": 0.0025,
        "max_rel_err": 0.00125,
        "bound": 0.0078125,
        "basis": "λ·u·√R with R = 4",
        "saturated": math.nan,
        "saturated_of": math.nan,
        "pass": True,
        "error": "",
        "seconds": 0.5,
    }
    return row | values


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines))
    return path


# What the checks jobs wrote before the file had a version: the bound was `tolerance`, and the
# oldest files have fewer columns (no precision, basis, saturated, seconds).
SCHEMA_1 = [
    "arch,framework,mode,precision,max_abs_err,max_rel_err,tolerance,basis,pass,error,seconds",
    "mlp,torch,eager,float32,1e-07,2e-07,0.0001,equivalence.tolerance (config),True,,0.25",
    "mlp,torch,eager,bfloat16,,,0.0078125,λ·u·√R,False,RuntimeError: no kernel,0.5",
]
OLDEST = [
    "arch,framework,mode,max_abs_err,max_rel_err,tolerance,pass,error",
    "cnn,jax,jit,,,1e-4,False,nan",
]


def test_a_written_file_reads_back_with_every_column_and_its_values(tmp_path):
    failed = _row(mode="eager", max_abs_err=math.nan, max_rel_err=math.nan, error="Boom: no")
    write_equivalence([_row(), failed | {"pass": False}], tmp_path / "eq.csv")
    rows = read_equivalence(tmp_path / "eq.csv")
    assert list(rows.columns) == list(checks_file.COLUMNS)
    assert rows["bound"].tolist() == [0.0078125, 0.0078125]
    assert rows["max_rel_err"][0] == 0.00125 and math.isnan(rows["max_rel_err"][1])
    assert rows["pass"].tolist() == [True, False] and rows["pass"].dtype == bool
    assert rows["basis"][0] == "λ·u·√R with R = 4" and rows["error"][1] == "Boom: no"
    assert math.isnan(rows["error"][0])  # an empty field is NaN, as every other empty one
    assert rows["seconds"].tolist() == [0.5, 0.5]


def test_every_row_carries_the_schema_version_in_a_last_column(tmp_path):
    write_equivalence([_row(), _row(arch="cnn")], tmp_path / "eq.csv")
    with open(tmp_path / "eq.csv", newline="") as handle:
        written = list(csv.DictReader(handle))
    assert list(written[0]) == [*checks_file.COLUMNS, "schema_version"]
    assert (
        [r["schema_version"] for r in written]
        == ["2", "2"]
        == [str(checks_file.SCHEMA_VERSION)] * 2
    )
    assert written[0]["saturated"] == ""  # NaN is an empty field, never 'nan'


def test_the_bound_is_no_longer_called_tolerance():
    assert "bound" in checks_file.COLUMNS and "tolerance" not in checks_file.COLUMNS


def test_a_row_with_other_columns_is_refused_and_no_file_is_left(tmp_path):
    row = _row()
    row["tolerance"] = row.pop("bound")
    with pytest.raises(ValueError, match=r"eq\.csv.*tolerance"):
        write_equivalence([row], tmp_path / "eq.csv")
    with pytest.raises(ValueError, match="system"):  # a job's file has no system
        write_equivalence([_row(system="local")], tmp_path / "eq.csv")
    assert list(tmp_path.iterdir()) == []


def test_a_file_written_before_the_version_reads_as_schema_1_with_its_tolerance_as_bound(
    tmp_path,
):
    rows = read_equivalence(_write(tmp_path / "old.csv", SCHEMA_1))
    assert list(rows.columns) == list(checks_file.COLUMNS)
    assert rows["bound"].tolist() == [1e-4, 0.0078125]
    assert rows["pass"].tolist() == [True, False]
    assert math.isnan(rows["saturated"][0]) and math.isnan(rows["saturated_of"][1])


def test_the_oldest_files_read_with_float32_and_the_columns_they_predate_empty(tmp_path):
    rows = read_equivalence(_write(tmp_path / "oldest.csv", OLDEST))
    assert rows["precision"].tolist() == ["float32"] and rows["bound"].tolist() == [1e-4]
    assert math.isnan(rows["seconds"][0]) and math.isnan(rows["basis"][0])
    assert math.isnan(rows["error"][0])  # earlier versions wrote 'nan' for an empty error
    assert rows["pass"].tolist() == [False]


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (
            [",".join([*checks_file.COLUMNS, "schema_version"]), ",".join(["x"] * 13 + ["3"])],
            "schema_version 3",
        ),
        (["arch,surprise", "mlp,1"], r"surprise"),
        (["arch,bound,schema_version", "mlp,1e-4,2"], r"lacks \['framework'"),
        (["arch,schema_version", "mlp,1", "mlp,2"], "schema_version 1, 2"),
        ([], "not an equivalence check file"),
    ],
)
def test_a_bad_file_is_refused_naming_the_file_and_the_rule_to_rerun(tmp_path, lines, message):
    path = _write(tmp_path / "bad-equivalence.csv", lines)
    with pytest.raises(ValueError, match=message) as refused:
        read_equivalence(path)
    assert str(path) in str(refused.value) and "the checks rule" in str(refused.value)


def test_a_header_alone_is_a_file_of_no_rows(tmp_path):
    write_equivalence([], tmp_path / "eq.csv")
    rows = read_equivalence(tmp_path / "eq.csv")
    assert rows.empty and list(rows.columns) == list(checks_file.COLUMNS)


def test_merging_puts_each_jobs_system_first_and_reads_a_schema_1_file_in_this_schema(
    tmp_path,
):
    new = tmp_path / "torch.csv"
    write_equivalence([_row(framework="torch", max_rel_err=0.001234567890123)], new)
    old = _write(tmp_path / "jax.csv", SCHEMA_1)
    out = tmp_path / "merged" / "equivalence.csv"
    merge_equivalence([new, old], out, ["gpu_nodes", "cpu_nodes"])
    rows = read_equivalence(out)
    assert list(rows.columns) == ["system", *checks_file.COLUMNS]
    assert rows["system"].tolist() == ["gpu_nodes", "cpu_nodes", "cpu_nodes"]
    assert rows["bound"].tolist() == [0.0078125, 1e-4, 0.0078125]
    assert rows["max_rel_err"][0] == 0.001234567890123  # fields are copied as written
    assert math.isnan(rows["saturated"][1])  # a column the old file predates: empty
    assert sorted(p.name for p in out.parent.iterdir()) == ["equivalence.csv"]


def test_merging_refuses_a_merged_file_or_a_system_count_that_differs(tmp_path):
    job = tmp_path / "job.csv"
    write_equivalence([_row()], job)
    with pytest.raises(ValueError, match="2 systems for 1"):
        merge_equivalence([job], tmp_path / "out.csv", ["a", "b"])
    merge_equivalence([job], tmp_path / "merged.csv", ["a"])
    with pytest.raises(ValueError, match=r"merged\.csv is a merged"):
        merge_equivalence([tmp_path / "merged.csv"], tmp_path / "out.csv", ["a"])
    assert not (tmp_path / "out.csv").exists()
