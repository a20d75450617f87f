"""The per-framework cross-checks: equivalence rows, FLOP-counter rows and their CSVs."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from fwbench import frameworks
from fwbench.frameworks import MODES
from fwbench.io import checks_file
from fwbench.io.checks_file import read_equivalence, write_equivalence
from fwbench.measure import checks
from fwbench.model import reference
from fwbench.model.cost import cost
from fwbench.model.specs import build_spec
from fwbench.model.weights import make_input, make_weights

from fake_adapter import FakeRunner as ReferenceRunner

TINY_DIMS = {
    "mlp": {"input": 6, "hidden": [5], "classes": 3},
    "cnn": {"channels": 1, "height": 4, "width": 4, "conv_channels": [2], "dense": [3]},
    "rnn": {"input": 3, "hidden": 4, "layers": 1, "seq_len": 3, "classes": 2},
    "lstm": {"input": 3, "hidden": 4, "layers": 2, "seq_len": 3, "classes": 2},
    "transformer": {"d_model": 4, "heads": 2, "ff": 6, "layers": 1, "seq_len": 3, "classes": 2},
}
ARCHS = list(TINY_DIMS)
JAX_MODES = ["eager", "jit"]


class FakeRunner(ReferenceRunner):
    """The fake adapter's runner rounded to float32, plus `offset`, with an optional counter."""

    def __init__(self, spec, weights, offset=0.0, counter=None):
        super().__init__(spec, weights, "eager")
        self.offset, self.counter = offset, counter

    def prepare(self, x):
        return np.array(x)

    def __call__(self, prepared):
        return super().__call__(prepared).astype(np.float32) + np.float32(self.offset)

    def counter_flops(self, prepared):
        if self.counter is None:
            return None, "fake: no counter"
        return self.counter(self.spec, prepared.shape[0]), "fake counter"


def fake_adapter(monkeypatch, make_runner):
    """Make frameworks.load return an adapter whose build is `make_runner`."""
    loaded = []

    def load(framework, part="infer"):
        loaded.append(framework)
        return SimpleNamespace(build=make_runner, COUNTER_SCOPE="matmul")

    monkeypatch.setattr(frameworks, "load", load)
    return loaded


def equivalence(tolerance=1e-4, archs=ARCHS, modes=JAX_MODES):
    return checks.equivalence_rows("jax", archs, TINY_DIMS, 0, 2, tolerance, modes)


def test_a_correct_adapter_passes_every_arch_and_mode(monkeypatch):
    fake_adapter(
        monkeypatch, lambda spec, w, mode, device, precision="float32": FakeRunner(spec, w)
    )
    rows = equivalence()
    assert [(r["arch"], r["mode"]) for r in rows] == [(a, m) for a in ARCHS for m in JAX_MODES]
    for row in rows:
        assert row["pass"] is True, row
        assert row["error"] == ""
        assert 0 <= row["max_rel_err"] < 1e-6  # float32 rounding only
        assert set(row) == set(checks_file.COLUMNS)
        assert row["seconds"] > 0  # what the row cost the job (fwbench breakdown's precisions)
        assert math.isnan(row["saturated"]) and math.isnan(row["saturated_of"])  # no quantization


def test_a_wrong_adapter_fails_with_its_error_numbers_in_the_row(monkeypatch):
    fake_adapter(
        monkeypatch,
        lambda spec, w, mode, device, precision="float32": FakeRunner(spec, w, offset=0.01),
    )
    rows = equivalence(archs=["mlp"], modes=["eager"])
    spec = build_spec("mlp", TINY_DIMS["mlp"])
    expected = reference.forward(spec, make_weights(spec, 0), make_input(spec, 2, 0))
    [row] = rows
    assert row["pass"] is False
    assert row["max_abs_err"] == pytest.approx(0.01, rel=1e-4)
    assert row["max_rel_err"] == pytest.approx(0.01 / np.max(np.abs(expected)), rel=1e-4)
    assert row["error"] == ""


