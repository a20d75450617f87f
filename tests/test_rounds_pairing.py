"""self_measurement/rounds_pairing.py: pairing within a round narrows a set's estimate where
the machine drifts within the set, and leaves it alone where it does not."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np

from conftest import REPO

SCRIPT = REPO / "self_measurement/rounds_pairing.py"


def load():
    spec = importlib.util.spec_from_file_location("rounds_pairing", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["rounds_pairing"] = module
    spec.loader.exec_module(module)
    return module


def table(drift_sd: float, seed: int = 0) -> np.ndarray:
    """Two variants, 3 sets × 20 rounds of log samples: a process effect per set (2%), noise
    per sample (1%) and, per round, a drift both variants share (drift_sd)."""
    rng = np.random.default_rng(seed)
    process = rng.normal(0, 0.02, (2, 3, 1))
    shared = rng.normal(0, drift_sd, (1, 3, 20))
    return (
        np.log([[1e-3]], dtype=float)[:, :, None]
        + process
        + shared
        + rng.normal(0, 0.01, (2, 3, 20))
    )


def test_pairing_cuts_a_shared_drift_and_leaves_independent_noise_alone():
    pairing = load()
    rng = np.random.default_rng(1)
    drifting = [pairing.pair_figures(table(0.05, s), 200, rng)[0] for s in range(20)]
    quiet = [pairing.pair_figures(table(0.0, s), 200, rng)[0] for s in range(20)]
    assert np.median([ratio for ratio, _ in drifting]) < 0.5  # the drift cancels round by round
    assert 0.7 < np.median([ratio for ratio, _ in quiet]) < 1.3  # nothing to cancel
    # the within-set error is a small share of the between-set spread (2% process effects)
    assert np.median([share for _, share in quiet]) < 0.5
