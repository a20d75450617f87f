"""A bench job's request: every setting that determines one cell and process, as one type.

The plan builds it (`Plan.cell_request`), the workflow passes it to the job as JSON (a change in
any field reruns exactly that cell), and the job reads it back with `CellRequest.from_json`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any

from fwbench.io.dims import FLOAT32

DEFAULT_LOCK = "/tmp/fwbench-timing.lock"


@dataclass
class CellRequest:
    """Field order is the JSON's: the workflow compares it as text to decide reruns."""

    system: str  # the config's name of the kind of node the cell belongs to
    placement: dict[str, Any]  # where the system's jobs run
    framework: str
    mode: str
    arch: str
    batch: int
    dims: dict[str, Any]
    seed: int
    device: str
    threads: int
    warmup: int
    repeats: int
    min_sample_s: float  # a timed sample holds enough calls to last this long
    busy_threshold_cores: float
    pressure_threshold: float | None
    slow_sample_factor: float  # the speed canary's thresholds (fwbench.measure.speed)
    slow_machine_factor: float
    slow_sample_share: float
    slow_on_cpu: float
    retries: int
    timeout_s: float
    inject_failure: bool
    attribution: bool  # the attribution pass after the timed samples (fwbench.measure.attribution)
    versions: dict[str, str]  # the first distribution names the framework's results
    process: int  # which of the cell's fresh processes this is
    compile_options: dict[str, Any]
    # What the model computes in; float32 is left out of the JSON (_json_settings), so the
    # requests, and the reruns, of float32 cells are those before precision was a dimension.
    precision: str = FLOAT32
    # Where the host's timing jobs meet, and the hardware file holding the canary's baseline:
    # not properties of the cell, so not in its JSON (the cell records the baseline it used).
    lock: str = DEFAULT_LOCK
    hardware: str | None = None
    # An export mode's artifact manifest (fwbench.io.artifact_file): an input of the job.
    artifact: str | None = None

    def settings_hash(self) -> str:
        """What determines the cell: every process of a cell has the same hash."""
        from fwbench.provenance import config_hash

        settings = _json_settings(self, _JSON_FIELDS)
        settings.pop("process")
        return config_hash(settings)

    def to_json(self) -> str:
        """The request without its lock, in field order (a framework's first distribution in
        `versions` is the one that names its results). Read off the fields, not `asdict`:
        Snakemake asks for every cell's request while it plans, and asdict's deep copies cost
        seconds at 20,000 cells."""
        return json.dumps(_json_settings(self, _JSON_FIELDS))

    @classmethod
    def from_json(
        cls,
        text: str,
        lock: str = DEFAULT_LOCK,
        hardware: str | None = None,
        artifact: str | None = None,
    ) -> CellRequest:
        """The request `to_json` wrote; raises naming any field this version does not know."""
        settings = _settings(text, _JSON_FIELDS, "cell")
        return cls(**settings, lock=lock, hardware=hardware, artifact=artifact or None)


@dataclass
class ExportRequest:
    """An export job's request: what determines one artifact (a framework's export mode on
    one architecture, any batch). Field order is the JSON's, as for CellRequest."""

    system: str
    placement: dict[str, Any]
    framework: str
    mode: str
    arch: str
    dims: dict[str, Any]
    seed: int
    device: str
    threads: int
    timeout_s: float
    versions: dict[str, str]
    precision: str = FLOAT32  # as CellRequest's: left out of the JSON at float32
    lock: str = DEFAULT_LOCK  # where the host's timing jobs meet: not in the JSON

    def to_json(self) -> str:
        return json.dumps(_json_settings(self, _EXPORT_FIELDS))

    @classmethod
    def from_json(cls, text: str, lock: str = DEFAULT_LOCK) -> ExportRequest:
        return cls(**_settings(text, _EXPORT_FIELDS, "export"), lock=lock)


def _json_settings(request: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """A request's JSON fields in order, without the default precision: a float32 request's
    text is the one it had before precision was a field, so no float32 result reruns."""
    settings = {name: getattr(request, name) for name in names}
    if settings["precision"] == FLOAT32:
        del settings["precision"]
    return settings


def _settings(text: str, known: tuple[str, ...], what: str) -> dict[str, Any]:
    """A request's JSON fields; raises naming any field this version does not know."""
    settings = json.loads(text)
    unknown = sorted(set(settings) - set(known))
    if unknown:
        raise ValueError(f"{what} request: unknown field(s) {', '.join(unknown)}")
    return settings


_NOT_JSON = ("lock", "hardware", "artifact")
_JSON_FIELDS = tuple(f.name for f in fields(CellRequest) if f.name not in _NOT_JSON)
_EXPORT_FIELDS = tuple(f.name for f in fields(ExportRequest) if f.name not in _NOT_JSON)
