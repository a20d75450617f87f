"""How long Snakemake takes to plan a large sweep: a dry run of about N cells over S systems.

    .venv/bin/python self_measurement/dry_run_scale.py [--cells 20000] [--systems 3]
        [--repeats 3] [--snakefile Snakefile] [--slurm]

The sweep is the default config with enough batch sizes to reach --cells cells, split over
--systems local systems (--slurm: SLURM systems on two partitions, planned with
profiles/slurm). Each repeat is a fresh `snakemake -n --quiet` in an empty directory: parsing,
building the DAG and deciding every job, the cost a user pays before a sweep starts (printing
20,000 job descriptions, without --quiet, costs more again). One more, untimed run with the
job-stats table counts the jobs. Two floors, Snakemake's own cost on this machine for as many
jobs: --floor times trivial jobs (one wildcard, no params, log or priority); --layout-floor
times jobs with the bench rule's output and log paths (the six wildcards of
results/cells/<system>/<framework>/<version>/<mode>/<arch>/b<batch>) and nothing else: no
params, priority, threads, resources or wildcard constraints. Keep the machine otherwise idle.
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
DEFAULT = yaml.safe_load((REPO / "config/config.yaml").read_text())
MODES, ARCHS = DEFAULT["modes"], DEFAULT["architectures"]
VARIANTS_PER_ARCH = sum(len(modes) for modes in MODES.values())


def sweep_config(cells: int, systems: int, slurm: bool) -> dict:
    batches = math.ceil(cells / (systems * VARIANTS_PER_ARCH * len(ARCHS)))
    named = {}
    for index in range(systems):
        entry: dict = {"threads": 2}
        if slurm:
            entry["slurm"] = {"partition": "gpu" if index % 2 else "cpu"}
        named[f"system{index}"] = entry
    return {"batch_sizes": list(range(1, batches + 1)), "systems": named}


FLOOR = """rule all:
    input: expand("out/{{i}}.txt", i=range({jobs}))

rule one:
    output: "out/{{i}}.txt"
    shell: "touch {{output}}"
"""


LAYOUT_FLOOR = """CELLS = {cells!r}
rule all:
    input: CELLS

rule bench:
    output: "results/cells/{{system}}/{{framework}}/{{version}}/{{mode}}/{{arch}}/b{{batch}}.nc"
    log: "results/logs/bench/{{system}}/{{framework}}/{{version}}/{{mode}}/{{arch}}/b{{batch}}.log"
    shell: "touch {{output}}"
"""
LAYOUT_VERSION = "1.0.0"  # the path needs a version; Snakemake's cost does not depend on it


def layout_floor(settings: dict) -> str:
    """A Snakefile of the sweep's cell files with the bench rule's paths and nothing else."""
    cells = [
        f"results/cells/{system}/{fw}/{LAYOUT_VERSION}/{mode}/{arch}/b{batch}.nc"
        for system in settings["systems"]
        for fw, modes in MODES.items()
        for mode in modes
        for arch in ARCHS
        for batch in settings["batch_sizes"]
    ]
    return LAYOUT_FLOOR.format(cells=cells)


def dry_run(command: list[str], workdir: Path) -> tuple[float, str]:
    command = [sys.executable, "-m", "snakemake", "-d", str(workdir), "-n", *command]
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"dry run failed:\n{result.stderr[-3000:]}")
    return elapsed, result.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=20000)
    parser.add_argument("--systems", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--snakefile", type=Path, default=REPO / "Snakefile")
    parser.add_argument("--slurm", action="store_true", help="SLURM systems, slurm profile")
    parser.add_argument("--floor", action="store_true", help="time trivial jobs instead")
    parser.add_argument(
        "--layout-floor", action="store_true", help="time jobs with only the cell paths instead"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fwbench-dry-run-") as scratch:
        config = Path(scratch) / "sweep.yaml"
        settings = sweep_config(args.cells, args.systems, args.slurm)
        config.write_text(yaml.safe_dump(settings))
        cells = args.systems * VARIANTS_PER_ARCH * len(ARCHS) * len(settings["batch_sizes"])
        command = ["-s", str(args.snakefile), "--configfile", str(config)]
        if args.slurm:
            command += ["--profile", str(REPO / "profiles/slurm")]
        if args.floor or args.layout_floor:
            floor = Path(scratch) / "Snakefile"
            floor.write_text(
                layout_floor(settings) if args.layout_floor else FLOOR.format(jobs=cells)
            )
            command = ["-s", str(floor), "-c", "1"]
        times = []
        for repeat in range(args.repeats):
            elapsed, _ = dry_run([*command, "--quiet"], Path(scratch) / f"run{repeat}")
            times.append(elapsed)
            print(f"repeat {repeat}: {elapsed:.2f} s", flush=True)
        _, stdout = dry_run([*command, "--quiet", "rules"], Path(scratch) / "count")
        totals = re.findall(r"^total\s+(\d+)$", stdout, flags=re.M)
    what = (
        "trivial jobs (the floor)"
        if args.floor
        else "jobs with the cell paths alone (the layout floor)"
        if args.layout_floor
        else f"cells on {args.systems} system(s)"
    )
    print(
        f"{cells} {what}, {totals[-1] if totals else '?'} jobs planned: median "
        f"{statistics.median(times):.2f} s (min {min(times):.2f}, max {max(times):.2f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
