"""The report's systems part: the header over every system, the systems table (what each is,
where it ran, its limits, how its cells fared) and the cross-system figure."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import xarray as xr

from fwbench.analysis.aggregate import one_system, systems_of
from fwbench.analysis.flags import FLAG_NODE_MISMATCH
from fwbench.analysis.processes import NODE_SEPARATOR
from fwbench.io.dims import STATUS_FAILED, STATUS_OK
from fwbench.present.format import MISSING, fixed
from fwbench.present.hardware_summary import HardwareSummary
from fwbench.present.tables import markdown_table


def _count_flag(stats: xr.Dataset, flag: str) -> int:
    flags = stats["flags"].values.astype(str).ravel()
    return sum(flag in text.split(",") for text in flags)


def systems_header(stats: xr.Dataset) -> str:
    attrs = stats.attrs
    versions = json.loads(attrs.get("framework_versions", "{}") or "{}")
    versions_text = (
        ", ".join(
            f"{fw} {v if isinstance(v, str) else ' / '.join(v)}" for fw, v in versions.items()
        )
        or MISSING
    )
    names = systems_of(stats)
    cells = int((stats["status"].values != "absent").sum())
    return (
        "# fwbench report\n\n"
        f"PyTorch vs JAX vs TensorFlow on {len(names)} system(s) ({', '.join(names)}): "
        f"{cells} cells; {versions_text}. Code `{attrs.get('git_commit', MISSING)}`; each "
        "cell's settings hash is in `results/aggregate/bench.nc` (`config_hash`).\n"
    )


def systems_section(
    stats: xr.Dataset,
    bench: xr.Dataset | None,
    hardware: Mapping[str, HardwareSummary | None],
    described: Mapping[str, str],
    figures: Sequence[Path],
    report_dir: Path,
) -> str:
    """One row per system: its config, the node its hardware file measured, the nodes its
    cells ran on, its peak and DRAM bandwidth, and its cells' outcome."""
    rows = []
    for name in systems_of(stats):
        one = one_system(stats, name)
        summary = hardware.get(name)
        node = json.loads(one.attrs.get("roofline_node", "{}") or "{}")
        hosts = _hosts(bench, name)
        status = one["status"].values
        rows.append(
            [
                name,
                described.get(name, MISSING),
                summary.device_name if summary else MISSING,
                node.get("host", MISSING),
                ", ".join(hosts) or MISSING,
                fixed(summary.measured_flops_per_s.get("float32") if summary else None, 1e-9),
                fixed(summary.stream_Bps.get("triad") if summary else None, 1e-9),
                int((status == STATUS_OK).sum()),
                int((status == STATUS_FAILED).sum()),
                _count_flag(one, FLAG_NODE_MISMATCH),
            ]
        )
    header = [
        "system",
        "configured as",
        "hardware",
        "hardware file's node",
        "cells' nodes",
        "fp32 peak GFLOP/s",
        "DRAM triad GB/s",
        "ok",
        "failed",
        FLAG_NODE_MISMATCH,
    ]
    links = "".join(
        f"\n![The systems side by side]({Path(os.path.relpath(f, report_dir)).as_posix()})\n"
        for f in figures
    )
    return (
        "## Systems\n\n"
        "Each system's cells are measured on its own nodes and held against its own hardware "
        f"file. `{FLAG_NODE_MISMATCH}` counts cells whose node's CPU or GPU model differs from "
        "the one the hardware file measured.\n\n" + markdown_table(header, rows) + links
    )


def _hosts(bench: xr.Dataset | None, name: str) -> list[str]:
    """The nodes the system's cells ran on (the aggregate keeps each cell's)."""
    if bench is None or "host" not in bench:
        return []
    hosts = np.ravel(bench["host"].sel(system=name).values)
    return sorted({h for text in hosts for h in str(text).split(NODE_SEPARATOR) if h})