def test_tolerance_is_an_upper_bound_on_the_relative_error(monkeypatch):
    fake_adapter(
        monkeypatch,
        lambda spec, w, mode, device, precision="float32": FakeRunner(spec, w, offset=0.01),
    )
    measured = equivalence(archs=["mlp"], modes=["eager"])[0]["max_rel_err"]
    assert equivalence(measured * 1.001, ["mlp"], ["eager"])[0]["pass"] is True
    assert equivalence(measured * 0.999, ["mlp"], ["eager"])[0]["pass"] is False


def test_a_build_failure_is_a_failed_row_and_the_other_modes_still_run(monkeypatch):
    def build(spec, w, mode, device, precision="float32"):
        if mode == "jit":
            raise RuntimeError("cannot trace this")
        return FakeRunner(spec, w)

    fake_adapter(monkeypatch, build)
    eager, jit = equivalence(archs=["cnn"])
    assert eager["pass"] is True
    assert jit["pass"] is False
    assert jit["error"] == "RuntimeError: cannot trace this"
    assert math.isnan(jit["max_abs_err"]) and math.isnan(jit["max_rel_err"])


def test_a_nan_output_never_passes(monkeypatch):
    fake_adapter(
        monkeypatch,
        lambda spec, w, mode, device, precision="float32": FakeRunner(spec, w, offset=np.nan),
    )
    [row] = equivalence(tolerance=1e9, archs=["mlp"], modes=["eager"])
    assert row["pass"] is False


def test_an_adapter_that_cannot_be_imported_fails_every_row_with_the_reason(monkeypatch):
    def load(framework, part="infer"):
        raise ModuleNotFoundError("No module named 'jax'")

    monkeypatch.setattr(frameworks, "load", load)
    rows = equivalence(archs=["mlp", "rnn"])
    assert len(rows) == 4
    assert all(row["pass"] is False and "No module named 'jax'" in row["error"] for row in rows)
    flops = checks.flops_rows("jax", ["mlp"], TINY_DIMS, 0, 2, ["eager"])
    assert "No module named 'jax'" in flops[0]["note"]
    assert flops[0]["counter_flops"] is None


def test_the_adapter_receives_the_configured_spec_and_the_cpu_device(monkeypatch):
    seen = []

    def build(spec, w, mode, device, precision="float32"):
        seen.append((spec, mode, device))
        return FakeRunner(spec, w)

    fake_adapter(monkeypatch, build)
    equivalence(archs=["transformer"], modes=["jit"])
    assert seen == [(build_spec("transformer", TINY_DIMS["transformer"]), "jit", "cpu")]


def test_bad_requests_raise_naming_the_bad_value():
    with pytest.raises(ValueError, match="'compiled'"):
        checks.equivalence_rows("jax", ["mlp"], TINY_DIMS, 0, 2, 1e-4, ["compiled"])
    with pytest.raises(ValueError, match="-1"):
        checks.equivalence_rows("jax", ["mlp"], TINY_DIMS, 0, 2, -1, ["eager"])
    with pytest.raises(ValueError, match="'mxnet'"):
        checks.flops_rows("mxnet", ["mlp"], TINY_DIMS, 0, 2, ["eager"])
    with pytest.raises(ValueError, match="batch"):
        checks.flops_rows("jax", ["mlp"], TINY_DIMS, 0, 0, ["eager"])


@pytest.mark.parametrize(
    ("factor", "agrees"), [(1.0, True), (1.05, True), (0.95, True), (1.051, False), (0.949, False)]
)
def test_a_counter_agrees_within_five_percent_of_the_analytic_matmul_flops(
    monkeypatch, factor, agrees
):
    def counter(spec, batch):
        return factor * cost(spec, batch).matmul_flops

    fake_adapter(
        monkeypatch,
        lambda spec, w, mode, device, precision="float32": FakeRunner(spec, w, counter=counter),
    )
    [row] = checks.flops_rows("jax", ["lstm"], TINY_DIMS, 0, 3, ["jit"])
    analytic = cost(build_spec("lstm", TINY_DIMS["lstm"]), 3)
    assert row["analytic_flops"] == analytic.matmul_flops
    assert row["analytic_total_flops"] == analytic.flops
    assert row["counter_flops"] == pytest.approx(factor * analytic.matmul_flops)
    assert row["ratio"] == pytest.approx(factor)
    assert row["ratio_total"] == pytest.approx(factor * analytic.matmul_flops / analytic.flops)
    assert row["within_5pct"] is agrees
    assert row["note"] == "fake counter"


