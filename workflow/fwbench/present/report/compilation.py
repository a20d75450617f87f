"""The method's compile table: per variant how the framework says it compiled, whether it
really ran compiled, its graphs, breaks and fallbacks, and the ops left to eager kernels."""

from __future__ import annotations

import math
from typing import Any

from fwbench.io.stats_file import StatsView
from fwbench.io.variables import V
from fwbench.present.format import MISSING, fixed


def compile_rows(view: StatsView) -> list[list[Any]]:
    """One row per variant, from the per-variant compile evidence of stats.nc."""
    rows = []
    for framework, mode in view.variants():

        def value(name: str, framework=framework, mode=mode) -> Any:
            return view.of_variant(name, framework, mode)

        low, high = value(V.variant_graphs_min), value(V.variant_graphs_max)
        graphs = MISSING
        if not math.isnan(low):
            graphs = str(int(low)) if low == high else f"{int(low)}–{int(high)}"
        ran = fixed(value(V.variant_cells), digits=0)
        rows.append(
            [
                framework,
                mode,
                value(V.variant_compile_how) or MISSING,
                f"{fixed(value(V.variant_compiled_cells), digits=0)} of {ran} cells",
                graphs,
                fixed(value(V.variant_graph_breaks), digits=0),
                fixed(value(V.variant_fallbacks), digits=0),
                value(V.variant_eager_ops) or "none",
            ]
        )
    return rows


RECURRENT_EAGER = (
    "\nEager ops in the graph: ops torch inductor did not lower, which run as the same aten "
    "kernel eager torch calls (GEMMs and convolutions, library calls in both, are not "
    "counted); a compiled cell with any is flagged `partially_compiled`: its speedup over "
    "eager is not the compiler's alone. XLA (jax jit, TensorFlow xla) compiles a whole "
    "function or fails, so it leaves no such ops. What eager means for the recurrent layers: "
    "torch runs nn.RNN/nn.LSTM as one fused aten kernel over the whole sequence (oneDNN on CPU, "
    "cuDNN on GPU); JAX eager runs a Python loop over the time steps, op by op (jit: "
    "lax.scan); TensorFlow eager runs Keras' recurrence step by step (cuDNN off for XLA's "
    "sake on GPU). So rnn and lstm eager latencies compare a fused kernel with per-step "
    "dispatch, not the same computation path.\n"
)
