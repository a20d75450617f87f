"""The attribution pass: after a cell's timed samples (never inside them), the framework's own
profiler over a few calls says how many ops or launches a call dispatches and how long its
kernels run; the statistics split the clean median into roofline bound, kernel excess,
dispatch and the rest from it (fwbench.analysis.attribution).

What the pass measures, per call:
- `attr_dispatches`: ops (eager) or launches (compiled) the framework dispatched.
- `attr_kernel_s`: the union of the kernel events' intervals (fwbench.frameworks.trace), less the
  profiler's cost inside it: each kernel event that opens its own interval loses the length the
  same profiler records for the launch floor's kernel (`attr_floor_kernel_s`: a 1-element op,
  so its length is the dispatcher's and the profiler's cost inside an event, not work; the
  null call's where the floor's kernel is not seen), and each event nested inside a kernel
  region (`attr_nested_events`: an XLA while loop's body, an ONNX Runtime Loop's subgraph) the
  whole per-event cost; never more than the profiler's measured cost (the profiled calls'
  wall less the same calls' unprofiled right after). NaN, and the cell says why, where that
  measured cost, in the share of the events nested inside kernel regions, is more than the call
  itself (UNRESOLVED_OVERHEAD): a trace so dense inside its kernels that the events' cost swamps
  what they time. `attr_kernel_regions`: the disjoint intervals per call.
- `attr_floor_s`: the mode's own per-launch floor, unprofiled (the runner's launch_floor, an
  identity through the same compiler for compiled modes; the cell's null call, timed already,
  for the others).
- The profiler's own cost, calibrated on the floor call under the same profiler: per event,
  (profiled floor call - the same loop unprofiled just before and after) / its events
  (`attr_event_cost_s`); the profiled run's wall per call (`attr_profiled_call_s`) and that
  wall less every event's calibrated cost, never below the same calls' wall unprofiled right
  after (`attr_unprofiled_call_s`; a calibration above what this cell's events cost would
  otherwise shrink it) (`attr_profiled_work_s`): the statistics read the
  kernel time as its share of this work, for the profiled run sits at another moment than the
  clean samples (this VM's speed moves by up to 1.4x within seconds) and a dense trace's
  events can cost more than the floor's.
- `attr_in_framework_s`: the time in which the framework was at work (the union of every
  recorded event's interval: dispatching, running a kernel, waiting on one); the profiled
  call's rest is its caller's Python between ops (NaN where the profile records no events:
  AOTInductor, LiteRT).
- `attr_pass_s`: the whole pass's wall time (its cost to the sweep).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from fwbench.frameworks.protocols import NullCall
from fwbench.frameworks.trace import Trace
from fwbench.host.harness import time_calls

PROFILE_TARGET_S = 0.05  # profiled calls: about this long unprofiled
MIN_CALLS, MAX_CALLS = 3, 200
CALIBRATION_CALLS, CALIBRATION_WARMUP = 200, 50
FLOOR_WARMUP, FLOOR_REPEATS = 50, 200
# Kernel time is not resolved where the profiler's measured cost a call, in the share of its
# events nested inside kernel regions, is above this multiple of the call unprofiled: the
# calibrated per-event cost, times that many events, is no correction (the rnn and lstm loops of
# XLA and ONNX Runtime: 340-1060 events a call).
UNRESOLVED_OVERHEAD = 1.0


def unresolved(nested_s: float, unprofiled_s: float, trace: Trace) -> str:
    """Why a cell's kernel time is not resolved: the profiler's cost inside its kernels is
    more than the call."""
    return (
        f"kernel time not resolved: the profiler's own cost inside the kernels, "
        f"{nested_s * 1e6:.1f} µs a call ({trace.inside / trace.calls:.0f} events nested in "
        f"them), is more than the call itself ({unprofiled_s * 1e6:.1f} µs unprofiled): too "
        "dense to subtract (in the rest)"
    )


def profiled_calls(median_s: float) -> int:
    """Calls in the profiled run: about PROFILE_TARGET_S of unprofiled calls, within limits."""
    if not median_s > 0:
        return MIN_CALLS
    return int(min(MAX_CALLS, max(MIN_CALLS, math.ceil(PROFILE_TARGET_S / median_s))))


def floor_s(
    floor: NullCall | None,
    warmup: int = FLOOR_WARMUP,
    repeats: int = FLOOR_REPEATS,
    min_sample_s: float = 0.0,
) -> float:
    """A call's median, unprofiled: a floor call, the null call, or a runner's call given as
    one; NaN where there is none."""
    if floor is None:
        return math.nan
    timing = time_calls(
        floor.call,
        floor.sync,
        warmup,
        repeats,
        min_sample_s=min_sample_s,
        quiet_probe_s=0.0,
        context=floor.context,
    )
    return float(np.median(timing.latency_s))


def runner_call(runner: Any, prepared: Any) -> NullCall:
    """A runner's call on its prepared input, synced and in its timing context, as a NullCall
    (for floor_s and the pass)."""
    return NullCall(lambda: runner.call_in_context(prepared), runner.sync, runner.timing_context)


def _loop(call: Callable[[], Any], sync: Callable[[Any], None], calls: int) -> float:
    """`calls` synced calls; their wall time per call."""
    start = time.perf_counter()
    for _ in range(calls):
        sync(call())
    return (time.perf_counter() - start) / calls


def _profile_calls(
    profile: Callable[[Callable[[], Any], int], Trace],
    call: Callable[[], Any],
    sync: Callable[[Any], None],
    context: Callable[[], Any],
    calls: int,
) -> tuple[Trace, float]:
    """`profile` over `calls` synced calls in `context`; the trace and the wall per call (of
    the last run, where a profiler runs `run` more than once)."""
    wall: list[float] = []
    with context():
        trace = profile(lambda: wall.append(_loop(call, sync, calls)), calls)
    return trace, wall[-1]


def _calibration(
    profile: Callable[[Callable[[], Any], int], Trace], call: NullCall
) -> tuple[float, float]:
    """The profiler's cost on a floor call: per event, (profiled - unprofiled) / its events,
    the unprofiled wall the mean of the same loop's just before and just after (the machine's
    state moves within seconds here: a median taken earlier is no reference), and never below
    0; and the mean length the profiler records for the call's kernel events (NaN where it saw
    none)."""
    with call.context():  # warm, as the cell's runner is: a cold first call is no floor
        for _ in range(CALIBRATION_WARMUP):
            call.sync(call.call())
        before = _loop(call.call, call.sync, CALIBRATION_CALLS)
    trace, profiled_s = _profile_calls(
        profile, call.call, call.sync, call.context, CALIBRATION_CALLS
    )
    with call.context():
        after = _loop(call.call, call.sync, CALIBRATION_CALLS)
    events_per_call = trace.events / trace.calls
    cost = max(profiled_s - (before + after) / 2, 0.0)
    per_event = cost / events_per_call if events_per_call else math.nan
    count = trace.kernel_count()
    return per_event, trace.kernel_ns() * 1e-9 / count if count else math.nan


def _in_event(
    profile: Callable[[Callable[[], Any], int], Trace], floor: NullCall, null: NullCall
) -> dict[str, float]:
    """The profiler's cost, calibrated on the mode's launch floor (its kernel event is of the
    kind the mode's kernels are: an XLA thunk under jit), or on the null call where the floor
    shows no kernel (inductor's C++ kernels do not reach torch.profiler)."""
    per_event, in_event = _calibration(profile, floor)
    if math.isnan(in_event) and floor is not null:
        per_event_null, in_event = _calibration(profile, null)
        per_event = per_event_null if math.isnan(per_event) else per_event
    return {"attr_event_cost_s": per_event, "attr_floor_kernel_s": in_event}


def _profiler_costs(trace: Trace, cost: dict[str, float]) -> tuple[float, float]:
    """Per call, the profiler's calibrated cost inside the kernel regions (each kernel event
    that opens its own interval: the floor kernel's recorded length; each event nested inside
    a region: the whole per-event cost) and in the whole call (every event: the per-event
    cost)."""
    per_event = 0.0 if math.isnan(cost["attr_event_cost_s"]) else cost["attr_event_cost_s"]
    own = trace.kernel_count() - trace.kernels_inside
    in_kernels = cost["attr_floor_kernel_s"] * own + per_event * trace.inside
    return in_kernels / trace.calls, per_event * trace.events / trace.calls


def _kernel_time(
    trace: Trace, in_kernels: float, profiled_s: float, unprofiled_s: float
) -> tuple[float, float, str]:
    """Per call, the kernel events' union (raw), it less the profiler's calibrated cost inside
    it (`in_kernels`, never more than its measured cost: the profiled calls less the
    unprofiled), and why the latter is NaN where it is not resolved ('' otherwise)."""
    if not trace.kernels_visible:
        return math.nan, math.nan, ""
    overhead = max(profiled_s - unprofiled_s, 0.0)
    raw = trace.kernel_ns() * 1e-9 / trace.calls
    kernel = max(raw - min(in_kernels, overhead), 0.0)
    nested = overhead * trace.inside / trace.events if trace.events else 0.0
    if nested > unprofiled_s * UNRESOLVED_OVERHEAD:
        return raw, math.nan, unresolved(nested, unprofiled_s, trace)
    return raw, kernel, ""


def attribute(
    adapter: Any, runner: Any, prepared: Any, median_s: float, null_call_s: float
) -> tuple[dict[str, float], dict[str, str]]:
    """The attribution pass over a timed, warm `runner` (the scalars of
    fwbench.io.cell_file.ATTRIBUTION_UNITS, and the `attribution` attribute: what the profiler
    saw and could not see). `null_call_s`: the cell's null call, timed already, which is the
    floor of the modes whose runner has no launch floor of its own."""
    start = time.perf_counter()
    calls = profiled_calls(median_s)
    timed = runner_call(runner, prepared)
    trace, profiled_s = _profile_calls(
        adapter.profile, timed.call, timed.sync, timed.context, calls
    )
    with timed.context():  # the same calls unprofiled, right after: this moment's pace
        unprofiled_s = _loop(timed.call, timed.sync, calls)
    trace = runner.own_trace(trace)
    null = adapter.null_call(runner.device)
    own = runner.launch_floor()
    floor = (own, floor_s(own)) if own is not None else (null, null_call_s)
    cost = _in_event(adapter.profile, floor[0], null)
    in_kernels, in_call = _profiler_costs(trace, cost)
    raw, kernel, why = _kernel_time(trace, in_kernels, profiled_s, unprofiled_s)
    note = trace.note or "kernels and dispatches as the profiler saw them"
    scalars = cost | {
        "attr_dispatches": trace.dispatches / calls,
        "attr_kernel_raw_s": raw,
        "attr_kernel_s": kernel,
        "attr_kernel_regions": len(trace.regions()) / calls,
        "attr_nested_events": trace.inside / calls,
        "attr_floor_s": floor[1],
        "attr_events": trace.events / calls,
        "attr_profiled_call_s": profiled_s,
        # the work: never less than the calls unprofiled (a calibration above this cell's cost)
        "attr_profiled_work_s": max(profiled_s - in_call, unprofiled_s),
        "attr_unprofiled_call_s": unprofiled_s,
        "attr_in_framework_s": trace.in_framework_ns() * 1e-9 / calls if trace.spans else math.nan,
        "attr_calls": calls,
    }
    scalars["attr_pass_s"] = time.perf_counter() - start
    return scalars, {"attribution": f"{note}; {why}" if why else note}
