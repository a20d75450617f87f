"""A profiled run reduced to what the attribution pass (fwbench.measure.attribution) needs:
how many ops or launches the framework dispatched and when its kernels ran.

Each framework's adapter runs its own profiler and classifies the events by its own
conventions (which events are dispatches, which are kernels); this module holds the record
and the interval arithmetic they share, and the classifier of XSpace traces (jax.profiler
and TensorFlow's profiler write the same format: each adapter reads it with its framework's
own reader into the records of fwbench.frameworks.xspace).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, replace

from fwbench.frameworks.xspace import Event, Line, Plane

HOST_PLANE, DEVICE_PLANE = "/host:CPU", "/device:"


@dataclass(frozen=True)
class Trace:
    """One profiled run of `calls` calls. `kernels`: the (start, end) ns of every kernel event
    (they may nest or overlap across threads: kernel time is their union). With
    `kernels_visible` False the profiler cannot see the mode's kernels (`note` says why) and
    `kernels` is empty."""

    calls: int
    dispatches: int  # ops or launches dispatched over the run
    kernels: tuple[tuple[float, float], ...]
    events: int  # every event the profiler recorded over the run
    kernels_visible: bool = True
    note: str = ""
    kernel_events: int | None = None  # kernel events, where one gave several intervals
    inside: int = 0  # events that start inside a kernel region it did not open (nested)
    kernels_inside: int = 0  # the kernel events among them
    spans: tuple[tuple[float, float], ...] = ()  # every recorded event's (start, end) ns

    def in_framework_ns(self) -> float:
        """The union of every recorded event's interval and the kernels': time in which the
        framework was at work (dispatching, running a kernel, waiting on one); the rest of a
        call is the caller's Python between ops, and the harness."""
        return sum(end - start for start, end in merged(self.spans + self.kernels))

    def kernel_count(self) -> int:
        """The kernel events the intervals come from (one interval each unless said)."""
        return len(self.kernels) if self.kernel_events is None else self.kernel_events

    def regions(self) -> list[tuple[float, float]]:
        return merged(self.kernels)

    def kernel_ns(self) -> float:
        """The union of the kernel events' intervals: time in which some kernel ran."""
        return sum(end - start for start, end in self.regions())


def nested(trace: Trace, starts: Iterable[float], kernel_starts: Iterable[float]) -> Trace:
    """`trace` with its nesting counted: of the events starting at `starts` (every event) and
    `kernel_starts` (the kernel events), those that start strictly inside a kernel region (a
    while loop's body under XLA, a Loop node's subgraph under ONNX Runtime): their whole
    recording cost lands inside the kernel time, not only the in-event part of one event."""
    regions = trace.regions()
    opens = [start for start, _ in regions]

    def count(points: Iterable[float]) -> int:
        inside = 0
        for point in points:
            at = bisect_left(opens, point) - 1  # the last region opening before `point`
            inside += at >= 0 and point < regions[at][1]
        return inside

    return replace(trace, inside=count(starts), kernels_inside=count(kernel_starts))


def merged(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """Disjoint, sorted intervals covering the same time: nested and overlapping ones joined."""
    out: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def self_time(
    start: float, end: float, children: Iterable[tuple[float, float]]
) -> list[tuple[float, float]]:
    """The pieces of [start, end) that no child interval covers: an event's self time."""
    pieces, at = [], start
    for child_start, child_end in merged(children):
        if child_start > at:
            pieces.append((at, min(child_start, end)))
        at = max(at, child_end)
    if at < end:
        pieces.append((at, end))
    return [(a, b) for a, b in pieces if b > a]


def top_level(events: Iterable[Event]) -> list[Event]:
    """The events of one line not inside an earlier one of them (a dispatch that dispatches
    again, as jax's PjitFunction does, counts once)."""
    out: list[Event] = []
    for event in sorted(events, key=lambda e: (e.start_ns, -e.duration_ns)):
        if not out or event.start_ns >= out[-1].end_ns:
            out.append(event)
    return out


@dataclass(frozen=True)
class KernelRule:
    """Kernel events of an XSpace: named as `name` matches, on the lines `lines` matches, and,
    with `inside`, only those within an event `inside` matches on the same line (XLA's thunks
    within CpuExecutable::ExecuteAsyncOnStream, say)."""

    name: str = r".*"
    lines: str = r".*"
    inside: str | None = None

    def select(self, line: Line, not_kernel: re.Pattern) -> list[tuple[float, float]]:
        if not re.search(self.lines, line.name):
            return []
        name = re.compile(self.name)
        found = [e for e in line.events if name.search(e.name) and not not_kernel.search(e.name)]
        if self.inside is not None:
            inside = re.compile(self.inside)
            containers = [e for e in line.events if inside.search(e.name)]
            found = [e for e in found if any(_within(e, c) for c in containers)]
        return [(e.start_ns, e.end_ns) for e in found]


def _within(event: Event, container: Event) -> bool:
    return event is not container and (
        container.start_ns <= event.start_ns and event.end_ns <= container.end_ns
    )


@dataclass(frozen=True)
class XSpaceRules:
    """How a framework's XSpace names its events: `dispatch`, the events that each dispatch
    one op or launch (counted once where they nest); `kernels`, the rules that pick the
    events running a kernel; `not_kernel`, markers no rule may pick (XLA's `end: <thunk>`)."""

    dispatch: str
    kernels: tuple[KernelRule, ...]
    not_kernel: str = r"$^"

    def trace(self, planes: list[Plane], calls: int) -> Trace:
        """The Trace of the host plane and any device planes of a profile of `calls` calls."""
        dispatch, not_kernel = re.compile(self.dispatch), re.compile(self.not_kernel)
        dispatches, spans, kernels, starts = 0, [], [], []
        for plane in planes:
            if plane.name != HOST_PLANE and not plane.name.startswith(DEVICE_PLANE):
                continue
            for line in plane.lines:
                starts += [e.start_ns for e in line.events]
                dispatches += len(top_level(e for e in line.events if dispatch.search(e.name)))
                spans += [(e.start_ns, e.end_ns) for e in line.events]
                for rule in self.kernels:
                    kernels += rule.select(line, not_kernel)
        trace = Trace(calls, dispatches, tuple(kernels), len(starts), spans=tuple(spans))
        return nested(trace, starts, (start for start, _ in kernels))
