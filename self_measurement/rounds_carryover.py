"""Carryover in the rounds: does a variant's time depend on which variant ran just before it
(a predecessor's thread pool still spinning, its working set in the caches, its frequency)?

    .venv/bin/python self_measurement/rounds_carryover.py RESULTS_DIR_OR_ROUNDS_FILES...
        [--boot 2000] [--seed 0] [--flagged-only]

Reads the rounds files (results/rounds/<system>/<arch>/b<batch>/set<k>.nc; a directory is
searched for them, under its rounds/ or results/rounds/ where it has one), each row's sets
joined into one table (fwbench.io.rounds_file.joined_rows).

What it measures. In a set, each round runs every variant once in a shuffled order, and the
rounds run back to back; the predecessor of B's turn is the variant at the place before B's
(`position` − 1) in the same round; for B first in its round, the last variant of the round
before (the coordinator goes straight on, so that one ran just before B). Left out: the first
turn of a set's first round (the warm-ups ran before it), a turn after a failed turn (a failed
turn has no position), and a turn whose predecessor is B itself (last of one round and first of
the next: no switch happened). For B after A, per sample (`warm`, and apart `after_switch`):

    d = log latency of B's turn − median log latency of B's turns in that set that A did not
        precede (its other turns with a known predecessor)
    effect[B, A] = the mean of d over the turns A preceded, in every set of the table

Comparing within a set cancels whatever moved all of B's turns in that set (the machine's state,
the process); leaving A's turns out of the reference keeps a real carryover from moving the
reference it is measured against. A positive effect: B is slower after A than after its other
predecessors; printed as exp(effect) − 1 in per cent.

CI: a bootstrap over rounds (2000 resamples of each set's rounds, with replacement, every
quantity recomputed), the percentile interval. Rounds, not turns, are resampled because a round
is the unit the order was shuffled for: it keeps who preceded whom intact; and the reference
median comes from the same rounds, so its error belongs in the interval, where a t interval
over A's turns would leave it out (with 5 variants the reference adds about half of the
turns' own variance). The sets are not resampled: the effects are within sets, and 2-3 sets are
too few to resample. Calibrated on simulated tables (tests/test_rounds_carryover.py's, 3-12
variants, 2-3 sets × 10-20 rounds, normal and Student-t(3) noise, no carryover, both
samples): the 95 % intervals held 0 in 93-95 % of the pairs with 4 turns or more (98.5 % with 3
variants), 87 % of those with 3 turns and 77 % with 2, so a pair with fewer than MIN_TURNS = 4
turns gets its effect but no interval (with 3 sets × 20 rounds a pair has about 60 / variants
turns).

What it cannot tell: effects are relative to B's other turns, so a carryover that every
predecessor gives B alike (the turn's switch, measured by after_switch over warm) reads 0, and a
large one from A moves B's effects after its other predecessors the other way, by about its
share of their references (simulated: 10 % after one of 4 predecessors read −2 % after each of
the other 3; after one of 9, −0.5 %).

Output, per table: one line per (B, A) pair with its turns and its warm and after_switch effects
with their 95 % CIs, `*` where the CI excludes 0; then per sample the pair with the largest
|effect| (the largest of many estimates overstates its pair's true effect) and how many pairs'
CIs exclude 0 against the 5 % expected by chance if no pair had any carryover, with the binomial
probability of so many (a rough yardstick: the pairs of a table share rounds and references, so
they are not independent). Last, the same over every table. Run it on a sweep's results; it
measures nothing itself.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr
from scipy import stats as scipy_stats

from fwbench.io.dims import STATUS_FAILED
from fwbench.io.rounds_file import SAMPLES, joined_rows
from fwbench.io.variables import R

CONFIDENCE = 0.95
BOOT = 2000
MIN_TURNS = 4  # a pair with fewer turns gets an effect but no CI (module docstring)
NO_PREDECESSOR = -1
COLUMN = 30  # characters per sample in the printed table


@dataclass(frozen=True)
class Pair:
    """B's carryover after A in one table and one sample (log effect and its CI)."""

    table: str
    successor: str  # B
    predecessor: str  # A
    sample: str
    turns: int  # B's turns A preceded
    effect: float  # mean log of B's turn over its reference (module docstring)
    low: float  # NaN: too few turns for a CI
    high: float

    @property
    def has_ci(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)

    @property
    def excludes_zero(self) -> bool:
        return self.has_ci and (self.low > 0 or self.high < 0)