def test_a_missing_or_zero_counter_leaves_the_comparison_empty_and_says_why(monkeypatch):
    def build(spec, w, mode, device, precision="float32"):
        return FakeRunner(spec, w, counter=(lambda s, b: 0.0) if mode == "jit" else None)

    fake_adapter(monkeypatch, build)
    eager, jit = checks.flops_rows("jax", ["mlp"], TINY_DIMS, 0, 2, JAX_MODES)
    for row in (eager, jit):
        assert row["counter_flops"] is None
        assert row["ratio"] is None and row["within_5pct"] is None
        assert row["analytic_flops"] > 0
    assert eager["note"] == "fake: no counter"
    assert "returned 0.0" in jit["note"]


def test_csv_files_have_exactly_the_documented_columns(monkeypatch, tmp_path):
    fake_adapter(
        monkeypatch, lambda spec, w, mode, device, precision="float32": FakeRunner(spec, w)
    )
    write_equivalence(equivalence(archs=["mlp"]), tmp_path / "eq.csv")
    flops = checks.flops_rows("jax", ["mlp"], TINY_DIMS, 0, 2, ["eager"])
    checks.write_csv(flops, tmp_path / "flops.csv", checks.FLOPS_COLUMNS)

    with open(tmp_path / "eq.csv", newline="") as handle:
        eq_rows = list(csv.DictReader(handle))
    assert list(eq_rows[0]) == [*checks_file.COLUMNS, "schema_version"]
    assert [(r["mode"], r["pass"]) for r in eq_rows] == [("eager", "True"), ("jit", "True")]
    with open(tmp_path / "flops.csv", newline="") as handle:
        [flops_row] = list(csv.DictReader(handle))
    assert list(flops_row) == list(checks.FLOPS_COLUMNS)
    assert flops_row["counter_flops"] == "" and flops_row["within_5pct"] == ""
    assert int(flops_row["analytic_flops"]) == flops[0]["analytic_flops"]


def test_write_csv_refuses_rows_with_other_columns(tmp_path):
    with pytest.raises(ValueError, match="surprise"):
        checks.write_csv([{"surprise": 1}], tmp_path / "x.csv", checks.FLOPS_COLUMNS)
    assert not (tmp_path / "x.csv").exists()


def test_a_failed_rows_nan_error_is_an_empty_field_and_the_report_reads_the_others_as_numbers(
    tmp_path,
):
    row = dict.fromkeys(checks_file.COLUMNS, "x") | {"bound": 1e-4, "pass": True}
    ok = row | {"max_abs_err": 1e-7, "max_rel_err": 2e-7}
    failed = row | {"max_abs_err": math.nan, "max_rel_err": math.nan, "pass": False}
    write_equivalence([ok, failed], tmp_path / "eq.csv")
    assert ",nan," not in (tmp_path / "eq.csv").read_text()
    # a file an earlier version wrote (unversioned, the bound called tolerance), with 'nan'
    # for the failed row, reads the same
    old = tmp_path / "old.csv"
    lines = (tmp_path / "eq.csv").read_text().replace(",,,", ",nan,nan,").splitlines()
    lines[0] = lines[0].replace("bound", "tolerance")
    old.write_text(
        "\n".join(line.removesuffix(",schema_version").removesuffix(",2") for line in lines)
    )
    for path in (tmp_path / "eq.csv", old):
        errors = read_equivalence(path)["max_rel_err"]
        assert errors.dtype == float and errors[0] == 2e-7 and math.isnan(errors[1])


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_merge_csv_concatenates_under_one_header_and_leaves_no_temporary_file(tmp_path):
    torch_csv = _write(tmp_path / "torch.csv", ["arch,framework", "mlp,torch", "cnn,torch"])
    jax_csv = _write(tmp_path / "jax.csv", ["arch,framework", "mlp,jax"])
    empty_csv = _write(tmp_path / "tf.csv", ["arch,framework"])
    out = tmp_path / "merged" / "all.csv"
    checks.merge_csv([torch_csv, empty_csv, jax_csv], out)
    assert out.read_text().splitlines() == ["arch,framework", "mlp,torch", "cnn,torch", "mlp,jax"]
    assert sorted(p.name for p in out.parent.iterdir()) == ["all.csv"]


