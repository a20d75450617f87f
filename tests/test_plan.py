"""The plan of a sweep, without Snakemake: cells, paths, order, requests, checks, baselines."""

from __future__ import annotations

import json
import os
import time
from dataclasses import fields

import pytest

from fwbench.plan import CellRequest, paths, refuse_moved_keys
from fwbench.plan.versions import env_file, versions_source

from conftest import REPO, SMOKE, snakemake
from plans import FAKE_VERSIONS, plan_of, validated

DEFAULT = str(REPO / "config/config.yaml")


def cell(**changes):
    wildcards = dict(
        system="local", framework="torch", version="0.0-fake", mode="eager", arch="mlp", batch="8"
    )
    return wildcards | changes


def test_the_smoke_sweep_is_every_framework_mode_architecture_and_batch():
    plan = plan_of(base=SMOKE)
    config = plan.config
    variants = sum(len(config["modes"][fw]) for fw in config["frameworks"])
    fp32 = [c for c in plan.cells if c["precision"] == "float32"]
    assert len(fp32) == variants * len(config["architectures"]) * len(config["batch_sizes"])
    # bfloat16 at the table batch for mlp, in every mode but litert
    bf16 = [c for c in plan.cells if c["precision"] == "bfloat16"]
    assert {(c["arch"], c["batch"]) for c in bf16} == {("mlp", 8)}
    assert len(bf16) == variants - 1 and "litert" not in {c["mode"] for c in bf16}
    assert {c["version"] for c in plan.cells if c["framework"] == "jax"} == {"0.0-fake"}
    assert plan.cell_files[0] == paths.cell_file(plan.cells[0])
    assert plan.cell_files[0].startswith("results/cells/local/")


def test_the_default_sweep_has_320_cells_and_65_artifacts():
    plan = plan_of(base=DEFAULT)
    # float32: 12 variants × 5 architectures × 4 batches; bfloat16: 11 (all but litert) × 5
    # architectures at the table batch; there, each deployment path in the quantization its
    # users pick first: int8 (dynamic) in the 3 runtime paths (onnxrt ×2, litert), int8_static
    # (PT2E) in torch's compiled and aoti
    assert len(plan.cells) == 240 + 55 + 15 + 10
    # 5 export modes × 5 architectures in float32, 4 in bfloat16 (all but litert), 3 in int8,
    # 1 in int8_static (aoti: compiled quantizes in its cells)
    assert len(plan.exports) == 25 + 20 + 15 + 5
    runtimes = {("torch", "onnxrt", 32), ("tensorflow", "onnxrt", 32), ("tensorflow", "litert", 32)}
    pt2e = {("torch", "aoti", 32), ("torch", "compiled", 32)}
    every = plan_of({"precision": {"quantization": "all"}}, base=DEFAULT)
    for plan_, precision, paths_ in (
        (plan, "int8", runtimes),
        (plan, "int8_static", pt2e),
        (every, "int8", runtimes),
        (every, "int8_static", runtimes | pt2e),
    ):
        quantized = {
            (c["framework"], c["mode"], c["batch"])
            for c in plan_.cells
            if c["precision"] == precision
        }
        assert quantized == paths_, (precision, plan_.config["precision"]["quantization"])


def test_first_picks_among_the_quantizations_precision_low_names():
    plan = plan_of({"precision": {"low": ["int8_static"]}}, base=DEFAULT)
    assert plan.cell_precisions("torch", "onnxrt", "mlp", 32) == ["float32", "int8_static"]
    assert plan.cell_precisions("tensorflow", "litert", "mlp", 32) == ["float32", "int8_static"]
    assert plan.cell_precisions("torch", "eager", "mlp", 32) == ["float32"]
    assert plan.cell_precisions("torch", "onnxrt", "mlp", 8) == ["float32"]  # not its batch


def test_a_quantization_the_default_does_not_pick_is_refused_naming_the_setting():
    plan = plan_of(base=DEFAULT)
    wildcards = cell(mode="onnxrt", batch="32", precision_tag="-int8-static")
    with pytest.raises(ValueError, match="quantization: first"):
        plan.cell_request(wildcards)
    with pytest.raises(ValueError, match="no int8_static cells are swept"):
        plan.export_request(wildcards)


