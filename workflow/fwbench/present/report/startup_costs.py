"""A system's start-up costs: per variant and architecture at the table batch, what a fresh
process waits for its first answer (fwbench.present.startup's table; its figure is among the
figures)."""

from __future__ import annotations

from fwbench.present.report.context import ReportContext, SystemPart
from fwbench.present.startup import startup_table

INTRO = (
    "What a fresh process pays before its first answer, per mode: importing the framework "
    "(or, for `onnxrt` and `litert`, the runtime alone), building the model (an export mode: "
    "loading the artifact, creating the session), and the first call with an empty compile "
    "cache (process 0 of each cell). The export or conversion is paid once, offline, by the "
    "export job. The warm first call is the median over the cell's later processes, each a "
    "fresh process that starts from a copy of process 0's on-disk compile cache (inductor's, "
    "the JAX persistent compilation cache; TensorFlow keeps none): a cache left on disk, "
    "never one left in memory. Cells measured in one process have no warm figure."
)


def startup_section(context: ReportContext, part: SystemPart) -> str:
    batch = part.view.table_batch
    return f"## Start-up costs (batch {batch})\n\n{INTRO}\n\n{startup_table(part.view, batch)}"