def test_merge_csv_refuses_inputs_whose_columns_differ(tmp_path):
    first = _write(tmp_path / "a.csv", ["arch,framework", "mlp,torch"])
    second = _write(tmp_path / "b.csv", ["arch,mode", "mlp,eager"])
    with pytest.raises(ValueError, match="b.csv"):
        checks.merge_csv([first, second], tmp_path / "out.csv")
    assert not (tmp_path / "out.csv").exists()


def test_merge_csv_leaves_a_column_an_older_file_lacks_empty(tmp_path):
    """One framework's checks rerun after an upgrade that added a column: the others' files,
    written before it, merge with it empty."""
    old = _write(tmp_path / "jax.csv", ["arch,pass", "mlp,True"])
    new = _write(tmp_path / "torch.csv", ["arch,saturated,pass", "mlp,3,False"])
    out = tmp_path / "out.csv"
    checks.merge_csv([old, new], out, ["local", "local"])
    assert out.read_text().splitlines() == [
        "system,arch,saturated,pass",
        "local,mlp,,True",
        "local,mlp,3,False",
    ]


# The real adapters.
REAL_DIMS = {
    "mlp": {"input": 8, "hidden": [6], "classes": 3},
    "lstm": {"input": 3, "hidden": 4, "layers": 1, "seq_len": 3, "classes": 2},
}


@pytest.mark.per_framework
@pytest.mark.parametrize("framework", ["torch", "jax", "tensorflow"])
def test_the_real_adapter_matches_the_reference_in_eager_mode(framework):
    pytest.importorskip(framework)
    rows = checks.equivalence_rows(framework, list(REAL_DIMS), REAL_DIMS, 0, 2, 1e-4, ["eager"])
    for row in rows:
        assert row["error"] == "", row
        assert row["pass"] is True, row
    flops = checks.flops_rows(framework, ["mlp"], REAL_DIMS, 0, 2, ["eager"])
    assert flops[0]["analytic_flops"] == cost(build_spec("mlp", REAL_DIMS["mlp"]), 2).matmul_flops
    assert flops[0]["note"], flops[0]  # a count says how it was made; a missing one says why


@pytest.mark.per_framework
@pytest.mark.parametrize("framework", ["torch", "jax", "tensorflow"])
def test_a_wider_mlp_from_the_config_needs_no_code_change_in_any_mode(framework):
    pytest.importorskip(framework)
    wide = {"mlp": {"input": 784, "hidden": [1024, 1024], "classes": 10}}
    # the in-framework modes (an export mode runs an artifact: tests/test_export.py)
    modes = [m for m in MODES[framework] if not frameworks.is_export_mode(framework, m)]
    rows = checks.equivalence_rows(framework, ["mlp"], wide, 0, 4, 1e-4, modes)
    assert [row["mode"] for row in rows] == modes
    for row in rows:
        assert row["pass"] is True, row