def test_a_bf16_cell_has_its_own_path_request_and_artifact_and_float32_keeps_its_own():
    plan = plan_of(base=DEFAULT)
    fp32 = cell(mode="onnxrt", batch="32", precision_tag="")
    bf16 = fp32 | {"precision_tag": "-bf16"}
    assert paths.cell_file(plan.cells[0]) == "results/cells/local/torch/0.0-fake/eager/mlp/b1.nc"
    assert "precision" not in json.loads(plan.cell_request(fp32).to_json())
    assert json.loads(plan.cell_request(bf16).to_json())["precision"] == "bfloat16"
    assert plan.artifact_input(fp32) == ["results/artifacts/local/torch/0.0-fake/onnxrt/mlp.json"]
    assert plan.artifact_input(bf16) == [
        "results/artifacts/local/torch/0.0-fake/onnxrt/mlp-bf16.json"
    ]
    assert plan.export_request(bf16).precision == "bfloat16"
    bf16_file = paths.cell_file(plan.cells[0] | {"precision": "bfloat16"})
    assert bf16_file.endswith("/eager/mlp/b1-bf16.nc")


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"batch": "8", "precision_tag": "-bf16"}, ["bfloat16 is not swept", "batches: [32]"]),
        ({"mode": "litert", "framework": "tensorflow", "version": "0.0-fake"}, ["litert"]),
    ],
)
def test_a_precision_the_config_does_not_sweep_is_refused_naming_why(changes, named):
    plan = plan_of(base=DEFAULT)
    wildcards = cell(batch="32", precision_tag="-bf16") | changes
    with pytest.raises(ValueError) as error:
        plan.cell_request(wildcards)
    for text in named:
        assert text in str(error.value)


def test_the_low_precisions_follow_their_batches_and_architectures():
    everywhere = plan_of({"precision": {"batches": "all"}}, base=DEFAULT)
    assert len(everywhere.cells) == 240 + 4 * (55 + 15 + 10)
    none = plan_of({"precision": {"low": []}}, base=DEFAULT)
    assert len(none.cells) == 240 and len(none.exports) == 25
    some = plan_of({"precision": {"architectures": ["cnn"], "batches": [1, 8]}}, base=DEFAULT)
    assert {(c["arch"], c["batch"]) for c in some.cells if c["precision"] != "float32"} == {
        ("cnn", 1),
        ("cnn", 8),
    }


def _multi(plan) -> dict[tuple, list[int]]:
    """Per (system, framework, mode, arch): the batches measured in more than one process."""
    chosen: dict[tuple, list[int]] = {}
    for cell_ in plan.cells:
        key = (cell_["system"], cell_["framework"], cell_["mode"], cell_["arch"])
        if len(plan.cell_processes(cell_)) > 1:
            chosen.setdefault(key, []).append(cell_["batch"])
    return chosen


QUARTER = {"bench": {"processes": 2, "multi_process_share": 0.25}}  # the default until 2026-12-07


def test_at_a_quarter_share_a_quarter_of_each_architectures_batches_get_a_second_process():
    plan = plan_of(QUARTER, base=DEFAULT)
    chosen = _multi(plan)
    assert len(chosen) == 60 and {len(batches) for batches in chosen.values()} == {1}
    assert len(plan.cell_files) == 320 + 60  # the bf16 and int8 cells in process 0 alone
    assert len({tuple(batches) for batches in chosen.values()}) > 1, "the same batches everywhere"
    every = plan_of({"bench": {"processes": 2, "multi_process_share": 1}}, base=DEFAULT)
    assert len(every.cell_files) == 480 + 55 + 15 + 10
    assert plan_of(base=DEFAULT).cell_files == [  # the default: one process per cell
        paths.cell_file(c) for c in plan.cells
    ]


