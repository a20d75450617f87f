"""bfloat16 mixed-precision training beside float32: runs of their own, planned so that a float32
run's file and params are those from before precision was a dimension (upgrading reruns none);
in every framework the products run in bfloat16 over float32 weights (two steps follow the
float64 reference within bfloat16's rounding and not within float32's: the bfloat16 products
ran); and the report holds each against its float32 run, accuracy against MLPerf's 99% bar."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fwbench.frameworks import load
from fwbench.io.train_file import RunRecord, evaluated_in
from fwbench.model import resnet
from fwbench.model.reference import max_errors
from fwbench.model.resnet_reference import cross_entropy, reference_forward
from fwbench.plan import paths
from fwbench.present.report.training import evaluated_table, precision_table
from fwbench.training import run as training
from fwbench.training.config import MIXED_BFLOAT16, parse_settings, run_settings
from fwbench.training.data import to_layout
from fwbench.training.summary import (
    against_float32,
    evaluated_against_float32,
    stack_runs,
    summary_frame,
)

from conftest import SMOKE
from plans import FAKE_VERSIONS, plan_of, validated
from training_cases import OPTIMIZER, SEED, SPECS, tiny_settings

pytestmark = pytest.mark.per_framework

SPEC = SPECS["basic-small"]
# bfloat16 keeps 8 significant bits (unit roundoff 2^-8 = 3.9e-3); float32's steps follow
# float64 within 1e-7 of the loss and 4.5e-7 of the logits (test_train_equivalence).
BF16_RTOL = 5e-2
FLOAT32_LEVEL = 1e-4


# ---- planning -------------------------------------------------------------------------------


def test_each_run_trains_in_every_configured_precision_on_a_path_of_its_own():
    plan = plan_of(base=SMOKE)
    precisions = {run["precision"] for run in plan.train_runs}
    assert precisions == {"float32", "bfloat16"}  # the schema's default
    files = plan.train_files()
    assert len(files) == len(set(files)) == len(plan.train_runs)
    float32 = [
        f for f, r in zip(files, plan.train_runs, strict=True) if r["precision"] == "float32"
    ]
    assert all(f.endswith("-digits.nc") for f in float32)  # no tag: the path from before
    # bfloat16 in the mode each framework's users train in first (train.low_precision_modes)
    low = {(r["framework"], r["mode"]) for r in plan.train_runs if r["precision"] == "bfloat16"}
    assert low == {("torch", "eager"), ("jax", "jit"), ("tensorflow", "xla")}
    assert sum(f.endswith("-digits-bf16.nc") for f in files) == len(low)
    every = plan_of({"train": {"low_precision_modes": "all"}}, base=SMOKE)
    assert sum(r["precision"] == "bfloat16" for r in every.train_runs) == len(float32)


def test_a_low_precision_training_mode_outside_train_modes_or_the_setting_is_refused_naming_it():
    plan = plan_of({"train": {"modes": {"tensorflow": ["eager"]}}}, base=SMOKE)
    with pytest.raises(ValueError, match=r"low_precision_modes.tensorflow: \['xla'\] not in"):
        plan.train_files()
    plan = plan_of(base=SMOKE)
    run = next(r for r in plan.train_runs if r["mode"] == "compiled")
    wildcards = {k: v for k, v in run.items() if k != "precision"} | {"precision_tag": "-bf16"}
    with pytest.raises(ValueError, match=r"torch/compiled does not train in bfloat16"):
        plan.train_settings(wildcards)


def test_a_float32_train_jobs_params_are_those_from_before_precision():
    plan = plan_of(base=SMOKE)
    run = next(r for r in plan.train_runs if r["precision"] == "float32")
    wildcards = {k: v for k, v in run.items() if k != "precision"} | {"precision_tag": ""}
    assert plan.train_params(wildcards) == {"versions": FAKE_VERSIONS[run["framework"]]}
    section = validated(base=SMOKE)["train"]
    before = {k: v for k, v in section.items() if k not in ("precisions", "low_precision_modes")}
    assert plan.train_settings(wildcards) == before
    bf16 = wildcards | {"precision_tag": "-bf16"}
    assert plan.train_settings(bf16) == before | {"precision": "bfloat16"}
    assert plan.train_params(bf16) == plan.train_params(wildcards)


def test_a_precision_the_config_does_not_train_is_refused_naming_it():
    plan = plan_of({"train": {"precisions": ["float32"]}}, base=SMOKE)
    run = plan.train_runs[0]
    with pytest.raises(ValueError, match=r"training precision 'bfloat16' is not configured"):
        plan.train_settings(run | {"precision": "bfloat16"})


def test_the_run_settings_take_the_section_less_the_plans_keys():
    settings = tiny_settings()
    assert settings["precisions"] == ["float32", "bfloat16"]
    assert "precisions" not in run_settings(settings)
    assert "low_precision_modes" not in run_settings(settings | {"low_precision_modes": "all"})
    assert run_settings(settings, "bfloat16")["precision"] == "bfloat16"
    assert "precision" not in run_settings(settings, "float32")  # as before precision
    parse_settings(run_settings(settings, "bfloat16"))
    parse_settings(settings)  # the plan's key is accepted, not a run setting
    with pytest.raises(ValueError, match="unknown train settings"):
        parse_settings(settings | {"precison": "bfloat16"})
    with pytest.raises(ValueError, match="unknown training precision 'int8'"):
        run_settings(settings, "int8")


def test_an_unknown_training_precision_is_a_failed_run_naming_it():
    settings = tiny_settings() | {"precision": "int8"}
    run = training.run("torch", "eager", "tiny", "digits", settings)
    assert run.attrs["status"] == "failed"
    assert "unknown training precision 'int8'" in run.attrs["error_message"]


# ---- the frameworks train in it ------------------------------------------------------------


BF16_MODES = [
    ("torch", "eager"),
    ("jax", "jit"),
    ("tensorflow", "eager"),
    ("tensorflow", "function"),
    ("tensorflow", "xla"),
]


@pytest.mark.parametrize(("framework", "mode"), BF16_MODES)
def test_bfloat16_training_computes_its_products_in_bfloat16_over_float32_weights(framework, mode):
    module = load(framework, "train")
    weights = resnet.make_weights(SPEC, seed=SEED)
    rng = np.random.default_rng(SEED)
    images = rng.standard_normal(SPEC.input_shape(4)).astype(np.float32)
    labels = rng.integers(0, SPEC.classes, 4).astype(np.int32)
    trainer = module.build(
        SPEC, weights, OPTIMIZER, steps_per_epoch=1, mode=mode, device="cpu", precision="bfloat16"
    )
    logits, _ = reference_forward(SPEC, weights, images, training=True)
    loss = trainer.train_epoch([(to_layout(images, module.INPUT_LAYOUT), labels)])
    _, loss_rel = max_errors(loss, np.array([cross_entropy(logits, labels)]))
    assert loss_rel <= BF16_RTOL, f"step loss off by {loss_rel:.2e}"

    state = trainer.state()
    assert {value.dtype for value in state.values()} == {np.dtype(np.float32)}
    moved = max(float(np.max(np.abs(state[k] - weights[k]))) for k in weights)
    assert moved > 0  # the float32 weights took the step
    predicted = trainer.predict(to_layout(images, module.INPUT_LAYOUT))
    expected, _ = reference_forward(SPEC, state, images, training=False)
    _, logits_rel = max_errors(predicted, expected)
    # within bfloat16's rounding, and beyond float32's: the bfloat16 products ran
    assert FLOAT32_LEVEL < logits_rel <= BF16_RTOL, f"eval logits off by {logits_rel:.2e}"


@pytest.mark.parametrize("framework", ["torch", "jax", "tensorflow"])
def test_an_unknown_precision_is_refused_by_every_adapter_naming_it(framework):
    module = load(framework, "train")
    weights = resnet.make_weights(SPEC, seed=SEED)
    mode = "jit" if framework == "jax" else "eager"
    with pytest.raises(ValueError, match="unknown training precision 'float16'"):
        module.build(
            SPEC,
            weights,
            OPTIMIZER,
            steps_per_epoch=1,
            mode=mode,
            device="cpu",
            precision="float16",
        )


@pytest.mark.parametrize(
    ("framework", "mode"), [("torch", "eager"), ("jax", "jit"), ("tensorflow", "function")]
)
def test_a_bfloat16_run_records_its_policy_and_trains_in_each_framework(framework, mode):
    run = training.run(framework, mode, "tiny", "digits", run_settings(tiny_settings(), "bfloat16"))
    assert run.attrs["status"] == "ok", run.attrs.get("error_message")
    assert run.attrs["precision"] == "bfloat16"
    assert run.attrs["precision_policy"] == MIXED_BFLOAT16
    assert run.attrs["precision_how"] == load(framework, "train").BFLOAT16_POLICY
    assert np.isfinite(run["val_accuracy"].values).all()


# ---- beside float32 -------------------------------------------------------------------------


def _run(precision: str, epoch_s: float, accuracy: float, status: str = "ok", **evaluated):
    record = RunRecord(epochs=3)
    record.scalars |= {evaluated_in(p): value for p, value in evaluated.items()}
    record.per_epoch["epoch_time_s"] = np.array([3 * epoch_s, epoch_s, epoch_s])
    record.per_epoch["val_accuracy"] = np.array([0.5, 0.8, accuracy])
    record.scalars |= {"steady_epoch_time_s": epoch_s, "first_epoch_overhead_s": 2 * epoch_s}
    record.scalars |= {"peak_mem_bytes": 2.0**30}
    record.attrs |= {"framework": "torch", "mode": "eager", "model": "resnet8"}
    record.attrs |= {"dataset": "digits", "status": status}
    if precision != "float32":
        record.attrs["precision"] = precision
    return record.to_dataset()  # float32 without the attribute: a file from before precision


def test_a_low_precision_run_is_held_against_its_float32_run():
    stacked = stack_runs([_run("float32", 2.0, 0.90), _run("bfloat16", 1.6, 0.88)])
    paired = against_float32(summary_frame(stacked))
    assert len(paired) == 1
    row = paired.iloc[0]
    assert row["precision"] == "bfloat16"
    assert row["speedup"] == pytest.approx(2.0 / 1.6)
    assert row["accuracy_share"] == pytest.approx(0.88 / 0.90)
    assert not row["meets_bar"]  # 97.8% < 99%
    assert row["peak_mem_bytes_float32"] == 2.0**30


def test_the_report_marks_an_accuracy_below_the_bar_and_passes_one_above():
    below = stack_runs([_run("float32", 2.0, 0.90), _run("bfloat16", 1.6, 0.88)])
    text = precision_table(below)
    assert "### Precision against float32" in text
    assert "1.25×" in text and "**below 99%**" in text
    above = stack_runs([_run("float32", 2.0, 0.90), _run("bfloat16", 2.5, 0.895)])
    text = precision_table(above)
    assert "0.8×" in text and "| 99.4% |" in text and "below" not in text
    assert precision_table(stack_runs([_run("float32", 2.0, 0.9)])) == ""


def test_a_failed_low_precision_run_is_listed_without_a_ratio():
    stacked = stack_runs([_run("float32", 2.0, 0.9), _run("bfloat16", np.nan, np.nan, "failed")])
    text = precision_table(stacked)
    failed_row = text.split("| failed |")[1].split("\n")[0]
    assert "| — |" in failed_row and "%" not in failed_row


def test_the_run_path_tags_only_a_low_precision():
    run = dict(system="s", framework="torch", version="1", mode="eager", model="m", dataset="d")
    assert paths.TRAIN_RUN.format(**paths.with_tag(run)).endswith("/eager/m-d.nc")
    bf16 = paths.with_tag(run | {"precision": "bfloat16"})
    assert paths.TRAIN_RUN.format(**bf16).endswith("/eager/m-d-bf16.nc")


def test_a_float32_runs_trained_model_is_held_against_it_in_each_precision():
    run = _run("float32", 2.0, 0.90, bfloat16=0.90, int8_static=0.85)
    stacked = stack_runs([run, _run("bfloat16", 1.6, 0.89)])
    paired = evaluated_against_float32(summary_frame(stacked))
    paired = paired.dropna(subset=["accuracy"]).set_index("precision")
    assert list(paired.index) == ["bfloat16", "int8_static"]  # the bfloat16 run has none
    assert paired.loc["bfloat16", "accuracy_share"] == pytest.approx(1.0)
    assert paired.loc["int8_static", "accuracy_share"] == pytest.approx(0.85 / 0.90)
    assert list(paired["meets_bar"]) == [True, False]
    text = evaluated_table(stacked)
    assert "### The trained model in lower precision" in text
    assert "| 90.0% (100.0%) |" in text and "| 85.0% (94.4% **below 99%**) |" in text


def test_the_trained_models_table_has_a_column_per_evaluation_any_run_made():
    """Runs of two frameworks: ONNX Runtime's int8 in one, none in the other (a dash); an
    evaluation no run made has no column."""
    torch_run = _run("float32", 2.0, 0.90, bfloat16=0.9, int8_onnxrt=0.88, int8_static=np.nan)
    jax_run = _run("float32", 2.0, 0.80, bfloat16=0.8)
    jax_run.attrs["framework"], jax_run.attrs["mode"] = "jax", "jit"
    lines = evaluated_table(stack_runs([torch_run, jax_run])).splitlines()
    header = next(line for line in lines if line.startswith("| trained in float32"))
    assert header.endswith("| bfloat16 | int8 (ONNX Runtime) |")  # no int8_static column
    jax_row = next(line for line in lines if line.startswith("| jax/jit"))
    assert jax_row.endswith("| 80.0% (100.0%) | — |")
    torch_row = next(line for line in lines if line.startswith("| torch/eager"))
    assert "| 88.0% (97.8% **below 99%**) |" in torch_row


@pytest.mark.torch
def test_a_float32_torch_run_evaluates_its_trained_model_in_each_precision_torch_runs():
    settings = tiny_settings()
    torch_run = training.run("torch", "eager", "tiny", "digits", settings)
    assert torch_run.attrs["status"] == "ok", torch_run.attrs.get("error_message")
    outcome = json.loads(torch_run.attrs["evaluated_in"])
    ran = ["bfloat16", "int8_static", "int8_onnxrt", "int8_static_onnxrt"]
    assert outcome == dict.fromkeys(ran, "ok") | {"int8": outcome["int8"]}
    assert outcome["int8"].startswith("not run: torch's own modes run no int8")
    final = float(torch_run["val_accuracy"][-1])
    for evaluation in ran:
        accuracy = float(torch_run[evaluated_in(evaluation)])
        assert 0 < accuracy <= 1 and abs(accuracy - final) < 0.2, (evaluation, accuracy, final)
    details = json.loads(torch_run.attrs["evaluated_in_details"])
    assert details["int8_static_onnxrt"]["quant_format"] == "QDQ"
    spent = json.loads(torch_run.attrs["evaluated_in_s"])  # what each cost the job
    assert set(spent) == set(outcome) and all(seconds > 0 for seconds in spent.values())
    assert details["int8_onnxrt"]["integer_products"]  # ORT's own quantization ran


@pytest.mark.tensorflow
def test_a_float32_tensorflow_run_evaluates_its_trained_model_in_each_precision_it_runs():
    tf_run = training.run("tensorflow", "function", "tiny", "digits", tiny_settings())
    evaluations = ["bfloat16", "int8", "int8_static", "int8_onnxrt", "int8_static_onnxrt"]
    assert json.loads(tf_run.attrs["evaluated_in"]) == dict.fromkeys(evaluations, "ok")
    details = json.loads(tf_run.attrs["evaluated_in_details"])
    assert "full-integer" in details["int8_static"]["optimizations"]
    assert "dynamic-range" in details["int8"]["optimizations"]
    assert details["int8_static"]["quantize_s"] > 0
    assert "tf2onnx" in details["int8_onnxrt"]["exported_by"]
    for evaluation in evaluations:
        assert 0 < float(tf_run[evaluated_in(evaluation)]) <= 1, evaluation


@pytest.mark.jax
def test_a_float32_jax_run_evaluates_its_trained_model_in_bfloat16_and_says_why_no_int8():
    settings = tiny_settings()
    jax_run = training.run("jax", "jit", "tiny", "digits", settings)
    outcome = json.loads(jax_run.attrs["evaluated_in"])
    assert outcome["bfloat16"] == "ok" and outcome["int8_static"].startswith("not run: jax")
    assert outcome["int8_onnxrt"].startswith("not run: jax exports no ONNX model")
    assert np.isnan(float(jax_run[evaluated_in("int8_static")]))
    bf16_run = training.run("jax", "jit", "tiny", "digits", run_settings(settings, "bfloat16"))
    assert "evaluated_in" not in bf16_run.attrs  # only a float32 run's model


def test_the_findings_say_what_lower_precision_did_to_training():
    from types import SimpleNamespace

    from fwbench.present.report.training import training_findings

    runs = [
        _run("float32", 2.0, 0.90, bfloat16=0.90, int8_static=0.85),
        _run("bfloat16", 1.6, 0.89),
    ]
    stacked = stack_runs(runs)
    context = SimpleNamespace(training=(SimpleNamespace(content=stacked),))
    trained, evaluated = training_findings(context, None)
    assert "torch/eager bfloat16 1.25× as fast, 98.9% of float32's accuracy" in trained
    assert trained.endswith("below the 99% bar.")
    assert "1 of 2 evaluations keep 99% of float32's accuracy (shares 94.4%–100.0%)" in evaluated
    assert evaluated.endswith("below the bar: torch/eager as int8_static 94.4%.")
    assert training_findings(context, "elsewhere") == []  # another system's runs


def test_a_failed_onnx_export_of_the_trained_model_is_tried_once_for_every_evaluation():
    from fwbench.training.run import _OnnxExport

    class NoExport:
        calls = 0

        def onnx_export(self, path, example):
            NoExport.calls += 1
            raise NotImplementedError("this framework exports no ONNX model")

    onnx = _OnnxExport(NoExport(), "unused", np.zeros((2, 3), np.float32))
    for precision in ("int8", "int8_static"):
        with pytest.raises(NotImplementedError, match="exports no ONNX model"):
            onnx.quantized(precision, [])
    assert NoExport.calls == 1
