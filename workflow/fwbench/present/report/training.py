"""The training results, when training inputs are given: one row per run of the stacked runs
(train files stacked: one dim per run key plus `epoch`; see fwbench.present.plots_training),
a CSV's rows as they are, or Markdown embedded as it is."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd
import xarray as xr

from fwbench.io.dims import STATUS_ABSENT, STATUS_OK
from fwbench.io.train_file import evaluation_parts
from fwbench.present.format import MISSING, fixed, percent, times
from fwbench.present.report.context import ReportContext
from fwbench.present.report.markdown import frame_table, named, table
from fwbench.training.summary import (
    ACCURACY_SHARE_BAR,
    against_float32,
    evaluated_against_float32,
    summary_frame,
)

# Per-run training quantities shown when the run dataset has them: (variable, header, scale).
TRAINING_COLUMNS = (
    ("steady_epoch_time_s", "steady epoch s", 1.0),
    ("first_epoch_overhead_s", "first-epoch overhead s", 1.0),
    ("time_to_target_s", "time to target s", 1.0),
    ("steady_samples_per_s", "steady samples/s (epochs 2+)", 1.0),
    ("final_val_accuracy", "final val. accuracy %", 100.0),
    ("compiled", "compiled", 1.0),
)


def _run_value(run: xr.Dataset, name: str, scale: float) -> float:
    return float(run[name].values) * scale if name in run else math.nan


def training_runs_table(train: xr.Dataset) -> str:
    """One row per run (ok or failed) of a stacked training dataset."""
    if "status" not in train:
        raise ValueError("the training dataset has no 'status' variable (one per run)")
    keys = [d for d in train["status"].dims]
    columns = [(name, header, scale) for name, header, scale in TRAINING_COLUMNS if name in train]
    rows = []
    status = train["status"].values
    for index in np.ndindex(*status.shape):
        if status[index] == STATUS_ABSENT:
            continue
        run = train.isel(dict(zip(keys, index, strict=True)))
        labels = [str(run[d].item()) for d in keys]
        values = [_run_value(run, name, scale) for name, _, scale in columns]
        error = str(run["error"].item()) if "error" in run else ""
        rows.append([*labels, str(status[index]), *values, error])
    header = [*keys, "status", *(h for _, h, _ in columns), "error"]
    return table(header, rows)


def _pair(row: pd.Series, name: str, scale: float = 1.0, digits: int = 2) -> str:
    """`float32 → low` of one quantity of a row of training.summary.against_float32."""
    low, base = row[name], row[f"{name}_float32"]
    return f"{fixed(base, scale, digits)} → {fixed(low, scale, digits)}"


def _share(share: float) -> str:
    """An accuracy share to 0.1%: whole percents would print 98.6% as the bar's 99%."""
    return f"{fixed(share, 100.0, 1)}%" if np.isfinite(share) else MISSING


def _accuracy(row: pd.Series) -> str:
    share = row["accuracy_share"]
    if not np.isfinite(share):
        return MISSING
    mark = "" if row["meets_bar"] else f" **below {percent(ACCURACY_SHARE_BAR)}**"
    return f"{_share(share)}{mark}"


def _paired(train: xr.Dataset, pairing: Callable[[pd.DataFrame], pd.DataFrame]) -> pd.DataFrame:
    """`pairing` (training.summary's against_float32 or evaluated_against_float32) of the
    stacked runs; empty for runs aggregated before precision was a dimension."""
    if "precision" not in train.dims:
        return pd.DataFrame()
    return pairing(summary_frame(train))


def _run_labels(row: pd.Series) -> list[str]:
    """variant, model/data, precision: the first columns of both precision tables."""
    return [
        f"{row['framework']}/{row['mode']}",
        f"{row['model']}/{row['dataset']}",
        _evaluation_label(row["precision"]),
    ]


def _evaluation_label(evaluation: str) -> str:
    """A precision, or an evaluation of train_file.EVALUATED_IN: 'int8 (ONNX Runtime)'."""
    precision, in_onnxrt = evaluation_parts(evaluation)
    return f"{precision} (ONNX Runtime)" if in_onnxrt else precision


def precision_table(train: xr.Dataset) -> str:
    """Each run in a low precision beside its float32 run: the speedup of its steady epochs,
    epoch time, compile overhead, time to target, peak memory, final accuracy, and that
    accuracy as a share of float32's against MLPerf's bar. Empty without such a run."""
    paired = _paired(train, against_float32)
    if paired.empty:
        return ""
    rows = [
        [
            *_run_labels(row),
            row["status"],
            times(row["speedup"]),
            _pair(row, "steady_epoch_time_s"),
            _pair(row, "first_epoch_overhead_s"),
            _pair(row, "time_to_target_s"),
            _pair(row, "peak_mem_bytes", 2**-20, 0),
            _pair(row, "final_val_accuracy", 100.0, 1),
            _accuracy(row),
        ]
        for _, row in paired.iterrows()
    ]
    header = [
        "variant",
        "model/data",
        "precision",
        "status",
        "speedup",
        "steady epoch s (fp32 → it)",
        "first-epoch overhead s",
        "time to target s",
        "peak memory MiB",
        "final val. accuracy %",
        f"accuracy / fp32's (bar {percent(ACCURACY_SHARE_BAR)})",
    ]
    note = (
        "\nLower-precision training beside float32: one run each, so the speedup is a ratio of "
        "the steady epochs' medians without a CI; the bar is MLPerf's (a reduced-precision "
        "result keeps 99% of the float32 accuracy).\n"
    )
    return "### Precision against float32\n\n" + table(header, rows) + note


