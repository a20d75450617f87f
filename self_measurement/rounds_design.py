"""What the rounds' design buys, and what its sets and rounds cost: measured, not assumed.

    .venv/bin/python self_measurement/rounds_design.py --measure ARCH [--sets 4] [--rounds 30]
        [--batch 32] [--workdir DIR]      # run the rounds of one row (cells must be on disk)
    .venv/bin/python self_measurement/rounds_design.py ROUNDS.nc [ROUNDS.nc ...] [--cells DIR]

--measure runs the rounds of ARCH at BATCH as the rule does (the plan's variants of the default
config, each with its cell's Python, from the cells under DIR/results/cells) in more sets than
the default, and writes /tmp/rounds-<arch>-b<batch>.nc; its wall time is printed.

For each rounds file it prints, from every subset of its sets (2, 3, ... of them) and the first
R rounds (R = 10, 20, all): the median 95 % half-width of the ratio between the fastest variant
and each rival (the done-when's figure) and how many of those are decided, i.e. what fewer sets
or rounds would give; with 4 sets or more, two disjoint halves of the sets as two independent
measurements: the share of all pairs whose log ratios agree within their joint uncertainty
(|Δ| ≤ 1.96 √(se₁² + se₂²)) and the verdicts that reverse; each variant's σ (its own
spread between sets) and turn cost (the sample right after a switch over the warm one). With
--cells (a results directory), each variant's median in the rounds over its process-0 cell's
median at the same batch: how far the cells' own ratios, measured minutes apart, stray.
"""

from __future__ import annotations

import argparse
import glob
import itertools
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats as scipy_stats

from fwbench.analysis.comparisons import Estimate, Levels, judge
from fwbench.analysis.rounds import Block, block_of
from fwbench.io.cell_file import read_cell_record
from fwbench.io.comparisons_file import DECIDED, FASTER, SLOWER
from fwbench.io.rounds_file import joined_rows, variant_name

LEVELS = Levels(confidence=0.95, min_effect_pct=5.0)


def _verdict(block: Block, a, b) -> tuple[float, float, str]:
    """(log speedup of b over a, its half-width, verdict)."""
    se, dof = block.se_dof(a, b)
    value = block.means[a] - block.means[b]
    verdict = judge(Estimate(value, se, dof, ""), LEVELS)[-1]
    law = scipy_stats.norm if math.isinf(dof) else scipy_stats.t(dof)
    return value, float(law.ppf(0.975)) * se, verdict


def rivalry(block: Block) -> tuple[float, int, int]:
    """(median half-width as a ratio − 1, decided, rivals) of the fastest against each rival."""
    fastest = min(block.means, key=block.means.get)
    found = [_verdict(block, rival, fastest) for rival in block.means if rival != fastest]
    widths = [math.expm1(half) for _, half, _ in found]
    return float(np.median(widths)), sum(v in DECIDED for *_, v in found), len(found)


def subsets(ds, label: str) -> None:
    sets, rounds = ds.sizes["set"], ds.sizes["round"]
    for k in range(2, sets + 1):
        for r in sorted({min(10, rounds), min(20, rounds), rounds}):
            rows = [
                rivalry(block_of(ds.isel(set=list(chosen), round=slice(0, r))))
                for chosen in itertools.combinations(range(sets), k)
            ]
            widths = [w for w, _, _ in rows]
            decided = sum(d for _, d, _ in rows) / sum(n for *_, n in rows)
            print(
                f"{label}: {k} sets × {r} rounds: median half-width {100 * np.median(widths):.1f}% "
                f"(range {100 * min(widths):.1f}–{100 * max(widths):.1f}% over {len(rows)} "
                f"subsets), decided {100 * decided:.0f}%"
            )


def halves(ds, label: str) -> None:
    sets = ds.sizes["set"]
    if sets < 4:
        return
    first, second = (
        block_of(ds.isel(set=list(part))) for part in (range(sets // 2), range(sets // 2, sets))
    )
    agree, reversed_, total = 0, 0, 0
    for a, b in itertools.combinations(sorted(first.means), 2):
        v1, h1, d1 = _verdict(first, a, b)
        v2, h2, d2 = _verdict(second, a, b)
        joint = 1.959964 * math.hypot(first.se_dof(a, b)[0], second.se_dof(a, b)[0])
        agree += abs(v1 - v2) <= joint
        reversed_ += {d1, d2} == {FASTER, SLOWER}
        total += 1
    print(
        f"{label}: two halves of the sets: {agree}/{total} pairs agree within their joint "
        f"uncertainty ({100 * agree / total:.0f}%), {reversed_} verdicts reverse"
    )


def variants(ds, label: str, cells: str | None) -> None:
    block = block_of(ds)
    for (fw, mode, precision), mean in sorted(block.means.items(), key=lambda item: item[1]):
        variant = (fw, mode, precision)
        sigma = math.sqrt(block.variances[variant])
        cost = block.turn_cost[variant] - 1
        line = f"  {variant_name(*variant)}: {1e3 * math.exp(mean):.3f} ms, σ {100 * sigma:.1f}%, "
        line += f"turn cost {100 * cost:+.1f}%"
        if cells:
            row = f"{ds.attrs['arch']}/b{ds.attrs['batch']}.nc"
            pattern = f"{cells}/cells/{ds.attrs['system']}/{fw}/*/{mode}/{row}"
            found = glob.glob(pattern)
            if found:
                median = float(np.nanmedian(read_cell_record(found[0]).latency_s))
                line += f", rounds ÷ cell {math.exp(mean) / median:.3f}"
        print(line)


def measure(arch: str, batch: int, sets: int, rounds: int, workdir: str) -> list[str]:
    sys.path.insert(0, str(Path(__file__).parent))
    from configured import validated_config

    from fwbench.measure.rounds import Variant, python_of, run_rounds
    from fwbench.plan import CellRequest, make_plan

    plan = make_plan(validated_config({"rounds": {"batches": [batch]}}), read_disk=False)
    wildcards = {"system": "local", "arch": arch, "batch": batch}
    found = []
    for v in plan.rounds_variants(wildcards):
        cell = str(Path(workdir) / v["cell"])
        request = CellRequest.from_json(v["request"], artifact=v["artifact"])
        found.append(Variant(request, python_of(read_cell_record(cell).attrs)))
    outputs = [f"/tmp/rounds-{arch}-b{batch}-set{k}.nc" for k in range(sets)]
    start = time.perf_counter()
    for k, output in enumerate(outputs):
        run_rounds(found, k, rounds, plan.seed, "/tmp/fwbench-timing.lock", output)
    print(f"{arch}/b{batch}: {sets} sets × {rounds} rounds in {time.perf_counter() - start:.0f} s")
    return outputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*")
    parser.add_argument("--measure", help="an architecture to run the rounds of")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--sets", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--workdir", default=".", help="where results/ is (with --measure)")
    parser.add_argument("--cells", help="a results directory whose cells to set beside")
    args = parser.parse_args()
    files = list(args.files)
    if args.measure:  # relative paths in the plan: run from the sweep's directory
        files += measure(args.measure, args.batch, args.sets, args.rounds, args.workdir)
    for ds in joined_rows(files):
        label = f"{ds.attrs['arch']}/b{ds.attrs['batch']}"
        subsets(ds, label)
        halves(ds, label)
        variants(ds, label, args.cells)


if __name__ == "__main__":
    main()
