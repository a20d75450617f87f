"""What torch.compile did, from dynamo's own counters: the CompileInfo of a runner or trainer.

Dynamo counts process-wide, so a caller takes a `counter_snapshot()` when it compiles and
reports the counts since then: graphs compiled (recompilations count as further graphs), graph
breaks, frames left to eager Python, and the reasons dynamo gave.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import torch
from torch._inductor.custom_graph_pass import CustomSchedulerPass

from fwbench.frameworks.protocols import CompileInfo

GROUPS = ("stats", "frames", "graph_break", "unimplemented", "inductor", "aot_autograd")
Snapshot = dict[str, Counter]


def counter_snapshot() -> Snapshot:
    """Dynamo's counters now, to subtract from a later snapshot."""
    from torch._dynamo.utils import counters

    return {group: Counter(counters[group]) for group in GROUPS}


def compile_info_since(
    start: Snapshot,
    how: str,
    details: dict[str, Any] | None = None,
    recorder: EagerOpRecorder | None = None,
) -> CompileInfo:
    """The compilation since `start`; `details` are added to dynamo's, and the ops `recorder`
    saw left to eager kernels. Raises RuntimeError while dynamo has seen no frame since
    `start` (the compiled callable was never called)."""
    now = counter_snapshot()
    delta = {group: now[group] - start[group] for group in GROUPS}
    frames = delta["frames"]["total"]
    graphs = delta["stats"]["unique_graphs"]
    # fullgraph=True captures its graph without counting a frame: a graph counts as a call.
    if frames == 0 and graphs == 0:
        raise RuntimeError("compile_info() is valid only after the first call")
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
            "library_ops": dict(recorder.library_ops) if recorder else None,
        }
        | (details or {}),
        eager_ops=eager_ops_text(recorder),
    )


# Library kernels inductor calls in place of generating code, exactly as eager torch does
# (BLAS/oneDNN GEMMs and convolutions, with or without freezing's prepacking): not a sign of
# an uncompiled hot path. Matched in the extern kernel's name.
LIBRARY_KERNELS = ("mm", "conv", "linear")


def _kernel_name(ir_node: Any) -> str:
    name = getattr(ir_node, "python_kernel_name", None) or getattr(ir_node, "op_overload", None)
    return str(name or type(ir_node).__name__)


def _is_multi_output(ir_node: Any) -> bool:
    return type(ir_node).__name__ == "MultiOutput"


class EagerOpRecorder(CustomSchedulerPass):
    """An inductor scheduler pass (before fusion) that changes nothing and records the extern
    kernels of the graph: what inductor calls instead of generating code. Outside the GEMM and
    convolution libraries, each is the aten kernel eager torch runs.

    A CustomSchedulerPass with a uuid, so that inductor's FX graph and AOT autograd caches work
    beside it: any other pass makes them bypass, and a later process of a cell (or a rounds
    worker) then compiled from scratch, 7–14 s, its "warm" first call a cold one. A cache hit
    skips the scheduler, so a compilation records only into an empty cache: process 0's, whose
    eager ops are the cell's (fwbench.io.variables: eager_ops pools the first text)."""

    def __init__(self) -> None:
        self.eager_ops: Counter[str] = Counter()
        self.library_ops: Counter[str] = Counter()

    def uuid(self) -> str:
        return "fwbench.EagerOpRecorder/1"  # it changes no graph: every recorder keys alike

    def __call__(self, nodes: list[Any]) -> list[Any]:
        from torch._inductor.scheduler import ExternKernelSchedulerNode

        for node in nodes:
            # MultiOutput nodes only unpack a multi-output kernel's results
            if isinstance(node, ExternKernelSchedulerNode) and not _is_multi_output(node.node):
                name = _kernel_name(node.node)
                library = any(part in name for part in LIBRARY_KERNELS)
                (self.library_ops if library else self.eager_ops)[name] += 1
        return nodes


def install_recorder() -> EagerOpRecorder | None:
    """A fresh recorder in inductor's pre-fusion scheduler pass for the compilations to come;
    None where this torch has no such hook. The compile caches stay on (EagerOpRecorder says
    why and what a cache hit records)."""
    import torch._inductor.config as inductor_config

    if not hasattr(inductor_config, "_pre_fusion_custom_pass"):
        return None
    recorder = EagerOpRecorder()
    inductor_config._pre_fusion_custom_pass = recorder
    return recorder


def eager_ops_text(recorder: EagerOpRecorder | None) -> str:
    if recorder is None:
        return ""
    return ", ".join(f"{name} ×{count}" for name, count in sorted(recorder.eager_ops.items()))
