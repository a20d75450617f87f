"""The hardware file, results/hardware/<system>.json: its version, writer and reader.

`fwbench.hardware.characterize` writes it; the roofline (`fwbench.analysis.roofline`) and the
figures and report (`fwbench.present.figure_data`) read it, all through `read_hardware`.
"""

from __future__ import annotations

import os
from typing import Any

from fwbench.io.atomic import write_json
from fwbench.io.common import SCHEMA_KEY, read_json_document

# 2 adds `memory` (the working-set bandwidth sweep and its per-level plateaus), the measured
# clock, and per-size GEMM sweeps; version 1 files read, with DRAM as their only memory level.
# 3 adds `system` (the config's name of the kind of node) and `node` (host, CPU and GPU model,
# what a cell's node is matched against). 4 adds `canary` (the speed canary's fixed work and
# quiet baseline per memory level); older files read, their cells without a canary.
SCHEMA_VERSION = 4
READABLE = (1, 2, 3, 4)
WHAT = "hardware file"


def write_hardware(document: dict[str, Any], path: str | os.PathLike) -> None:
    write_json({SCHEMA_KEY: SCHEMA_VERSION} | document, path)


def read_hardware(path: str | os.PathLike) -> dict[str, Any]:
    """The parsed document; raises naming the file when it is not JSON, not an object, or of
    another schema version."""
    return read_json_document(path, READABLE, WHAT)


def lookup(document: Any, *keys: str) -> Any:
    """The value at a key path, None where any key is missing."""
    for key in keys:
        if not isinstance(document, dict):
            return None
        document = document.get(key)
    return document