def test_the_multi_process_cells_hold_across_upgrades_seeds_aside():
    plan = plan_of(QUARTER, base=DEFAULT)
    newer = {fw: {name: "99.0" for name in dists} for fw, dists in FAKE_VERSIONS.items()}
    assert _multi(plan_of(QUARTER, base=DEFAULT, versions=newer)) == _multi(plan)
    fewer = plan_of(QUARTER | {"architectures": ["mlp", "lstm"]}, base=DEFAULT)
    assert _multi(fewer).items() <= _multi(plan).items()
    assert _multi(plan_of(QUARTER | {"seed": 1}, base=DEFAULT)) != _multi(plan)
    # a small share still measures one batch per architecture in every process
    small = _multi(plan_of({"bench": {"processes": 2, "multi_process_share": 0.01}}, base=DEFAULT))
    assert {len(batches) for batches in small.values()} == {1}


def test_a_later_process_of_a_single_process_cell_is_refused_naming_the_share():
    plan = plan_of(QUARTER, base=DEFAULT)
    single = next(c for c in plan.cells if len(plan.cell_processes(c)) == 1)
    wildcards = {key: str(value) for key, value in single.items()} | {"process": "1"}
    with pytest.raises(ValueError, match="process 0 alone.*multi_process_share is 0.25"):
        plan.cell_request(wildcards)
    multi = next(c for c in plan.cells if len(plan.cell_processes(c)) == 2)
    wildcards = {key: str(value) for key, value in multi.items()} | {"process": "1"}
    assert plan.cell_request(wildcards).process == 1


EVERY_PROCESS = {"processes": 2, "multi_process_share": 1}


def test_processes_beyond_the_first_add_a_suffix_and_nothing_else():
    plan = plan_of({"bench": {"processes": 3, "multi_process_share": 1}}, base=SMOKE)
    fp32 = [c for c in plan.cells if c["precision"] == "float32"]
    assert len(plan.cell_files) == 3 * len(fp32) + (len(plan.cells) - len(fp32))
    first = paths.cell_file(plan.cells[0])
    assert first.endswith(".nc") and "-p" not in first
    assert paths.cell_file(plan.cells[0], 2) == first[: -len(".nc")] + "-p2.nc"
    assert plan.cell_systems == ["local"] * len(plan.cell_files)


def test_the_bench_order_is_a_seeded_shuffle_of_every_process():
    plan = plan_of({"bench": EVERY_PROCESS}, base=SMOKE)
    priorities = {path: p for path, p in plan.priorities.items() if path in set(plan.cell_files)}
    assert sorted(priorities) == sorted(plan.cell_files)
    assert priorities.items() <= plan_of({"bench": EVERY_PROCESS}, base=SMOKE).priorities.items()
    by_place = sorted(priorities, key=priorities.get, reverse=True)
    assert by_place != plan.cell_files, "the order is the listing order, not a shuffle"
    reseeded = plan_of({"bench": EVERY_PROCESS, "seed": 1}, base=SMOKE).priorities
    assert reseeded != priorities
    assert plan.ahead_of_bench > max(priorities.values())


def test_a_job_priority_is_its_place_in_the_order():
    plan = plan_of(base=SMOKE)
    wildcards = dict(plan.cells[3]) | {"batch": str(plan.cells[3]["batch"])}
    assert plan.bench_priority(wildcards) == plan.priorities[paths.cell_file(plan.cells[3])]


def test_a_request_holds_every_setting_of_its_cell_and_system():
    plan = plan_of({"threads": 1, "bench": {"repeats": 7}}, base=SMOKE)
    request = plan.cell_request(cell(process="0"))
    assert (request.framework, request.mode, request.arch, request.batch) == (
        "torch",
        "eager",
        "mlp",
        8,
    )
    assert request.repeats == 7 and request.threads == 1 and request.system == "local"
    assert request.versions == FAKE_VERSIONS["torch"]
    assert request.dims == plan.config["dims"]["mlp"]
    assert request.placement == {"device": "cpu", "threads": 1}
    assert request.inject_failure is False and request.compile_options == {}


def test_a_compiled_variant_gets_its_options_and_an_injected_failure_is_named():
    overrides = {
        "modes": {"torch": ["eager", "compiled_max"]},
        "torch_compile": {"compiled_max": {"mode": "max-autotune"}},
        "bench": {"inject_failure": ["torch/compiled_max/mlp"]},
    }
    request = plan_of(overrides, base=SMOKE).cell_request(cell(mode="compiled_max"))
    assert request.compile_options == {"mode": "max-autotune"}
    assert request.inject_failure is True


