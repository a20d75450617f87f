"""The test layers themselves: which layer a test lands in, the probe that fails a fast-layer
test whose subprocess imports a framework, and the runner's counts."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import run_layers
from adapter_cases import COLLECTION_PROBES
from conftest import IMPORT_PROBE, layer_of
from layers import LAYERS


@dataclass
class Marker:
    name: str


@dataclass
class CallSpec:
    params: dict


@dataclass
class Item:
    """What layer_of reads of a pytest item."""

    markers: list[str] = field(default_factory=list)  # nearest first
    fixturenames: tuple[str, ...] = ()
    params: dict | None = None

    def iter_markers(self):
        return (Marker(name) for name in self.markers)

    @property
    def callspec(self):
        return CallSpec(self.params) if self.params is not None else None


def test_a_test_is_fast_unless_something_puts_it_elsewhere():
    assert layer_of(Item()) == "fast"
    assert layer_of(Item(params={"framework": "torch"})) == "fast"  # not opted in


def test_the_nearest_layer_marker_wins_and_a_smoke_sweep_reader_is_end_to_end():
    assert layer_of(Item(markers=["jax", "per_framework", "torch"])) == "jax"
    assert layer_of(Item(fixturenames=("tmp_path", "smoke_run"))) == "e2e"
    assert layer_of(Item(markers=["torch"], fixturenames=("smoke_run",))) == "torch"


def test_a_per_framework_case_goes_to_its_frameworks_layer():
    marked = ["per_framework"]
    assert layer_of(Item(markers=marked, params={"framework": "tensorflow"})) == "tensorflow"
    assert layer_of(Item(markers=marked, params={"arch": "mlp"})) == "fast"


def _probe_log(code: str, tmp_path: Path) -> str:
    log = tmp_path / "imports.log"
    env = os.environ | {"FWBENCH_FRAMEWORK_IMPORT_LOG": str(log), "PYTHONPATH": str(IMPORT_PROBE)}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)
    return log.read_text() if log.exists() else ""


def test_the_import_probe_notes_a_frameworks_import_in_a_subprocess_and_nothing_else(tmp_path):
    # find_spec asks the meta path as an import does, without paying for one
    looked_up = "import importlib.util; importlib.util.find_spec('keras'); import json"
    assert _probe_log(looked_up, tmp_path).startswith("tensorflow\t")
    assert _probe_log("import json, csv", tmp_path / "quiet") == ""


def test_the_runner_counts_a_junit_file_and_a_missing_one_as_an_error(tmp_path):
    junit = tmp_path / "layer.xml"
    junit.write_text(
        '<testsuites><testsuite tests="7" failures="1" errors="1" skipped="2"/></testsuites>'
    )
    assert run_layers.counts_of(junit) == {"passed": 3, "failed": 1, "errors": 1, "skipped": 2}
    assert run_layers.counts_of(tmp_path / "none.xml")["errors"] == 1


def test_the_runner_refuses_an_unknown_layer_naming_it(capsys):
    assert run_layers.main(["quick"]) == 2
    assert "quick" in capsys.readouterr().err


@pytest.mark.parametrize("layer", ["fast", "e2e"])
def test_every_layer_is_a_registered_marker(layer, pytestconfig):
    assert any(line.startswith(f"{layer}:") for line in pytestconfig.getini("markers"))


def selects(selection: str, markers: set[str]) -> bool:
    """Whether a marker expression selects a test with `markers` (pytest's -m semantics over
    plain words and and/or/not)."""
    assert not run_layers.unknown_words(selection), selection
    words = selection.replace("(", " ( ").replace(")", " ) ").split()
    names = {word for word in words if word not in {"and", "or", "not", "(", ")"}}
    return eval(" ".join(words), {}, {name: name in markers for name in names})  # noqa: S307


KINDS = [{layer} for layer in LAYERS] + [{layer, "quiet"} for layer in LAYERS]
KINDS += [{"e2e", "smoke"}, {"e2e", "slurm"}]


@pytest.mark.parametrize("markers", KINDS, ids=lambda markers: "+".join(sorted(markers)))
def test_make_tests_plan_runs_every_layer_exactly_once(markers):
    first, beside = run_layers.PLAN
    assert sum(selects(selection, markers) for selection in [*first, *beside]) == 1


def test_a_selection_naming_no_layer_is_refused(capsys):
    assert run_layers.main(["e2e and not slow"]) == 2
    assert "slow" in capsys.readouterr().err


def test_collecting_a_module_that_names_a_lazy_framework_asks_only_the_known_probes(
    pytester, monkeypatch
):
    """pytest asks module-level objects a few attributes while it collects; a LazyModule must
    answer those without importing, and only those (torch._dynamo must import). Fails when a
    pytest version asks another: add it to adapter_cases.COLLECTION_PROBES."""
    paths = [str(Path(__file__).parent), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))
    asked = pytester.path / "asked.txt"
    pytester.makepyfile(
        test_spy=f"""
        from adapter_cases import LazyModule

        class Spy(LazyModule):
            def __getattr__(self, name):
                with open({str(asked)!r}, "a") as file:
                    file.write(name + "\\n")
                raise AttributeError(name)

        torch = Spy("torch")

        def test_nothing():
            pass
        """
    )
    assert pytester.runpytest_subprocess("--collect-only", "-p", "no:cacheprovider").ret == 0
    names = set(asked.read_text().split())
    assert names and names <= COLLECTION_PROBES, names - COLLECTION_PROBES
