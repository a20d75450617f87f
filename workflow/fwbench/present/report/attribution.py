"""A system's "where the time goes" section: the four parts of each cell's median at the table
batch (fwbench.present.attribution's table; its figure is among the figures), and how each part
is measured."""

from __future__ import annotations

from fwbench.present.attribution import (
    attribution_table,
    closure_note,
    gain_table,
    step_table,
    unattributed,
)
from fwbench.present.report.context import ReportContext, SystemPart

METHOD = (
    "After each cell's timed samples, in process 0, never inside them, the framework's own "
    "profiler records a few calls (about 50 ms of them): torch.profiler; jax.profiler and "
    "TensorFlow's profiler, whose XSpace traces each adapter reads with its framework's own "
    "reader. From the "
    "trace, per call: the ops (eager) or launches (compiled) dispatched, and the time inside "
    "kernels, the union of the kernel events' intervals (an op's self time under torch; the "
    "graph executor's op kernels and XLA's thunks under TensorFlow and jax), less the length "
    "the same profiler records for the kernel of the mode's floor call (a 1-element op: the "
    "profiler's and the dispatcher's cost inside an event, not work). The four parts: the "
    "**roofline bound** (the cell's cache-aware lower bound); the **kernel excess** (kernel "
    "time beyond it; 0 where the profiler saw less); **dispatch**, the ops or launches per "
    "call × the mode's own floor, timed unprofiled (eager: one 1-element op; compiled: a "
    "1-element add through the same compiler: torch.compile with the cell's options, jax.jit, "
    "tf.function with or without XLA); and **the rest** (allocation, glue, Python around the "
    "ops, synchronization, idle), the median less the others; of the rest, the part outside "
    "the framework is the profiled call's time in which no event of it was open (the "
    "caller's Python between ops: model code, a layer library's machinery), at "
    "the clean pace; the remainder is inside its ops beyond the floor. The median is the clean "
    "timing's; the profiled calls run slower and at another moment (this machine's speed "
    "moves within seconds), so the kernel time enters as its share of the profiled run's "
    "work (its wall less every event's cost, calibrated on the floor call against the same "
    "loop unprofiled just before and after; an event nested inside a kernel, as an XLA while "
    "loop's body or an ONNX Runtime Loop's subgraph, loses that whole cost from the kernel "
    "time) times the clean median; `attr_stretch` in stats.csv is that work over the median, "
    "far from 1 where the trace's events cost more than calibrated. Where the profiler's "
    "measured cost (the profiled calls less the same calls unprofiled right after), in the "
    "share of its events nested inside kernels, is more than the call itself, as in the "
    "rnn and lstm loops of XLA and ONNX Runtime with 340-1060 "
    "events a call, the kernel time is not resolved: its excess is unknown and in the rest, "
    "and the cell's `attribution` says so. What the profilers "
    "cannot see: XLA's fusions are one kernel each; a "
    "oneDNN primitive is one op; inductor's generated C++ kernels do not reach torch.profiler "
    "(a compiled torch cell's fused elementwise work is in the rest; its GEMMs and "
    "convolutions are seen); AOTInductor runs its kernels past torch's dispatcher (kernel "
    "excess unknown, in the rest; its one launch per call at torch's eager floor); an op whose "
    "Python path costs more than the floor's puts the difference in the rest. ONNX Runtime "
    "profiles only a session created with profiling on: the pass runs the calls on a twin of "
    "the timed session (same model, options and threads), one run is one launch at the floor "
    "of a one-Add model's run, and each node's kernel time is a kernel (a fused node is one; "
    "ORT records whole µs). LiteRT's Python interpreter has no profiler: a LiteRT cell's "
    "call is one launch (an invoke) at the floor of a one-ADD model's invoke, and its kernel "
    "time is not seen (kernel excess unknown, in the rest)."
)


CROSS_CHECKS = (
    "Without the profiler: α of the batch fit is the intercept of latency = α + β·batch over the "
    "variant's batches (the cost a call pays whatever its batch), to set against dispatch; the "
    "table after it splits what a compiled or exported mode saves against eager (positive: it "
    "spends less there) into dispatch removed, kernel time (roof + excess) and the rest."
)


STEPS = (
    "an rnn or lstm call runs layers × seq_len cell steps, each waiting on the one before; "
    "a step's time against its ops or launches × the floor plus its share of the roof, and "
    "against α of the batch fit per step, which needs no profiler"
)


def attribution_section(context: ReportContext, part: SystemPart) -> str:
    view = part.view
    batch = view.table_batch
    missing = unattributed(view, batch)
    without = (
        "\n\nWithout parts: " + "; ".join(f"`{variant}`: {why}" for variant, why in missing)
        if missing
        else ""
    )
    gains = gain_table(view, batch)
    steps = step_table(view, batch)
    return (
        f"## Where the time goes (batch {batch})\n\n{METHOD}{without}\n\n"
        f"{closure_note(view)}\n\n{CROSS_CHECKS}\n\n{attribution_table(view, batch)}"
        + (
            f"\nWhat compiling or exporting changed, part by part, against eager:\n\n{gains}"
            if gains
            else ""
        )
        + (f"\nPer recurrent step ({STEPS}):\n\n{steps}" if steps else "")
    )