@dataclass(frozen=True)
class Summary:
    """Over a set of pairs: the largest |effect| and the CIs that exclude 0 against chance."""

    largest: Pair | None
    tested: int  # pairs with a CI
    excluding: int  # of which exclude 0
    expected: float  # (1 − CONFIDENCE) · tested
    p_chance: float  # P(at least `excluding` of `tested` by chance), binomial


def table_name(ds: xr.Dataset) -> str:
    attrs = ds.attrs
    return f"{attrs.get('system', '?')} {attrs.get('arch', '?')} b{attrs.get('batch', '?')}"


def predecessors(ds: xr.Dataset) -> np.ndarray:
    """(variant, set, round): the index of the variant whose turn ran just before this one, or
    NO_PREDECESSOR (no turn; the set's first turn; after a failed turn; after its own turn)."""
    position = ds["position"].transpose("variant", "set", "round").values.astype(int)
    failed = (ds["status"].transpose("variant", "set").values == STATUS_FAILED)[:, :, None]
    had_turn = np.concatenate(
        [_warmed(ds)[:, :, None], position[:, :, :-1] >= 0], axis=-1
    )  # alive at the round's start: warmed (round 0) or had a turn in the round before
    turn_failed = failed & had_turn & (position < 0)  # its turn in this round failed: no position
    places = (position >= 0).sum(axis=0) + turn_failed.sum(axis=0)  # (set, round)
    variants, sets, rounds = position.shape
    found = np.full(position.shape, NO_PREDECESSOR)
    for s in range(sets):
        last = NO_PREDECESSOR  # who took the previous round's last place
        for r in range(rounds):
            ran = np.flatnonzero(position[:, s, r] >= 0)
            size = max([places[s, r]] + [position[v, s, r] + 1 for v in ran])
            by_place = np.full(size, NO_PREDECESSOR)
            by_place[position[ran, s, r]] = ran
            for v in ran:
                p = position[v, s, r]
                before = by_place[p - 1] if p > 0 else last
                found[v, s, r] = before if before != v else NO_PREDECESSOR
            last = by_place[-1] if size else NO_PREDECESSOR
    return found


def _warmed(ds: xr.Dataset) -> np.ndarray:
    """(variant, set): whether the worker was warmed (its first call timed); where the file
    does not record it, whether it has a turn in the first round."""
    first_turn = ds["position"].transpose("variant", "set", "round").values[:, :, 0] >= 0
    if R.first_call_warm_s not in ds:
        return first_turn
    return np.isfinite(ds[R.first_call_warm_s].transpose("variant", "set").values) | first_turn