@pytest.mark.parametrize(
    "changes, named",
    [
        ({"mode": "jit"}, ["'jit'", "torch"]),
        ({"version": "9.9"}, ["'9.9'", "'0.0-fake'"]),
        ({"process": "1"}, ["process 1", "bench.processes is 1"]),
    ],
)
def test_a_request_outside_the_config_is_refused_naming_it(changes, named):
    with pytest.raises(ValueError) as error:
        plan_of(base=SMOKE).cell_request(cell(**changes))
    for text in named:
        assert text in str(error.value)


def test_a_request_round_trips_through_json_in_field_order_without_its_lock_and_hardware():
    request = plan_of(base=SMOKE).cell_request(cell())
    text = request.to_json()
    local = ("lock", "hardware", "artifact")  # where the job finds things, not what the cell is
    # float32, the default precision, is left out: the text of requests before precision
    local += ("precision",)
    assert list(json.loads(text)) == [f.name for f in fields(CellRequest) if f.name not in local]
    again = CellRequest.from_json(
        text, lock="/tmp/other.lock", hardware="results/hw.json", artifact="a.json"
    )
    assert again.lock == "/tmp/other.lock" and again.to_json() == text
    assert again.hardware == "results/hw.json" and again.artifact == "a.json"
    assert CellRequest.from_json(text, artifact="").artifact is None  # the rule's empty input
    assert again.settings_hash() == request.settings_hash()
    with pytest.raises(ValueError, match="unknown field.*colour"):
        CellRequest.from_json(json.dumps(json.loads(text) | {"colour": 1}))


def test_every_process_of_a_cell_has_one_settings_hash_and_other_cells_another():
    plan = plan_of({"bench": EVERY_PROCESS}, base=SMOKE)
    first = plan.cell_request(cell())
    assert plan.cell_request(cell(process="1")).settings_hash() == first.settings_hash()
    assert plan.cell_request(cell(batch="1")).settings_hash() != first.settings_hash()


@pytest.mark.parametrize(
    "overrides, named",
    [
        ({"modes": {"torch": ["eager", "compiled_x"]}}, ["compiled_x", "torch_compile"]),
        ({"torch_compile": {"eager": {}}}, ["torch_compile.eager", "only compiled modes"]),
        ({"torch_compile": {"compiled_y": {}}}, ["torch_compile.compiled_y", "does not list"]),
        (
            {"architectures": ["transformer"], "dims": {"transformer": {"d_model": 130}}},
            ["dims.transformer", "d_model=130"],
        ),
    ],
)
def test_a_config_the_schema_accepts_but_the_plan_cannot_run_is_refused(overrides, named):
    with pytest.raises(ValueError) as error:
        plan_of(overrides, base=SMOKE)
    for text in named:
        assert text in str(error.value)


def test_train_keys_that_moved_to_systems_are_refused_before_validation():
    with pytest.raises(ValueError, match="train.gpus.*systems"):
        refuse_moved_keys({"train": {"gpus": 1}})
    refuse_moved_keys({"train": {"epochs": 1}})


def test_the_levels_that_became_one_are_refused_naming_what_replaces_them():
    with pytest.raises(ValueError, match=r"stats.alpha is gone: .*stats.confidence"):
        refuse_moved_keys({"stats": {"alpha": 0.01, "confidence": 0.99}})
    with pytest.raises(ValueError, match=r"compare.threshold_pct is gone: .*min_effect_pct"):
        refuse_moved_keys({"compare": {"threshold_pct": 5}})
    refuse_moved_keys({"stats": {"confidence": 0.99}, "compare": {}})


def test_versions_come_per_device_and_name_the_results_by_the_first_distribution():
    asked = []

    def versions_of(framework, device):
        asked.append((framework, device))
        return {"jax": f"1.{device}", "jaxlib": "1"}

    overrides = {"frameworks": ["jax"], "systems": {"a": {}, "g": {"device": "cuda", "threads": 2}}}
    config = validated(overrides, base=SMOKE)
    from fwbench.plan import make_plan

    plan = make_plan(config, versions_of=versions_of, read_disk=False)
    assert sorted(asked) == [("jax", "cpu"), ("jax", "cuda")]
    assert plan.version("a", "jax") == "1.cpu" and plan.version("g", "jax") == "1.cuda"
    assert plan.wildcard_patterns()["version"] == r"1\.cpu|1\.cuda"


