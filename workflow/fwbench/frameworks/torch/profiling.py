"""torch.profiler's events read for the attribution pass (fwbench.measure.attribution): the
infer adapter's `profile`.

A dispatch is a top-level CPU op (a compiled region counts one launch). A kernel is the self
time (its interval less its children's) of an op below a top-level op, or of a top-level op
with nothing below it, unless the op only makes a view or reads metadata (METADATA_OPS: t,
expand, as_strided and the like do no data work) or wraps compiled code (WRAPPERS). The
top-level op's own self time is its dispatch, not a kernel.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import torch

from fwbench.frameworks.kernel_precision import (
    KERNEL_PRECISION_CALLS,
    KERNEL_TIME,
    KernelPrecision,
    of_onednn_log,
    of_work,
)
from fwbench.frameworks.trace import Trace, nested, self_time
from fwbench.host.onednn import stdout_captured

# torch.profiler's events around compiled code: neither a dispatch nor a kernel.
WRAPPERS = re.compile(
    r"^(Torch-Compiled Region|TorchDynamo Cache Lookup|Pregraph bytecode|AOTDispatcher|## |"
    r"CompiledFunction|ProfilerStep)"
)
NOT_DISPATCH = re.compile(r"^(TorchDynamo Cache Lookup|ProfilerStep)")
# aten ops that make a view, allocate or read metadata: no data work of their own.
METADATA_OPS = frozenset(
    {
        "aten::t",
        "aten::as_strided",
        "aten::transpose",
        "aten::expand",
        "aten::view",
        "aten::reshape",
        "aten::_reshape_alias",
        "aten::permute",
        "aten::unsqueeze",
        "aten::squeeze",
        "aten::slice",
        "aten::select",
        "aten::resolve_conj",
        "aten::resolve_neg",
        "aten::detach",
        "aten::alias",
        "aten::empty",
        "aten::empty_strided",
        "aten::_unsafe_view",
        "aten::flatten",
        "aten::unflatten",
        "aten::narrow",
        "aten::split",
        "aten::chunk",
        "aten::unbind",
        "aten::lift_fresh",
        "aten::numpy_T",
        "aten::contiguous",
        "aten::expand_as",
        "aten::view_as",
    }
)


def _is_kernel(event: Any) -> bool:
    if WRAPPERS.match(event.name) or event.name in METADATA_OPS:
        return False
    return event.cpu_parent is not None or not event.cpu_children


def _ns(event: Any) -> tuple[float, float]:
    return event.time_range.start * 1e3, event.time_range.end * 1e3


def profile(run: Callable[[], Any], calls: int) -> Trace:
    """torch.profiler (CPU, and CUDA where torch sees it) around `run`, read as above."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    with torch_profile(activities=activities) as profiler:
        run()
    events = profiler.events()
    dispatches = [
        e
        for e in events
        if e.cpu_parent is None
        and e.device_type == DeviceType.CPU
        and not NOT_DISPATCH.match(e.name)
    ]
    kernel_events = [e for e in events if _is_kernel(e)]
    kernels = tuple(
        piece
        for e in kernel_events
        for piece in self_time(*_ns(e), (_ns(child) for child in e.cpu_children))
    )
    spans = tuple(_ns(e) for e in events)
    trace = Trace(
        calls, len(dispatches), kernels, len(events), kernel_events=len(kernel_events), spans=spans
    )
    return nested(trace, (_ns(e)[0] for e in events), (_ns(e)[0] for e in kernel_events))


# torch.profiler's names of the floating dtypes (record_shapes' input_dtypes).
FLOAT_DTYPES = {"float": "float32", "double": "float64", "c10::BFloat16": "bfloat16"}
FLOAT_DTYPES["c10::Half"] = "float16"


def kernel_precision(run: Callable[[], Any], low: str) -> KernelPrecision:
    """torch.profiler with record_shapes around `run`: each kernel's self time by the dtype of
    its floating-point inputs (kernels as `profile` classifies them), and the copies between
    two floating dtypes (casts). Run after the timed samples: recording shapes costs time."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    with torch_profile(activities=[ProfilerActivity.CPU], record_shapes=True) as profiler:
        run()
    work, untyped, casts = [], 0.0, 0
    for event in profiler.events():
        floats = [FLOAT_DTYPES[d] for d in event.input_dtypes or () if d in FLOAT_DTYPES]
        if event.name == "aten::copy_" and len(set(floats)) > 1:
            casts += 1
        if not _is_kernel(event):
            continue
        if floats:
            work.append(("×".join(sorted(set(floats))), float(event.self_cpu_time_total)))
        else:
            untyped += float(event.self_cpu_time_total)
    method = "torch.profiler (record_shapes): kernels' self time by their inputs' dtype"
    return of_work(work, low, KERNEL_TIME, method, casts, untyped)


def onednn_precision(run: Callable[[], Any], low: str) -> KernelPrecision:
    """oneDNN's verbose log around `run` (KERNEL_PRECISION_CALLS calls): its products' time by
    their source's dtype and the implementations that ran (kernel_precision.of_onednn_log).
    Run after the timed samples: the log costs time."""
    with stdout_captured() as log, torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
        run()
    return of_onednn_log(log[0], low, KERNEL_PRECISION_CALLS)
