"""What a deployment path does not support, told apart from a failure, in one place: the
deployment support matrix, the Precision section, the findings' counts and the report's opening
line all ask `unsupported`.

A path does not support a model where its runtime or converter refuses it by design, in its own
words: ONNX Runtime's CPU provider has no bfloat16 Gemm/MatMul or Conv kernel (torch's bf16 export
is refused with NOT_IMPLEMENTED, tf2onnx's mixed float16/bfloat16 graph at load: both raise
ONNXRuntimeError), and LiteRT's builtin ops have no dynamic-length recurrence (the TFLite
converter asks for Flex ops, SELECT_TF_OPS, which fwbench does not enable: rnn, lstm). Any other
error is a failure. The rules go by the path's runtime (frameworks.runtime_of), never by the
framework's name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd

from fwbench import frameworks
from fwbench.io.dims import FLOAT32, CellKey
from fwbench.io.stats_file import StatsView
from fwbench.io.variables import V
from fwbench.precisions import BFLOAT16
from fwbench.present.report.context import ReportContext


@dataclass(frozen=True)
class Unsupported:
    """A refusal by design: in `runtime` (fwbench.runtimes), in `precision` (None: any), an
    error matching `pattern`; `reason` says why in a few words."""

    runtime: str
    shown: str  # the runtime as its users name it
    precision: str | None
    pattern: re.Pattern
    reason: str

    def label(self, archs: Iterable[str]) -> str:
        """'bfloat16 on ONNX Runtime', or 'LiteRT rnn/lstm' for a refusal of any precision."""
        if self.precision is not None:
            return f"{self.precision} on {self.shown}"
        return f"{self.shown} {'/'.join(dict.fromkeys(archs))}"


RULES = (
    Unsupported(
        "onnxrt",
        "ONNX Runtime",
        BFLOAT16,
        re.compile(r"ONNXRuntimeError|NOT_IMPLEMENTED|tensor\(bfloat16\)"),
        "no CPU kernel",
    ),
    Unsupported(
        "litert",
        "LiteRT",
        None,
        re.compile(r"Flex|SELECT_TF_OPS|Select TF ops|TensorList"),
        "converter needs Flex ops",
    ),
)
NOT_SUPPORTED = "Not supported by their path"


def unsupported(framework: str, mode: str, precision: str, error: object) -> Unsupported | None:
    """The rule that makes this failure a refusal by design, or None: a failure."""
    if not isinstance(error, str) or not error:
        return None
    runtime = frameworks.runtime_of(framework, mode) if framework in frameworks.MODES else None
    for rule in RULES:
        if rule.runtime != runtime or rule.precision not in (None, precision):
            continue
        if rule.pattern.search(error):
            return rule
    return None


@dataclass(frozen=True)
class Refused:
    """One model a path refused: an architecture in a precision on a path, on a system."""

    system: str
    framework: str
    mode: str
    arch: str
    precision: str
    rule: Unsupported


def refused_checks(rows: pd.DataFrame | None) -> list[Refused]:
    """The equivalence rows that failed because their path does not support their model."""
    if rows is None:
        return []
    found = []
    failed = rows["pass"].astype(str).str.lower() != "true"
    for row in rows[failed].to_dict("records"):
        precision = row.get("precision")
        precision = precision if isinstance(precision, str) else FLOAT32
        framework, mode, arch = row["framework"], row["mode"], row["arch"]
        if rule := unsupported(framework, mode, precision, row.get("error")):
            system = str(row.get("system", ""))
            found.append(Refused(system, framework, mode, arch, precision, rule))
    return found


def refused_cells(context: ReportContext) -> list[Refused]:
    """The failed cells, of every system and precision, whose path does not support them."""
    found = []
    for part in context.parts:
        for precision in part.view.precisions():
            view = part.view.in_precision(precision)
            for key in view.failed():
                if rule := unsupported(*key.variant, key.precision, failure_text(view, key)):
                    found.append(Refused(part.name or "", *key.variant, key.arch, precision, rule))
    return found


def failure_text(view: StatsView, key: CellKey) -> str:
    """A failed cell's error type and message, as `unsupported` reads them."""
    return f"{view.value(V.error_type, key)}: {view.value(V.error, key)}"


def refused_keys(view: StatsView) -> list[CellKey]:
    """The view's failed cells that their path does not support."""
    return [key for key in view.failed() if is_refused(view, key)]


def is_refused(view: StatsView, key: CellKey) -> bool:
    """Whether a failed cell failed because its path does not support it."""
    return unsupported(*key.variant, key.precision, failure_text(view, key)) is not None


def unsupported_line(context: ReportContext) -> str:
    """'**Not supported by their path:** bfloat16 on ONNX Runtime (no CPU kernel, 10 models),
    LiteRT rnn/lstm (converter needs Flex ops, 4 models).', or '' where nothing was refused.
    A model: an architecture in a precision on a path (on a system), counted once however many
    of its cells and checks were refused."""
    models = {
        (r.system, r.framework, r.mode, r.arch, r.precision): r
        for r in refused_checks(context.equivalence) + refused_cells(context)
    }
    groups: dict[Unsupported, list[Refused]] = {}
    for refused in models.values():
        groups.setdefault(refused.rule, []).append(refused)
    if not groups:
        return ""
    parts = []
    for rule in RULES:
        if rule in groups:
            found = groups[rule]
            count = f"{len(found)} {'model' if len(found) == 1 else 'models'}"
            archs = sorted({r.arch for r in found}, key=_arch_order(context))
            parts.append(f"{rule.label(archs)} ({rule.reason}, {count})")
    return f"**{NOT_SUPPORTED}:** " + ", ".join(parts) + ".\n"


def _arch_order(context: ReportContext):
    """Architectures in the statistics' order; any other after them, by name."""
    order = [str(a) for a in context.stats["arch"].values] if "arch" in context.stats.dims else []
    return lambda arch: (order.index(arch) if arch in order else len(order), arch)
