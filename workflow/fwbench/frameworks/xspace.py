"""The XSpace profile (`*.xplane.pb`), which jax.profiler and TensorFlow's profiler both write:
read here, with no framework and no protobuf package, so one reader serves both adapters.

An XSpace is a protobuf message (tsl/profiler/protobuf/xplane.proto): planes (`/host:CPU`,
`/device:GPU:0`, ...), each with lines (one per thread or stream, `timestamp_ns` their start)
of events (`metadata_id` naming the event in the plane's `event_metadata` map, `offset_ps`
from the line's start, `duration_ps`). Only those fields are read; the stats and every other
field are skipped by their wire type, so a profiler that adds fields still reads.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

# Field numbers (xplane.proto).
_SPACE_PLANES = 1
_PLANE_NAME, _PLANE_LINES, _PLANE_EVENT_METADATA = 2, 3, 4
_LINE_NAME, _LINE_TIMESTAMP_NS, _LINE_EVENTS = 2, 3, 4
_EVENT_METADATA_ID, _EVENT_OFFSET_PS, _EVENT_DURATION_PS = 1, 2, 3
_MAP_KEY, _MAP_VALUE = 1, 2
_METADATA_NAME = 2

_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5


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


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) of one message: an int for varints, bytes for the rest."""
    at, end = 0, len(data)
    while at < end:
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == _VARINT:
            value, at = _varint(data, at)
        elif wire == _BYTES:
            size, at = _varint(data, at)
            value, at = data[at : at + size], at + size
        elif wire in (_FIXED64, _FIXED32):
            size = 8 if wire == _FIXED64 else 4
            value, at = data[at : at + size], at + size
        else:
            raise ValueError(f"XSpace: unsupported protobuf wire type {wire} at byte {at}")
        yield number, value


def _signed(value: int) -> int:
    """An int64 field's two's-complement value."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _metadata_entry(data: bytes) -> tuple[int, str]:
    key, name = 0, ""
    for number, value in _fields(data):
        if number == _MAP_KEY:
            key = _signed(value)
        elif number == _MAP_VALUE:
            for inner, text in _fields(value):
                if inner == _METADATA_NAME:
                    name = text.decode("utf-8", "replace")
    return key, name


def _event(data: bytes, line_start_ns: int, names: dict[int, str]) -> Event:
    metadata_id = offset_ps = duration_ps = 0
    for number, value in _fields(data):
        if number == _EVENT_METADATA_ID:
            metadata_id = _signed(value)
        elif number == _EVENT_OFFSET_PS:
            offset_ps = _signed(value)
        elif number == _EVENT_DURATION_PS:
            duration_ps = _signed(value)
    name = names.get(metadata_id, f"<metadata {metadata_id}>")
    return Event(name, line_start_ns + offset_ps * 1e-3, duration_ps * 1e-3)


def _line(data: bytes, names: dict[int, str]) -> Line:
    name, start_ns, raw_events = "", 0, []
    for number, value in _fields(data):
        if number == _LINE_NAME:
            name = value.decode("utf-8", "replace")
        elif number == _LINE_TIMESTAMP_NS:
            start_ns = _signed(value)
        elif number == _LINE_EVENTS:
            raw_events.append(value)
    return Line(name, [_event(raw, start_ns, names) for raw in raw_events])


def _plane(data: bytes) -> Plane:
    name, raw_lines, names = "", [], {}
    for number, value in _fields(data):
        if number == _PLANE_NAME:
            name = value.decode("utf-8", "replace")
        elif number == _PLANE_LINES:
            raw_lines.append(value)
        elif number == _PLANE_EVENT_METADATA:
            key, event_name = _metadata_entry(value)
            names[key] = event_name
    return Plane(name, [_line(raw, names) for raw in raw_lines])


def parse_xspace(data: bytes) -> list[Plane]:
    """The planes of a serialized XSpace."""
    return [_plane(value) for number, value in _fields(data) if number == _SPACE_PLANES]


def read_xspace(directory: str | os.PathLike) -> list[Plane]:
    """The planes of the one `*.xplane.pb` a profiler wrote under `directory` (its
    `plugins/profile/<run>/` layout); raises naming the directory when there is none or several."""
    found = sorted(Path(directory).rglob("*.xplane.pb"))
    if len(found) != 1:
        raise FileNotFoundError(
            f"expected one *.xplane.pb under {directory}, found {len(found)}: "
            + ", ".join(map(str, found))
        )
    return parse_xspace(found[0].read_bytes())
