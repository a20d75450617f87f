"""Would pairing within a round narrow the rounds' CIs? Measured on a sweep's rounds files.

    .venv/bin/python self_measurement/rounds_pairing.py RESULTS_DIR_OR_ROUNDS_FILES...
        [--boot 500] [--seed 0]

The rounds' model (fwbench.analysis.rounds) pairs by set: each variant's set contributes the
median over the rounds of its log `warm` samples, x[v, s], and a pair's log ratio in a set is
x[a, s] − x[b, s]. Two variants' turns in one round ran seconds apart; if the machine drifts
within a set, the per-round differences d[s, r] = log a[s, r] − log b[s, r] cancel that drift
and their median over the rounds, m[s], is a paired estimate of the same ratio.

What it measures, per table and pair (both variants complete in every set), in each set: the
within-set variance of each estimator (unpaired x[a] − x[b], paired m), by a bootstrap over the
set's rounds (`--boot` resamples, rounds drawn with replacement, each round's two turns kept
together); then, over the pairs of every table, the median ratio paired ÷ unpaired of those
variances, and the median share of the pair's between-set variance (the sample variance of
x[a, s] − x[b, s] over the sets, the spread the model's CI is built from) that the within-set
variance of the unpaired estimator makes up. Pairing can narrow a CI by at most that share:
where the between-set spread (fresh processes, the machine's state) dominates, pairing within
a round changes little, whatever it does within a set. It measures nothing itself.
"""

from __future__ import annotations

import argparse
import sys
from itertools import combinations
from pathlib import Path

import numpy as np
import xarray as xr

from fwbench.io.dims import STATUS_OK
from fwbench.io.rounds_file import WARM, joined_rows, variant_keys
from fwbench.io.variables import R

BOOT = 500


def rounds_paths(arguments: list[str]) -> list[str]:
    """The rounds files named, or found under each directory named."""
    paths = []
    for argument in arguments:
        path = Path(argument)
        paths += [str(p) for p in sorted(path.rglob("set*.nc"))] if path.is_dir() else [argument]
    return paths


def complete_logs(ds: xr.Dataset) -> tuple[list[str], np.ndarray]:
    """The names and log warm samples (variant, set, round) of the variants complete in
    every set and round."""
    ok = (ds[R.status] == STATUS_OK).all("set").values
    logs = np.log(ds[R.latency_s].sel(sample=WARM).transpose("variant", "set", "round").values)
    keep = ok & np.isfinite(logs).all(axis=(1, 2))
    names = ["/".join(key) for key, k in zip(variant_keys(ds), keep, strict=True) if k]
    return names, logs[keep]


def within_variances(a: np.ndarray, b: np.ndarray, boot: int, rng) -> tuple[float, float]:
    """One set's rounds of two variants (log samples by round): the bootstrap variance over
    rounds of the unpaired and the paired estimator of their log ratio."""
    rounds = a.size
    picks = rng.integers(0, rounds, (boot, rounds))
    unpaired = np.median(a[picks], axis=1) - np.median(b[picks], axis=1)
    paired = np.median(a[picks] - b[picks], axis=1)
    return float(np.var(unpaired, ddof=1)), float(np.var(paired, ddof=1))


def pair_figures(logs: np.ndarray, boot: int, rng) -> list[tuple[float, float]]:
    """Per pair of the table: (paired ÷ unpaired within-set variance, the unpaired
    within-set variance's share of the between-set variance of the set ratios)."""
    found = []
    sets = logs.shape[1]
    for i, j in combinations(range(logs.shape[0]), 2):
        within = [within_variances(logs[i, s], logs[j, s], boot, rng) for s in range(sets)]
        unpaired, paired = (float(np.mean(v)) for v in zip(*within, strict=True))
        ratios = np.median(logs[i], axis=1) - np.median(logs[j], axis=1)
        between = float(np.var(ratios, ddof=1)) if sets > 1 else np.nan
        found.append((paired / unpaired if unpaired else np.nan, unpaired / between))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--boot", type=int, default=BOOT)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    everything = []
    for ds in joined_rows(rounds_paths(args.paths)):
        names, logs = complete_logs(ds)
        if len(names) < 2 or logs.shape[1] < 2:
            continue
        figures = np.array(pair_figures(logs, args.boot, rng))
        everything.append(figures)
        print(
            f"{ds.attrs['arch']} b{ds.attrs['batch']}: {len(figures)} pairs; paired ÷ unpaired "
            f"within-set variance, median {np.nanmedian(figures[:, 0]):.2f}; unpaired "
            f"within-set share of the between-set variance, median "
            f"{np.nanmedian(figures[:, 1]):.2f}"
        )
    if not everything:
        print("no table with two complete variants in two sets", file=sys.stderr)
        return 1
    every = np.concatenate(everything)
    print(
        f"every table: {len(every)} pairs; paired ÷ unpaired within-set variance, median "
        f"{np.nanmedian(every[:, 0]):.2f} (quartiles {np.nanpercentile(every[:, 0], 25):.2f}–"
        f"{np.nanpercentile(every[:, 0], 75):.2f}); the unpaired within-set variance's share "
        f"of the between-set variance, median {np.nanmedian(every[:, 1]):.2f} (quartiles "
        f"{np.nanpercentile(every[:, 1], 25):.2f}–{np.nanpercentile(every[:, 1], 75):.2f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
