"""How long Snakemake takes to plan a large sweep, against its own floor for as many jobs.

    .venv/bin/python self_measurement/dry_run_scale.py [--cells 20000] [--systems 3]
        [--repeats 3] [--snakefile Snakefile] [--slurm]

The sweep is the default config with enough batch sizes to reach --cells cells, split over
--systems local systems (--slurm: SLURM systems on two partitions, planned with
profiles/slurm). Each repeat runs, back to back, a fresh `snakemake -n --quiet` in an empty
directory of the sweep (parsing, building the DAG and deciding every job: the cost a user pays
before a sweep starts) and of two floors, Snakemake's own cost on this machine for as many jobs:
trivial jobs (one wildcard, no params, log or priority) and jobs with the bench rule's output
and log paths alone (the six wildcards of the cell path, no params, priority, threads,
resources or constraints). It prints wall and CPU time of each and the sweep's ratio to each
floor per repeat, whose median is the figure: a slow spell of the host hits neighbours alike.
Keep the machine otherwise idle.
"""

from __future__ import annotations

import argparse
import math
import re
import resource
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


def dry_run(command: list[str], workdir: Path) -> tuple[float, float, str]:
    """Wall and CPU seconds (user + system, the child's) of one `snakemake -n`, and its output.
    CPU time does not count what a busy host steals from this VM; wall time does."""
    command = [sys.executable, "-m", "snakemake", "-d", str(workdir), "-n", *command]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"dry run failed:\n{result.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu, result.stdout


def commands(args: argparse.Namespace, scratch: Path) -> tuple[dict[str, list[str]], dict, int]:
    """The dry runs to time, by name: the sweep and its two floors (trivial jobs; jobs with the
    cell paths and nothing else), each over as many jobs."""
    config = scratch / "sweep.yaml"
    settings = sweep_config(args.cells, args.systems, args.slurm)
    config.write_text(yaml.safe_dump(settings))
    cells = args.systems * VARIANTS_PER_ARCH * len(ARCHS) * len(settings["batch_sizes"])
    sweep = ["-s", str(args.snakefile), "--configfile", str(config)]
    if args.slurm:
        sweep += ["--profile", str(REPO / "profiles/slurm")]
    (scratch / "floor.smk").write_text(FLOOR.format(jobs=cells))
    (scratch / "layout.smk").write_text(layout_floor(settings))
    runs = {
        "sweep": sweep,
        "floor": ["-s", str(scratch / "floor.smk"), "-c", "1"],
        "layout floor": ["-s", str(scratch / "layout.smk"), "-c", "1"],
    }
    return runs, settings, cells


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=20000)
    parser.add_argument("--systems", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--snakefile", type=Path, default=REPO / "Snakefile")
    parser.add_argument("--slurm", action="store_true", help="SLURM systems, slurm profile")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fwbench-dry-run-") as scratch:
        runs, _, cells = commands(args, Path(scratch))
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
        for repeat in range(args.repeats):  # interleaved: a slow spell of the host hits all
            for name, command in runs.items():
                wall, cpu, _ = dry_run([*command, "--quiet"], Path(scratch) / f"{name}{repeat}")
                times[name].append((wall, cpu))
                print(f"repeat {repeat} {name}: {wall:.2f} s wall, {cpu:.2f} s CPU", flush=True)
        _, _, stdout = dry_run([*runs["sweep"], "--quiet", "rules"], Path(scratch) / "count")
        totals = re.findall(r"^total\s+(\d+)$", stdout, flags=re.M)
    print(f"{cells} cells on {args.systems} system(s), {totals[-1] if totals else '?'} jobs:")
    for name, pairs in times.items():
        walls, cpus = [w for w, _ in pairs], [c for _, c in pairs]
        print(
            f"  {name}: median {statistics.median(walls):.2f} s wall "
            f"(min {min(walls):.2f}, max {max(walls):.2f}), {statistics.median(cpus):.2f} s CPU"
        )
    for floor in ("floor", "layout floor"):
        for index, unit in ((0, "wall"), (1, "CPU")):
            pairs = zip(times["sweep"], times[floor], strict=True)
            ratios = [sweep[index] / other[index] for sweep, other in pairs]
            print(
                f"  sweep / {floor} ({unit}): median {statistics.median(ratios):.2f} "
                f"(min {min(ratios):.2f}, max {max(ratios):.2f})"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
