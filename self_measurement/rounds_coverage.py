"""Do the rounds' 95% CIs cover the truth, for every kind of pair? A simulation whose
assumptions are not the model's own, run through the project's estimator (Rounds).

    .venv/bin/python self_measurement/rounds_coverage.py [--sweeps 400] [--sets 3]
        [--tau 0.18] [--correlation 0.2] [--together] [--seed 0]

Each simulated sweep has TABLES tables (architectures) of the twelve default variants, whose
processes differ by their own spread (eager 3%, compiled 1%, ONNX Runtime and LiteRT 0.3%:
the spreads the default sweeps measured, rounded) and whose latency responds to the machine's
state with their own sensitivity γ (0.6–1.3; the two ONNX Runtime variants alike, 0.8). The
machine's state b(t) is one process over the sweep, shared by every table: a stationary
Gaussian (Ornstein–Uhlenbeck) with σ `--tau` (18% by default: a drifting sweep) whose
correlation time is `--correlation` of the sweep. Each set of each table runs at its own moment,
as the plan orders them (fwbench.plan.sweep.Plan.order staggers the tables' sets); with
`--together`, every table's set k runs at one moment, as the plan did before 2026-12-07.
Within a set, a variant's samples are lognormal with a 3% spread around its latency at the
set's state times exp(its process effect); the turn's first sample 5% slower.

The truth is the ratio at the sweep's mean state (b averaged over the sweep's time); the
absolute truth a variant's latency at that state. Printed per kind of pair: the share of 95%
CIs that hold the truth (target 93–97%), the median half-width, and the number of comparisons.
The kinds: eager–eager, eager–ORT, alike ORT pair (same γ), unalike pair (γ 0.6 against 1.3).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy import stats as scipy_stats

from fwbench.analysis.rounds import Rounds
from fwbench.io.dims import STATUS_OK, CellKey
from fwbench.io.rounds_file import SAMPLES

# (framework, mode, process spread, γ)
VARIANTS = (
    ("torch", "eager", 0.03, 1.0),
    ("torch", "compiled", 0.01, 1.2),
    ("torch", "aoti", 0.01, 1.1),
    ("torch", "onnxrt", 0.003, 0.8),
    ("jax", "eager", 0.03, 0.9),
    ("jax", "jit", 0.01, 1.3),
    ("jax", "export", 0.01, 1.0),
    ("tensorflow", "eager", 0.03, 1.1),
    ("tensorflow", "function", 0.01, 0.7),
    ("tensorflow", "xla", 0.01, 1.0),
    ("tensorflow", "litert", 0.003, 0.6),
    ("tensorflow", "onnxrt", 0.003, 0.8),
)
TABLES = ("mlp", "cnn", "rnn", "transformer", "vit")
SAMPLE_SD = 0.03
ROUNDS = 20


def _index(framework: str, mode: str) -> int:
    return next(i for i, v in enumerate(VARIANTS) if v[:2] == (framework, mode))


# per kind of pair, (i, j): j's speedup over i
PAIRS = {
    "eager-eager": [
        (_index("torch", "eager"), _index("jax", "eager")),
        (_index("torch", "eager"), _index("tensorflow", "eager")),
    ],
    "eager-ORT": [
        (_index("torch", "eager"), _index("torch", "onnxrt")),
        (_index("tensorflow", "eager"), _index("tensorflow", "onnxrt")),
    ],
    "alike ORT pair": [(_index("torch", "onnxrt"), _index("tensorflow", "onnxrt"))],
    "unalike pair": [(_index("tensorflow", "litert"), _index("jax", "jit"))],
}


@dataclass(frozen=True)
class Scenario:
    sets: int = 3
    tau: float = 0.18  # the state's σ (log)
    correlation: float = 0.2  # the state's correlation time, in sweeps
    together: bool = False  # every table's set k at one moment (the old plan)


def state_path(scenario: Scenario, rng: np.random.Generator, steps: int = 1000) -> np.ndarray:
    """b(t) on `steps` moments of the sweep: a stationary Ornstein–Uhlenbeck process."""
    keep = math.exp(-1 / (steps * scenario.correlation))
    shocks = rng.normal(0, scenario.tau * math.sqrt(1 - keep**2), steps)
    path = np.empty(steps)
    path[0] = rng.normal(0, scenario.tau)
    for t in range(1, steps):
        path[t] = keep * path[t - 1] + shocks[t]
    return path


def moments(scenario: Scenario, steps: int) -> np.ndarray:
    """Each (table, set)'s moment on the path: staggered, every job its own evenly spaced
    moment (set-major, as the plan's order); together, a table's set k beside the others'."""
    tables, sets = len(TABLES), scenario.sets
    place = np.arange(sets)[None, :] * tables + np.arange(tables)[:, None]
    if scenario.together:
        place = np.tile(np.arange(sets) * tables, (tables, 1))
    return ((place + 0.5) * steps // (tables * sets)).astype(int)


def table(
    arch: str, medians: np.ndarray, states: np.ndarray, rng: np.random.Generator
) -> xr.Dataset:
    """One table's rounds file (fwbench.io.rounds_file), its sets at `states`."""
    spread = np.array([v[2] for v in VARIANTS])
    gamma = np.array([v[3] for v in VARIANTS])
    n, sets = len(VARIANTS), len(states)
    center = np.log(medians)[:, None] + gamma[:, None] * states[None, :]
    center += rng.normal(0, 1, (n, sets)) * spread[:, None]
    latency = np.exp(center[..., None, None] + rng.normal(0, SAMPLE_SD, (n, sets, ROUNDS, 2)))
    latency[..., 0] *= 1.05
    return xr.Dataset(
        {
            "latency_s": (("variant", "set", "round", "sample"), latency),
            "status": (("variant", "set"), np.full((n, sets), STATUS_OK)),
        },
        coords={
            "variant": [f"{fw}/{mode}" for fw, mode, *_ in VARIANTS],
            "framework": ("variant", [v[0] for v in VARIANTS]),
            "mode": ("variant", [v[1] for v in VARIANTS]),
            "sample": list(SAMPLES),
        },
        attrs={"arch": arch, "batch": 32, "system": "sim"},
    )


def sweep(scenario: Scenario, seed: int) -> dict[str, list[tuple[bool, float]]]:
    """One simulated sweep: per kind of pair, (covered, half-width) of each table's pairs."""
    rng = np.random.default_rng(seed)
    path = state_path(scenario, rng)
    places = moments(scenario, len(path))
    medians = {arch: np.exp(rng.uniform(-8, -5, len(VARIANTS))) for arch in TABLES}
    rounds = Rounds(
        [table(arch, medians[arch], path[places[t]], rng) for t, arch in enumerate(TABLES)]
    )
    mean_state = float(path.mean())
    gamma = np.array([v[3] for v in VARIANTS])
    found: dict[str, list[tuple[bool, float]]] = {kind: [] for kind in PAIRS}
    for arch in TABLES:
        truth = np.log(medians[arch]) + gamma * mean_state
        for kind, pairs in PAIRS.items():
            for i, j in pairs:
                a, b = (CellKey(*VARIANTS[k][:2], arch, 32) for k in (i, j))
                value, se, dof = rounds.estimate(a, b)
                half = float(scipy_stats.t(dof).ppf(0.975)) * se
                found[kind].append((abs(value - (truth[i] - truth[j])) <= half, half))
    return found


def coverage(scenario: Scenario, sweeps: int, seed: int = 0) -> dict[str, tuple[float, float, int]]:
    """Per kind of pair: (share covered, median half-width as a ratio − 1, comparisons)."""
    pooled: dict[str, list[tuple[bool, float]]] = {kind: [] for kind in PAIRS}
    for k in range(sweeps):
        for kind, found in sweep(scenario, seed * 1_000_003 + k).items():
            pooled[kind] += found
    return {
        kind: (
            float(np.mean([c for c, _ in found])),
            math.expm1(float(np.median([h for _, h in found]))),
            len(found),
        )
        for kind, found in pooled.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=400)
    parser.add_argument("--sets", type=int, default=3)
    parser.add_argument("--tau", type=float, default=0.18)
    parser.add_argument("--correlation", type=float, default=0.2)
    parser.add_argument("--together", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    scenario = Scenario(args.sets, args.tau, args.correlation, args.together)
    print(f"{scenario}, {args.sweeps} sweeps of {len(TABLES)} tables")
    print("| pair | covered (target 93–97%) | median half-width | comparisons |")
    print("|---|---|---|---|")
    for kind, (covered, half, count) in coverage(scenario, args.sweeps, args.seed).items():
        print(f"| {kind} | {100 * covered:.1f}% | ±{100 * half:.1f}% | {count} |")


if __name__ == "__main__":
    main()