@pytest.mark.torch
def test_torch_flop_counter_agrees_exactly_with_the_analytic_matmul_flops():
    """An independent count of the cost model: FlopCounterMode is exact for addmm/conv/RNN
    (it counts 0 for nn.LSTM and the fused attention path, so those are not compared)."""
    pytest.importorskip("torch")
    archs = ["mlp", "cnn", "rnn"]
    rows = checks.flops_rows("torch", archs, TINY_DIMS, 0, 3, ["eager"])
    for row in rows:
        assert row["counter_flops"] == row["analytic_flops"], row
        assert row["within_5pct"] is True


SCRIPT_RUNNER = """
import json, runpy, sys
from types import SimpleNamespace

args = json.loads(sys.argv[1])
snakemake = SimpleNamespace(  # the attributes the scripts read, as snakemake names them
    params=SimpleNamespace(**args["params"]),
    output=SimpleNamespace(**args["output"]),
    input=SimpleNamespace(**args.get("input", {})),
    log=[args["log"]],
)
runpy.run_path(args["script"], init_globals={"snakemake": snakemake})
print(json.dumps(sorted(m for m in ("torch", "tensorflow", "jax") if m in sys.modules)))
"""


def _run_script(tmp_path, **args):
    script = Path(__file__).resolve().parents[1] / "workflow" / "scripts" / args.pop("name")
    args |= {"script": str(script), "log": str(tmp_path / "job.log")}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT_RUNNER, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.jax
def test_the_checks_script_writes_both_csvs_and_imports_only_its_framework(tmp_path):
    pytest.importorskip("jax")
    params = {
        "framework": "jax",
        "archs": ["mlp"],
        "dims": REAL_DIMS,
        "seed": 0,
        "batch": 2,
        "tolerance": 1e-4,
        "modes": ["eager", "jit"],
        "precisions": {"mlp": {"jit": ["bfloat16"]}},
        "system": {"device": "cpu", "threads": 1},
    }
    output = {"equivalence": str(tmp_path / "eq.csv"), "flops": str(tmp_path / "flops.csv")}
    imported = _run_script(
        tmp_path, name="checks.py", params=params, output=output, input={"artifacts": []}
    )
    assert imported == ["jax"]
    with open(output["equivalence"], newline="") as handle:
        eq_rows = list(csv.DictReader(handle))
    assert [(r["mode"], r["precision"], r["pass"]) for r in eq_rows] == [
        ("eager", "float32", "True"),
        ("jit", "float32", "True"),
        ("jit", "bfloat16", "True"),
    ]
    bf16 = eq_rows[-1]
    # a bf16 output is off by about its unit roundoff (2^-8), well inside its bound and far
    # outside float32's tolerance
    assert 1e-4 < float(bf16["max_rel_err"]) < float(bf16["bound"]) < 0.5
    assert "λ·u·√R" in bf16["basis"] and eq_rows[0]["basis"] == checks.TOLERANCE_BASIS
    with open(output["flops"], newline="") as handle:
        assert list(csv.DictReader(handle))[0].keys() == set(checks.FLOPS_COLUMNS)
    assert "mlp/jit/bfloat16: pass=True" in (tmp_path / "job.log").read_text()


def test_the_merge_script_writes_one_csv_per_check(tmp_path):
    inputs = {"equivalence": [], "flops": []}
    for framework in ("torch", "jax"):
        for check in inputs:
            path = _write(tmp_path / f"{framework}-{check}.csv", ["framework", framework])
            inputs[check].append(str(path))
    output = {check: str(tmp_path / f"{check}.csv") for check in inputs}
    params = {"systems": ["cpu_nodes", "gpu_nodes"]}
    _run_script(tmp_path, name="merge_checks.py", params=params, output=output, input=inputs)
    rows = (tmp_path / "flops.csv").read_text().split()
    assert rows == ["system,framework", "cpu_nodes,torch", "gpu_nodes,jax"]
    merged = read_equivalence(tmp_path / "equivalence.csv")  # in this schema, every column
    assert list(merged.columns) == ["system", *checks_file.COLUMNS]
    assert merged[["system", "framework"]].values.tolist() == [
        ["cpu_nodes", "torch"],
        ["gpu_nodes", "jax"],
    ]
