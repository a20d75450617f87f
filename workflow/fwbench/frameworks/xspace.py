"""The XSpace profile (`*.xplane.pb`), which jax.profiler and TensorFlow's profiler both write,
as framework-free records: where a profiler left it, and what the attribution pass keeps of it.

Each adapter reads the file with its own framework's reader (jax's `ProfileData`, TensorFlow's
`xplane_pb2`) into these records; `fwbench.frameworks.trace.XSpaceRules` classifies them. An
XSpace holds planes (`/host:CPU`, `/device:GPU:0`, ...), each with lines (one per thread or
stream) of events: a name, a start (the line's `timestamp_ns` plus the event's `offset_ps`) and
a duration (`duration_ps`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Event:
    name: str
    start_ns: float
    duration_ns: float

    @property
    def end_ns(self) -> float:
        return self.start_ns + self.duration_ns


@dataclass
class Line:
    name: str
    events: list[Event] = field(default_factory=list)


@dataclass
class Plane:
    name: str
    lines: list[Line] = field(default_factory=list)


def xplane_file(directory: str | os.PathLike) -> Path:
    """The one `*.xplane.pb` a profiler wrote under `directory` (its `plugins/profile/<run>/`
    layout); raises naming the directory when there is none or several."""
    found = sorted(Path(directory).rglob("*.xplane.pb"))
    if len(found) != 1:
        raise FileNotFoundError(
            f"expected one *.xplane.pb under {directory}, found {len(found)}: "
            + ", ".join(map(str, found))
        )
    return found[0]
