"""The config schema: defaults fill in, and every kind of bad value stops the workflow with a
message naming the key and the value."""

from __future__ import annotations

import copy

import pytest
import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import update_config, validate

from fwbench.model.specs import build_spec

from conftest import REPO, snakemake

SCHEMA = str(REPO / "workflow/schemas/config.schema.yaml")
DEFAULT = yaml.safe_load((REPO / "config/config.yaml").read_text())


def validated(override: dict) -> dict:
    config = copy.deepcopy(DEFAULT)
    update_config(config, override)
    validate(config, SCHEMA)
    return config


def test_default_config_is_valid_and_is_the_documented_sweep():
    config = validated({})
    assert config["frameworks"] == ["torch", "jax", "tensorflow"]
    assert config["modes"] == {  # the deployment paths too
        "torch": ["eager", "compiled", "aoti", "onnxrt"],
        "jax": ["eager", "jit", "export"],
        "tensorflow": ["eager", "function", "xla", "litert", "onnxrt"],
    }
    assert config["architectures"] == ["mlp", "cnn", "rnn", "lstm", "transformer"]
    assert config["batch_sizes"] == [1, 8, 32, 128]
    assert (config["bench"]["warmup"], config["bench"]["repeats"]) == (15, 20)
    assert config["bench"]["processes"] == 1  # the rounds' sets give the spread between them
    assert config["threads"] == "auto" and config["device"] == "cpu"


def test_schema_fills_defaults_for_keys_left_out():
    config = {"frameworks": ["jax"]}
    validate(config, SCHEMA)
    assert config["bench"]["repeats"] == 20
    assert config["dims"]["transformer"]["heads"] == 4
    assert config["modes"]["jax"] == ["eager", "jit", "export"]


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ({"frameworks": ["torch", "mxnet"]}, ["mxnet"]),
        ({"batch_sizes": [1, 0]}, ["batch_sizes", "0"]),
        ({"bench": {"repeats": "abc"}}, ["repeats", "abc"]),
        ({"benchh": {"repeats": 3}}, ["benchh"]),
        ({"bench": {"warmpu": 3}}, ["warmpu"]),
        ({"modes": {"torch": ["eager", "jit"]}}, ["torch", "jit"]),
        ({"dims": {"mlp": {"hidden": [512, -5]}}}, ["hidden", "-5"]),
        ({"dims": {"cnn": {"height": -32}}}, ["height", "-32"]),
        ({"threads": "many"}, ["threads", "many"]),
        ({"device": "tpu"}, ["device", "tpu"]),
        ({"bench": {"processes": 0}}, ["processes", "0"]),
        ({"bench": {"multi_process_share": 0}}, ["multi_process_share", "0"]),
        ({"bench": {"multi_process_share": 1.5}}, ["multi_process_share", "1.5"]),
        ({"modes": {"torch": ["eager", "Compiled-2"]}}, ["Compiled-2"]),
        ({"torch_compile": {"compiled": {"freeze": True}}}, ["freeze"]),
        ({"torch_compile": {"compiled": {"mode": "fastest"}}}, ["fastest"]),
    ],
)
def test_bad_value_is_rejected_naming_key_and_value(override, named):
    with pytest.raises(WorkflowError) as error:
        validated(override)
    message = str(error.value)
    for word in named:
        assert word in message, f"{word!r} not in: {message}"


def test_inconsistent_dimensions_are_rejected_by_the_spec():
    with pytest.raises(ValueError, match="d_model=130 is not divisible by heads=4"):
        build_spec("transformer", {"d_model": 130, "heads": 4})


def run_with_override(workdir, override: dict):
    config_file = workdir / "override.yaml"
    config_file.write_text(yaml.safe_dump(override))
    return snakemake("-n", "--cores", "1", "--configfile", str(config_file), cwd=workdir)


def test_workflow_stops_before_any_job_on_a_bad_value(workdir):
    result = run_with_override(workdir, {"batch_sizes": [0]})
    assert result.returncode != 0
    assert "batch_sizes" in (result.stdout + result.stderr) and "0 is less than the minimum" in (
        result.stdout + result.stderr
    )
    assert not (workdir / "results").exists()


def test_workflow_rejects_bad_dims_at_parse_time(workdir):
    result = run_with_override(workdir, {"dims": {"transformer": {"d_model": 130}}})
    assert result.returncode != 0
    assert "dims.transformer" in (result.stdout + result.stderr) and "d_model=130" in (
        result.stdout + result.stderr
    )


def test_a_compiled_variant_without_its_options_is_rejected_naming_it(workdir):
    result = run_with_override(workdir, {"modes": {"torch": ["eager", "compiled_frozen"]}})
    assert result.returncode != 0
    assert "'compiled_frozen'" in result.stdout + result.stderr
    assert "torch_compile" in result.stdout + result.stderr


def test_the_rigorous_config_measures_every_cell_in_five_processes():
    rigorous = yaml.safe_load((REPO / "config/rigorous.yaml").read_text())
    assert validated(rigorous)["bench"]["processes"] >= 5


def test_the_precision_overlay_takes_low_precisions_to_every_batch_and_no_float32_cell_changes():
    from plans import plan_of

    overlay = yaml.safe_load((REPO / "config/precision.yaml").read_text())
    base = str(REPO / "config/config.yaml")
    default, every = plan_of(base=base), plan_of(overlay, base=base)
    # bfloat16: all but litert; int8: the 3 runtime paths; int8_static: those and torch's
    # compiled and aoti; 5 architectures, 4 batches
    assert len(every.cells) == 240 + (11 + 3 + 5) * 5 * 4
    fp32 = [c for c in every.cells if c["precision"] == "float32"]
    assert fp32 == [c for c in default.cells if c["precision"] == "float32"]
    # and the default's low-precision cells are the overlay's, with the same requests: taking
    # the overlay after the default reruns none of them
    from fwbench.plan import paths

    low = [c for c in default.cells if c["precision"] != "float32"]
    assert all(c in every.cells for c in low)
    for c in low:
        wildcards = paths.with_tag(c) | {"batch": str(c["batch"])}
        assert every.cell_request(wildcards) == default.cell_request(wildcards), c
    # training: bfloat16 in every training mode, the default's runs unchanged (their settings)
    assert (len(default.train_runs), len(every.train_runs)) == (6 + 3, 6 + 6)
    for run in default.train_runs:
        wildcards = paths.with_tag(run)
        assert every.train_settings(wildcards) == default.train_settings(wildcards), run
