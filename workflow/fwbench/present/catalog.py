"""Every figure and table the workflow makes, listed once: its name (the file's stem), its
title in the report, which job draws it and the function that draws or renders it.

The rules take their outputs from here (figures.smk, tables.smk, report.smk), fwbench.present
.figures and fwbench.present.tables resolve the functions, and the report orders and titles
its figures and tables by it. Imports nothing heavy: the rules read it while Snakemake plans.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fwbench.io.variables import V

INFERENCE, SYSTEMS, TRAINING = "inference", "systems", "training"
MEDIAN = "the median"


@dataclass(frozen=True)
class Entry:
    name: str
    title: str
    function: str  # "module:function" under fwbench.present
    kind: str = INFERENCE  # figures: which job draws it (one per system, all systems, training)
    in_results: bool = True  # tables: embedded in the report's results section
    whiskers: str = ""  # figures: what its whiskers are the CI of ('' where it draws none)

    def resolve(self) -> Callable[..., Any]:
        module, function = self.function.split(":")
        return getattr(importlib.import_module(f"fwbench.present.{module}"), function)


FIGURES = (
    Entry(
        "hardware",
        "Hardware limits: GEMM peaks and STREAM bandwidth",
        "plots_hardware:draw_hardware",
    ),
    Entry("roofline", "Roofline per batch", "plots_roofline:draw_roofline"),
    Entry("latency", "Latency at the table batch", "plots_latency:draw_latency", whiskers=MEDIAN),
    Entry(
        "precision",
        "Lower precision: speedup against accuracy cost",
        "plots_precision:draw_precision",
        whiskers="the speedup over float32",
    ),
    Entry(
        "speedup", "Compile speedup", "plots_latency:draw_speedup", whiskers="the ratio of medians"
    ),
    Entry(V.efficiency, "Roofline efficiency", "plots_roofline:draw_efficiency"),
    Entry("scaling", "Batch scaling", "plots_latency:draw_scaling", whiskers=MEDIAN),
    Entry("stability", "Measurement stability", "plots_latency:draw_stability"),
    Entry("startup", "Start-up: time to first answer", "startup:draw_startup"),
    Entry("attribution", "Where the time goes", "attribution:draw_attribution"),
    Entry("systems", "Systems side by side", "plots_systems:draw_systems", SYSTEMS),
    Entry("training_time", "Training cost", "plots_training:draw_training_time", TRAINING),
    Entry("training_curves", "Training curves", "plots_training:draw_training_curves", TRAINING),
)
TABLES = (
    Entry("latency", "Latency", "tables:latency_table"),
    Entry("compile_speedup", "Compile speedup", "tables:compile_speedup_table"),
    Entry(V.efficiency, "Roofline efficiency", "tables:efficiency_table"),
    Entry("winners", "Winners", "tables:winners_table"),
    Entry("failed", "Failed cells", "tables:failed_table", in_results=False),
    Entry("flagged", "Flagged cells", "tables:flagged_table", in_results=False),
)


def figure_names(kind: str) -> list[str]:
    return [entry.name for entry in FIGURES if entry.kind == kind]


def table_names() -> list[str]:
    return [entry.name for entry in TABLES]


def whiskers_of(name: str) -> str:
    """What figure `name`'s whiskers are the CI of; '' where it draws none."""
    return next((entry.whiskers for entry in FIGURES if entry.name == name), "")


def titles(entries: tuple[Entry, ...]) -> dict[str, str]:
    return {entry.name: entry.title for entry in entries}
