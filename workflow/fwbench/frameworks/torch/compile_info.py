"""What torch.compile did, from dynamo's own counters: the CompileInfo of a runner or trainer.

Dynamo counts process-wide, so a caller takes a `counter_snapshot()` when it compiles and
reports the counts since then: graphs compiled (recompilations count as further graphs), graph
breaks, frames left to eager Python, and the reasons dynamo gave.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import torch

from fwbench.frameworks.protocols import CompileInfo

GROUPS = ("stats", "frames", "graph_break", "unimplemented", "inductor", "aot_autograd")
Snapshot = dict[str, Counter]


def counter_snapshot() -> Snapshot:
    """Dynamo's counters now, to subtract from a later snapshot."""
    from torch._dynamo.utils import counters

    return {group: Counter(counters[group]) for group in GROUPS}


def compile_info_since(
    start: Snapshot, how: str, details: dict[str, Any] | None = None
) -> CompileInfo:
    """The compilation since `start`; `details` are added to dynamo's. Raises RuntimeError
    while dynamo has seen no frame since `start` (the compiled callable was never called)."""
    now = counter_snapshot()
    delta = {group: now[group] - start[group] for group in GROUPS}
    frames = delta["frames"]["total"]
    if frames == 0:
        raise RuntimeError("compile_info() is valid only after the first call")
    graphs = delta["stats"]["unique_graphs"]
    breaks = delta["graph_break"] | delta["unimplemented"]
    return CompileInfo(
        compiled=graphs > 0,
        how=how,
        graph_count=graphs,
        graph_breaks=sum(delta["graph_break"].values()),
        # Frames dynamo could not convert run entirely in eager Python.
        fallbacks=frames - delta["frames"]["ok"],
        details={
            "frames": frames,
            "ops_captured": delta["stats"]["calls_captured"],
            "break_reasons": [reason.splitlines()[0] for reason in breaks],
            "inductor": dict(delta["inductor"]),
            "aot_autograd": dict(delta["aot_autograd"]),
            "torch": torch.__version__,
        }
        | (details or {}),
    )
