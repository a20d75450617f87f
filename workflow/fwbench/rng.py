"""The one way fwbench seeds randomness: a stream per (seed, purpose), stable across runs."""

from __future__ import annotations

import zlib

import numpy as np


def seeded_rng(seed: int, purpose: str, *extra: int) -> np.random.Generator:
    """A generator that depends on the seed, on what it is for and on any extra integers, so
    two purposes never share a stream and a rerun draws the same numbers (crc32, unlike
    hash(), does not change between processes)."""
    return np.random.default_rng([seed, *extra, zlib.crc32(purpose.encode())])


def seeded_shuffle(items: list, seed: int, purpose: str) -> list:
    """`items` in an order drawn from (seed, purpose): the same on every rerun."""
    order = seeded_rng(seed, purpose).permutation(len(items))
    return [items[i] for i in order]
