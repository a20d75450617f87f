"""Move results of the layout before systems under a system, nothing recomputed or lost.

    python -m fwbench.io.migrate --system local [--results results] [--hardware FILE] [-n]

Before systems, cells, checks and training runs lay under results/<stage>/<framework>/... and
the hardware file was results/hardware/<host>-<device>.json. Now each lies under its system:
results/<stage>/<system>/<framework>/... and results/hardware/<system>.json. This command
renames the framework directories (and their logs) into the system's directory and the hardware
file to the system's name; it refuses, before moving anything, when a destination exists or
the hardware file is ambiguous. Derived files (aggregate, statistics, figures, report) are
rebuilt by the next run from the moved cells; the cells themselves are not rerun (Snakemake
keeps no record for the new paths, so only their existence counts).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from fwbench.frameworks import MODES
from fwbench.systems import NAME_PATTERN

# Directories holding one subdirectory per framework, before systems.
STAGES = (
    "cells",
    "train",
    "checks",
    "logs/bench",
    "logs/train",
    "logs/checks",
)
HARDWARE_SUFFIXES = ("-cpu.json", "-cuda.json")


def planned_moves(
    results: Path, system: str, hardware: Path | None = None
) -> list[tuple[Path, Path]]:
    """(source, destination) of every move; raises naming the problem before any move."""
    if not NAME_PATTERN.fullmatch(system) or system in MODES:
        raise ValueError(f"--system {system!r}: not a valid system name")
    moves = [
        (results / stage / framework, results / stage / system / framework)
        for stage in STAGES
        for framework in MODES
        if (results / stage / framework).is_dir()
    ]
    old_hardware = _old_hardware(results, hardware)
    if old_hardware is not None:
        moves.append((old_hardware, results / "hardware" / f"{system}.json"))
    taken = [str(target) for _, target in moves if target.exists()]
    if taken:
        raise ValueError(f"already there, nothing moved: {', '.join(taken)}")
    return moves


def _old_hardware(results: Path, chosen: Path | None) -> Path | None:
    if chosen is not None:
        if not chosen.is_file():
            raise ValueError(f"--hardware {chosen}: no such file")
        return chosen
    found = sorted(
        path
        for path in (results / "hardware").glob("*.json")
        if path.name.endswith(HARDWARE_SUFFIXES) and not _names_a_system(path)
    )
    if len(found) > 1:
        names = ", ".join(str(path) for path in found)
        raise ValueError(f"several hardware files ({names}): name the system's with --hardware")
    return found[0] if found else None


def _names_a_system(path: Path) -> bool:
    """A hardware file of the layout with systems (e.g. of a system named `a100-cuda`)."""
    try:
        return bool(json.loads(path.read_text()).get("system"))
    except (OSError, ValueError, AttributeError):
        return False


def migrate(
    results: Path, system: str, hardware: Path | None = None, dry_run: bool = False
) -> list[tuple[Path, Path]]:
    moves = planned_moves(results, system, hardware)
    for source, target in moves:
        if not dry_run:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.rename(source, target)
    return moves


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--system", required=True, help="the system the old results belong to")
    parser.add_argument("--results", type=Path, default=Path("results"))
    parser.add_argument("--hardware", type=Path, help="the old hardware file, if several")
    parser.add_argument("-n", "--dry-run", action="store_true", help="only print the moves")
    args = parser.parse_args(argv)
    try:
        moves = migrate(args.results, args.system, args.hardware, args.dry_run)
    except ValueError as error:
        print(f"migrate: {error}", file=sys.stderr)
        return 2
    verb = "would move" if args.dry_run else "moved"
    for source, target in moves:
        print(f"{verb} {source} -> {target}")
    if not moves:
        print(f"nothing of the layout before systems under {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
