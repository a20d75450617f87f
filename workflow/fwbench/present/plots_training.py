"""The training figures, each drawn from a dataset of training runs only.

The dataset has the train file's variables (fwbench.io.train_file) with one dimension per run key
(framework, mode, and e.g. model, dataset) plus `epoch`, and a `status` per run ('ok',
'failed', or 'absent' where no run exists) — the shape of results/aggregate/train.nc.
`fwbench.training.summary.stack_runs` builds it from train files.

training_time    steady epoch time and first-epoch overhead per run; time to the target
training_curves  validation accuracy against cumulative training time, per (model, dataset)
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from fwbench.io.dims import STATUS_ABSENT, STATUS_FAILED, STATUS_OK, variants_in
from fwbench.present.figure_data import listed
from fwbench.present.style import (
    FLAG_COLOR,
    add_note,
    bar_style,
    marker_style,
    message_axes,
    new_figure,
    place_legend,
    plain_log_ticks,
    variant_handles,
    variant_label,
)
from fwbench.training.summary import VARIANT_DIMS


def _run_groups(train: xr.Dataset) -> list[dict[str, object]]:
    """The selections of the non-variant run dims (e.g. model, dataset), one per panel."""
    extra = [d for d in train["status"].dims if d not in VARIANT_DIMS]
    groups = [{}]
    for dim in extra:
        groups = [g | {dim: v} for g in groups for v in train[dim].values.tolist()]
    return groups


def _group_title(group: dict[str, object]) -> str:
    return " on ".join(str(v) for v in group.values()) or "all runs"


def _failed_runs(train: xr.Dataset) -> list[str]:
    status = train["status"]
    names = []
    for index in zip(*np.nonzero(status.values == STATUS_FAILED), strict=True):
        names.append(
            "/".join(str(status[d].values[i]) for d, i in zip(status.dims, index, strict=True))
        )
    return names


def draw_training_time(train: xr.Dataset) -> Figure:
    groups, present = _run_groups(train), variants_in(train)
    figure = new_figure(11, 1.4 + 0.45 * max(len(present) * len(groups), 4))
    time_ax, target_ax = figure.subplots(1, 2, sharey=True)
    figure.suptitle("Training cost per run: lower is better")
    labels, row = [], 0
    for group in groups:
        for framework, mode in present:
            run = train.sel(framework=framework, mode=mode, **group)
            if str(run["status"].item()) != STATUS_OK:
                continue
            _draw_run_bars(time_ax, target_ax, run, row, bar_style(framework, mode))
            labels.append(f"{variant_label(framework, mode)} · {_group_title(group)}")
            row += 1
    if not labels:
        message_axes(time_ax, "No training run finished.")
        message_axes(target_ax, "")
        add_note(figure, [f"Failed runs: {listed(_failed_runs(train))}."])
        return figure
    _training_time_axes(time_ax, target_ax, train, labels)
    handles = [
        *variant_handles(present, bars=True),
        Patch(
            facecolor="white",
            edgecolor="black",
            hatch="xx",
            label="first-epoch overhead (compilation, warm-up)",
        ),
    ]
    place_legend(figure, handles)
    failed = _failed_runs(train)
    add_note(figure, [f"Not drawn (run failed): {listed(failed)}." if failed else ""])
    return figure


def _draw_run_bars(time_ax, target_ax, run: xr.Dataset, row: int, style: dict) -> None:
    """One run's row: steady epoch time with its first-epoch overhead, and time to target."""
    steady = float(run["steady_epoch_time_s"])
    overhead = float(run["first_epoch_overhead_s"])
    time_ax.barh(row, steady, **style)
    if math.isfinite(overhead) and overhead > 0:
        time_ax.barh(
            row,
            overhead,
            left=steady,
            color="white",
            edgecolor=style["edgecolor"],
            hatch="xx",
            linewidth=0.8,
        )
    to_target = float(run["time_to_target_s"])
    if math.isfinite(to_target):
        target_ax.barh(row, to_target, **style)
    else:
        target_ax.text(0, row, " never reached", va="center", fontsize=8, color=FLAG_COLOR)


def _training_time_axes(time_ax, target_ax, train: xr.Dataset, labels: list[str]) -> None:
    time_ax.set_yticks(range(len(labels)), labels)
    time_ax.invert_yaxis()
    time_ax.set_xlabel("seconds per epoch")
    time_ax.set_title("Epoch time\nsteady + first-epoch overhead", fontsize=10)
    target = float(np.nanmax(train["target_accuracy"].values)) if "target_accuracy" in train else 0
    target_ax.set_xlabel("seconds of training (evaluation excluded)")
    target_ax.set_title(
        f"Time to {target:.0%} validation accuracy\n(summed epoch times)", fontsize=10
    )
    for ax in (time_ax, target_ax):
        ax.grid(True, axis="x", alpha=0.25)


def draw_training_curves(train: xr.Dataset) -> Figure:
    groups, present = _run_groups(train), variants_in(train)
    cols = min(len(groups), 2)
    figure = new_figure(5.5 * cols + 1.8, 4.2 * math.ceil(len(groups) / cols) + 0.4)
    axes = figure.subplots(math.ceil(len(groups) / cols), cols, squeeze=False, sharey=True)
    figure.suptitle("Validation accuracy against training time: up and left is better")
    for ax, group in zip(axes.flat, groups, strict=False):
        for framework, mode in present:
            run = train.sel(framework=framework, mode=mode, **group)
            if str(run["status"].item()) == STATUS_ABSENT:
                continue
            elapsed = np.nancumsum(run["epoch_time_s"].values)
            accuracy = run["val_accuracy"].values
            done = np.isfinite(run["epoch_time_s"].values) & np.isfinite(accuracy)
            if done.any():
                ax.plot(
                    elapsed[done],
                    100 * accuracy[done],
                    markersize=5,
                    linewidth=1.3,
                    linestyle="--" if str(run["status"].item()) == STATUS_FAILED else "-",
                    **marker_style(framework, mode),
                )
        if "target_accuracy" in train:
            target = float(np.nanmax(train["target_accuracy"].sel(**group).values))
            if math.isfinite(target):
                ax.axhline(100 * target, color=FLAG_COLOR, linestyle="--", linewidth=1)
        ax.set_xscale("log")
        plain_log_ticks(ax, "x")
        ax.set_title(_group_title(group))
        ax.grid(True, alpha=0.25)
    spare = list(axes.flat[len(groups) :])
    for ax in spare:
        ax.set_axis_off()
    figure.supxlabel("cumulative training time (s, log; evaluation excluded)")
    figure.supylabel("validation accuracy (%)")
    handles = [
        *variant_handles(present),
        Line2D([], [], color=FLAG_COLOR, linestyle="--", label="target accuracy"),
    ]
    place_legend(figure, handles, spare)
    failed = _failed_runs(train)
    add_note(
        figure,
        [
            "One point per epoch. The first epoch includes compilation and warm-up.",
            f"Failed runs (their finished epochs dashed): {listed(failed)}." if failed else "",
        ],
    )
    return figure
