"""A finished sweep's statistics recomputed by this checkout's library, beside the sweep.

    python -m fwbench reanalyse SWEEP_DIR OUT_DIR [--config CONFIG]

Reads SWEEP_DIR/results (the aggregated bench file, each system's hardware file and rounds
files) as the `stats` rule does and writes OUT_DIR/summary/{stats.nc, stats.csv,
comparisons.csv} with this checkout's analysis (stats settings from CONFIG's `stats` section,
default SWEEP_DIR/config/config.yaml), so that a change of the statistics is measured on sweeps
already run, before and after, without timing anything again; `python -m fwbench agreement`
compares the results (`OUT_DIR` takes the place of a sweep's results/). Nothing under SWEEP_DIR
changes.
"""

from __future__ import annotations

import argparse
import glob
from pathlib import Path

import yaml

from fwbench.analysis.by_system import summarize_sweep
from fwbench.analysis.stats import StatsSettings, write_outputs


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweep", type=Path, metavar="SWEEP_DIR")
    parser.add_argument("out", type=Path, metavar="OUT_DIR")
    parser.add_argument("--config", type=Path, help="default: SWEEP_DIR/config/config.yaml")


def reanalyse(sweep: Path, out: Path, config_path: Path | None = None) -> int:
    """Writes OUT/summary/{stats.nc, stats.csv, comparisons.csv}; the number of systems."""
    config = yaml.safe_load((config_path or sweep / "config/config.yaml").read_text())
    settings = StatsSettings.from_mapping(config.get("stats", {}), seed=config.get("seed", 0))
    results = sweep / "results"
    hardware = sorted((results / "hardware").glob("*.json"))
    if not hardware:
        raise SystemExit(f"no hardware file under {results / 'hardware'}: not a finished sweep")
    rounds = sorted(glob.glob(str(results / "rounds/*/*/b*/set*.nc")))
    summary, limits = summarize_sweep(
        str(results / "aggregate/bench.nc"), {p.stem: str(p) for p in hardware}, rounds, settings
    )
    (out / "summary").mkdir(parents=True, exist_ok=True)
    outputs = [out / "summary" / name for name in ("stats.nc", "stats.csv", "comparisons.csv")]
    write_outputs(summary, *outputs)
    return len(limits)


def run(args: argparse.Namespace) -> int:
    systems = reanalyse(args.sweep, args.out, args.config)
    print(f"{args.sweep}: statistics of {systems} systems written under {args.out}/summary")
    return 0