def test_versions_under_conda_are_read_from_the_rules_env_files():
    envs = REPO / "envs"
    assert env_file(envs, "jax", "cuda").endswith("envs/jax-cuda.yaml")
    assert env_file(envs, "analysis", "cuda").endswith("envs/analysis.yaml")
    pinned = versions_source(envs)("jax", "cpu")
    assert list(pinned)[0] == "jax"


def test_a_training_mode_outside_the_config_is_refused_naming_it():
    plan = plan_of(base=SMOKE)
    run = plan.train_runs[0]
    assert plan.train_params(run)["versions"] == FAKE_VERSIONS[run["framework"]]
    with pytest.raises(ValueError, match="training mode 'nope'"):
        plan.train_params(run | {"mode": "nope"})


def _write_cells(root, version, mtime):
    directory = root / f"results/cells/local/torch/{version}/eager/mlp"
    directory.mkdir(parents=True)
    for name in ("b1.nc", "b8.nc"):
        (directory / name).write_text("")
        os.utime(directory / name, (mtime, mtime))


def test_the_baseline_is_the_most_recently_written_earlier_version(tmp_path, monkeypatch):
    now = time.time()
    _write_cells(tmp_path, "1.0", now - 100)
    _write_cells(tmp_path, "0.5", now - 10)  # older number, written later
    _write_cells(tmp_path, "0.0-fake", now)  # the current version is never its own baseline
    monkeypatch.chdir(tmp_path)
    plan = plan_of(base=SMOKE, read_disk=True)
    assert plan.baselines[("local", "torch")] == "0.5"
    assert plan.baselines[("local", "jax")] is None
    assert plan.compare_tables() == ["results/compare/local/torch.csv"]
    chosen = plan_of({"compare": {"baseline": {"torch": "1.0"}}}, base=SMOKE, read_disk=True)
    assert chosen.baselines[("local", "torch")] == "1.0"
    with pytest.raises(ValueError, match="compare.baseline.torch.*'2.0'"):
        plan_of({"compare": {"baseline": {"torch": "2.0"}}}, base=SMOKE, read_disk=True)


def test_results_of_the_layout_before_systems_are_refused_naming_the_fix(tmp_path, monkeypatch):
    (tmp_path / "results/cells/torch").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="results/cells/torch.*fwbench.io.migrate"):
        plan_of(base=SMOKE, read_disk=True)


def test_wildcards_allow_only_configured_values():
    patterns = plan_of(base=SMOKE).wildcard_patterns()
    assert patterns["arch"] == "mlp|lstm" and patterns["batch"] == "1|8"
    assert patterns["system"] == "local" and patterns["process"] == "[1-9][0-9]*"
    assert patterns["precision_tag"] == r"(?:|\-bf16)"


def test_float32_alone_plans_every_cell(tmp_path):
    """precision.low: [] leaves float32's empty tag the only one: a constraint that matches
    it, not an empty one Snakemake ignores (its default, one character or more, would leave
    no rule for any cell)."""
    float32 = {"precision": {"low": []}, "train": {"precisions": ["float32"]}}
    assert plan_of(float32, base=SMOKE).wildcard_patterns()["precision_tag"] == "(?:)"
    (tmp_path / "float32.yaml").write_text("precision: {low: []}\ntrain: {precisions: [float32]}\n")
    result = snakemake("-n", "--configfile", SMOKE, str(tmp_path / "float32.yaml"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "b8-bf16.nc" not in result.stdout and "/b8.nc" in result.stdout


def test_the_checks_hold_each_swept_low_precision_of_each_architecture_and_mode():
    smoke = plan_of(base=SMOKE)  # bfloat16 for mlp alone
    torch = smoke.check_precisions("local", "torch")
    assert torch == {"mlp": {m: ["bfloat16"] for m in ("eager", "compiled", "aoti", "onnxrt")}}
    assert "litert" not in smoke.check_precisions("local", "tensorflow")["mlp"]
    assert plan_of({"precision": {"low": []}}, base=SMOKE).check_precisions("local", "jax") == {}