def _nanmedian(x: np.ndarray) -> np.ndarray:
    """The median along the last axis, NaN left out (NaN where all are)."""
    ordered = np.sort(x, axis=-1)  # NaN last
    n = np.isfinite(x).sum(axis=-1, keepdims=True)
    low = np.take_along_axis(ordered, np.maximum((n - 1) // 2, 0), axis=-1)
    high = np.take_along_axis(ordered, n // 2, axis=-1)
    return np.where(n > 0, (low + high) / 2, np.nan)[..., 0]


def pair_effects(logs: np.ndarray, pred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(effect, turns), each (..., B, A), from logs and pred shaped (..., variant, set, round):
    effect[B, A] the mean over B's turns A preceded of their log over B's set's median of the
    turns A did not precede (NaN where A never preceded B, or B had no other turn)."""
    variants = logs.shape[-3]
    known = (pred >= 0) & np.isfinite(logs)
    effect = np.full(logs.shape[:-3] + (variants, variants), np.nan)
    turns = np.zeros(effect.shape, dtype=int)
    for a in range(variants):
        after = known & (pred == a)
        reference = _nanmedian(np.where(known & ~after, logs, np.nan))[..., None]
        d = np.where(after, logs - reference, np.nan)
        counted = np.isfinite(d)
        n = counted.sum(axis=(-2, -1))
        with np.errstate(invalid="ignore", divide="ignore"):
            effect[..., a] = np.where(counted, d, 0.0).sum(axis=(-2, -1)) / n
        turns[..., a] = n
    return effect, turns


def sample_logs(ds: xr.Dataset, sample: str) -> np.ndarray:
    """(variant, set, round): log latency of each turn's `sample` (NaN: no turn)."""
    latency = ds["latency_s"].sel(sample=sample).transpose("variant", "set", "round").values
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.log(np.where(latency > 0, latency, np.nan))


def bootstrap_effects(
    logs: np.ndarray, pred: np.ndarray, boot: int, rng: np.random.Generator
) -> np.ndarray:
    """(boot, B, A): the effects of `boot` resamples of each set's rounds (with replacement;
    a round keeps all its turns and who preceded whom)."""
    _, sets, rounds = logs.shape
    index = rng.integers(0, rounds, (boot, 1, sets, rounds))
    take = lambda x: np.take_along_axis(x[None], index, axis=-1)  # noqa: E731
    return pair_effects(take(logs), take(pred))[0]


def carryover(
    ds: xr.Dataset, boot: int = BOOT, seed: int = 0, confidence: float = CONFIDENCE
) -> list[Pair]:
    """Every (B, A) pair of one row's table (its sets joined along `set`), per sample: the
    effect of A preceding B and its bootstrap percentile CI (module docstring)."""
    pred = predecessors(ds)
    names = [str(v) for v in ds["variant"].values]
    name = table_name(ds)
    alpha = 1 - confidence
    pairs = []
    for k, sample in enumerate(SAMPLES):
        logs = sample_logs(ds, sample)
        effect, turns = pair_effects(logs, pred)
        rng = np.random.default_rng([seed, k])
        replicates = bootstrap_effects(logs, pred, boot, rng)
        with np.errstate(invalid="ignore"):
            finite = np.isfinite(replicates).mean(axis=0)
        for b, a in zip(*np.nonzero(turns > 0), strict=True):
            low = high = math.nan
            if turns[b, a] >= MIN_TURNS and finite[b, a] >= 0.99:
                low, high = np.nanquantile(replicates[:, b, a], [alpha / 2, 1 - alpha / 2])
            ci = float(low), float(high)
            pairs.append(
                Pair(name, names[b], names[a], sample, int(turns[b, a]), float(effect[b, a]), *ci)
            )
    return pairs


def summarize(pairs: list[Pair], confidence: float = CONFIDENCE) -> Summary:
    """The largest |effect| among the pairs with a CI, and how many CIs exclude 0 against the
    share expected by chance."""
    tested = [p for p in pairs if p.has_ci]
    excluding = sum(p.excludes_zero for p in tested)
    expected = (1 - confidence) * len(tested)
    p_chance = float(scipy_stats.binom.sf(excluding - 1, len(tested), 1 - confidence))
    largest = max(tested, key=lambda p: abs(p.effect), default=None)
    return Summary(largest, len(tested), excluding, expected, p_chance)


def pct(x: float) -> str:
    return f"{math.expm1(x):+.1%}" if math.isfinite(x) else "—"


def ci_text(pair: Pair | None) -> str:
    """`effect [low, high]` in per cent, `*` where the CI excludes 0 (COLUMN characters)."""
    if pair is None:
        return f"{'—':<{COLUMN}}"
    ci = f"[{pct(pair.low)}, {pct(pair.high)}]" if pair.has_ci else "(too few turns)"
    return f"{pct(pair.effect):>7} {ci:<18} {'*' if pair.excludes_zero else ' '}  "


def table_lines(pairs: list[Pair], flagged_only: bool = False) -> list[str]:
    """One line per (B, A): turns, then each sample's effect and CI (`*`: excludes 0)."""
    by_pair: dict[tuple[str, str], dict[str, Pair]] = {}
    for p in pairs:
        by_pair.setdefault((p.successor, p.predecessor), {})[p.sample] = p
    width = max([len(b) for b, _ in by_pair] + [len("B")]) + 2
    a_width = max([len(a) for _, a in by_pair] + [len("after A")]) + 2
    lines = [
        f"{'B':<{width}}{'after A':<{a_width}}{'turns':>6}  "
        + "".join(f"{s + ' % [95% CI]':<{COLUMN}}" for s in SAMPLES).rstrip()
    ]
    for (b, a), samples in by_pair.items():
        if flagged_only and not any(p.excludes_zero for p in samples.values()):
            continue
        turns = max(p.turns for p in samples.values())
        lines.append(
            f"{b:<{width}}{a:<{a_width}}{turns:>6}  "
            + "".join(ci_text(samples.get(s)) for s in SAMPLES).rstrip()
        )
    return lines


def summary_lines(pairs: list[Pair]) -> list[str]:
    lines = []
    for sample in SAMPLES:
        s = summarize([p for p in pairs if p.sample == sample])
        if s.largest is None:
            lines.append(f"  {sample}: no pair with a CI")
            continue
        where = f"{s.largest.successor} after {s.largest.predecessor}"
        lines.append(
            f"  {sample}: largest |carryover| {where} ({s.largest.table}): "
            f"{pct(s.largest.effect)} [{pct(s.largest.low)}, {pct(s.largest.high)}]; "
            f"{s.excluding} of {s.tested} CIs exclude 0 (by chance ≈ {s.expected:.1f}, "
            f"P(≥ {s.excluding}) = {s.p_chance:.2g})"
        )
    return lines


def rounds_paths(arguments: list[str]) -> list[str]:
    """The rounds files named, and those under each directory named (its rounds/ or
    results/rounds/ where it has one)."""
    paths = []
    for argument in arguments:
        path = Path(argument)
        if not path.is_dir():
            paths.append(str(path))
            continue
        for sub in ("rounds", "results/rounds"):
            if (path / sub).is_dir():
                path = path / sub
                break
        paths += [str(p) for p in sorted(path.rglob("*.nc"))]
    return paths


def report(rows: list[xr.Dataset], boot: int, seed: int, flagged_only: bool) -> list[Pair]:
    every = []
    for ds in rows:
        if "position" not in ds:
            print(f"{table_name(ds)}: no positions recorded; left out\n")
            continue
        pairs = carryover(ds, boot=boot, seed=seed)
        every += pairs
        print(
            f"{table_name(ds)}: {ds.sizes['variant']} variants, {ds.sizes['set']} sets × "
            f"{ds.sizes['round']} rounds"
        )
        print("\n".join(table_lines(pairs, flagged_only)))
        print("\n".join(summary_lines(pairs)) + "\n")
    print(f"Over all {len(rows)} tables:")
    print("\n".join(summary_lines(every)))
    return every


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="results directories or rounds files")
    parser.add_argument("--boot", type=int, default=BOOT, help="bootstrap resamples")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--flagged-only", action="store_true", help="list only the pairs whose CI excludes 0"
    )
    args = parser.parse_args(argv)
    paths = rounds_paths(args.paths)
    if not paths:
        print("no rounds files found", file=sys.stderr)
        return 1
    report(joined_rows(paths), args.boot, args.seed, args.flagged_only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
