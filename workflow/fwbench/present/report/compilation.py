"""The method's compile table: per variant how the framework says it compiled, whether it
really ran compiled, its graphs, breaks and fallbacks, and the ops left to eager kernels."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from fwbench.io.dims import STATUS_OK
from fwbench.present.figure_data import variants
from fwbench.present.format import MISSING, fixed


def compile_rows(stats: xr.Dataset, bench: xr.Dataset | None) -> list[list[Any]]:
    rows = []
    for framework, mode in variants(stats):
        cell = stats.sel(framework=framework, mode=mode)
        ok = cell["status"].values == STATUS_OK
        compiled = cell["compiled"].values[ok]
        really = f"{int(np.nansum(compiled == 1))} of {int(ok.sum())} cells"
        how, graphs, breaks, fallbacks = MISSING, MISSING, MISSING, MISSING
        eager = _eager_ops(cell, ok)
        if bench is not None:
            at = bench.sel(framework=framework, mode=mode)
            hows = sorted({str(h) for h in at["compile_how"].values[ok] if str(h)})
            how = "; ".join(hows) or MISSING
            graph_values = at["graph_count"].values[ok]
            if np.isfinite(graph_values).any():
                low, high = int(np.nanmin(graph_values)), int(np.nanmax(graph_values))
                graphs = str(low) if low == high else f"{low}–{high}"
            breaks = fixed(float(np.nansum(at["graph_breaks"].values[ok])), digits=0)
            fallbacks = fixed(float(np.nansum(at["fallbacks"].values[ok])), digits=0)
        rows.append([framework, mode, how, really, graphs, breaks, fallbacks, eager])
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


def _eager_ops(cell: xr.Dataset, ok: np.ndarray) -> str:
    """The distinct ops a variant's compiled graphs left to eager kernels, with the cells."""
    if "eager_ops" not in cell:
        return MISSING
    found = sorted({str(text) for text in cell["eager_ops"].values[ok] if str(text)})
    return "; ".join(found) or "none"