def evaluated_table(train: xr.Dataset) -> str:
    """Each float32 run's trained model evaluated as the framework's cells run each lower
    precision: a row per run, a column per evaluation any run made (train_file.EVALUATED_IN),
    each its accuracy and that as a share of float32's against MLPerf's bar. Empty without
    such a run."""
    paired = _paired(train, evaluated_against_float32)
    if paired.empty:
        return ""
    made = paired.dropna(subset=["accuracy"])["precision"].unique().tolist()
    if not made:
        return ""
    keys = ["framework", "mode", "model", "dataset"]
    rows = []
    for _, run in paired.groupby(keys, sort=False):
        by_evaluation = {row["precision"]: row for _, row in run.iterrows()}
        first = run.iloc[0]
        rows.append(
            [
                f"{first['framework']}/{first['mode']}",
                f"{first['model']}/{first['dataset']}",
                fixed(first["final_val_accuracy"], 100.0, 1),
                *(_evaluated(by_evaluation.get(e)) for e in made),
            ]
        )
    header = ["trained in float32", "model/data", "float32 val. accuracy %"]
    header += [_evaluation_label(e) for e in made]
    note = (
        "\nEach entry: the model's validation accuracy in that precision, and (in brackets) "
        f"that as a share of float32's against MLPerf's bar ({percent(ACCURACY_SHARE_BAR)}). "
        "The float32-trained model cast (bfloat16: weights and activations) or quantized "
        "as the framework's cells run that precision (int8_static calibrated on 8 training "
        "batches: torch's PT2E run as its quantize/dequantize graph, TensorFlow's LiteRT "
        "full-integer model in its TFLite interpreter; int8: LiteRT's dynamic-range model; "
        "ONNX Runtime: its dynamic or static QDQ quantization of the framework's ONNX export, "
        "as the onnxrt cells), evaluated on the validation split after the timed epochs; — "
        "where the framework does not run it (the train file's `evaluated_in` says why).\n"
    )
    return "### The trained model in lower precision\n\n" + table(header, rows) + note


def _evaluated(row: pd.Series | None) -> str:
    """'98.9% (99.5%)': an evaluation's accuracy and its share of float32's; — where none."""
    if row is None or not np.isfinite(row["accuracy"]):
        return MISSING
    return f"{fixed(row['accuracy'], 100.0, 1)}% ({_accuracy(row)})"


def training_findings(context: ReportContext, system: str | None) -> list[str]:
    """What lower precision did to training on `system` (None: every run), from the stacked
    runs: each bfloat16 run's speedup and accuracy against float32's, and the float32-trained
    model's accuracy in each precision it was evaluated in, against MLPerf's bar."""
    lines = []
    for loaded in context.training:
        train = loaded.content
        if not isinstance(train, xr.Dataset) or "precision" not in train.dims:
            continue
        frame = summary_frame(train)
        if system is not None:
            frame = frame[frame["system"] == system]
        # one finding per lower-precision run: each is a cell of its own
        lines += [
            f"Training against float32 (Training): {_trained_phrase(row)}."
            for _, row in against_float32(frame).iterrows()
        ]
        evaluated = evaluated_against_float32(frame).dropna(subset=["accuracy"])
        if not evaluated.empty:
            lines.append(_evaluated_finding(evaluated))
    return lines


def _bar_word(row: pd.Series) -> str:
    return "" if row["meets_bar"] else f", below the {percent(ACCURACY_SHARE_BAR)} bar"


def _trained_phrase(row: pd.Series) -> str:
    label = f"{row['framework']}/{row['mode']} {row['precision']}"
    if row["status"] != STATUS_OK:
        return f"{label} failed"
    accuracy = f"{_share(row['accuracy_share'])} of float32's accuracy"
    return f"{label} {times(row['speedup'])} as fast, {accuracy}{_bar_word(row)}"


def _evaluated_finding(evaluated: pd.DataFrame) -> str:
    """How many of the trained models' evaluations keep MLPerf's bar, the range of their
    shares of float32's accuracy, and each one below it named."""
    shares = evaluated["accuracy_share"]
    kept = int(evaluated["meets_bar"].sum())
    text = (
        f"The float32-trained model in lower precision (Training): {kept} of {len(evaluated)} "
        f"evaluations keep {percent(ACCURACY_SHARE_BAR)} of float32's accuracy (shares "
        f"{_share(shares.min())}–{_share(shares.max())})"
    )
    below = evaluated[~evaluated["meets_bar"]]
    if below.empty:
        return text + "."
    names = [_evaluated_phrase(row) for _, row in below.iterrows()]
    return text + f"; below the bar: {named(names, 'the Training section')}."


def _evaluated_phrase(row: pd.Series) -> str:
    label = f"{row['framework']}/{row['mode']} as {_evaluation_label(row['precision'])}"
    return f"{label} {_share(row['accuracy_share'])}"


def training_section(context: ReportContext) -> str:
    if not context.training:
        return ""
    parts = ["## Training\n"]
    for loaded in context.training:
        if isinstance(loaded.content, xr.Dataset):
            parts.append(f"From `{loaded.path.name}`:\n\n" + training_runs_table(loaded.content))
            parts.append(precision_table(loaded.content))
            parts.append(evaluated_table(loaded.content))
        elif isinstance(loaded.content, pd.DataFrame):
            parts.append(f"From `{loaded.path.name}`:\n\n" + frame_table(loaded.content))
        else:
            parts.append(str(loaded.content).strip() + "\n")
    return "\n".join(parts)
