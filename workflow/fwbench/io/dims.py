"""The dimensions of a cell and its key, cell statuses and the baseline mode: declared once.

A cell is a `CellKey` over CELL_DIMS. Code that names a cell takes, passes and prints a key
(never a positional tuple): adding a dimension adds a field here and a coordinate in the plan,
and every reader that goes through the key follows.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from fwbench.precisions import BFLOAT16 as BFLOAT16
from fwbench.precisions import FLOAT32 as FLOAT32
from fwbench.precisions import PRECISIONS as PRECISIONS

STATUS_OK = "ok"
STATUS_FAILED = "failed"
STATUS_ABSENT = "absent"  # no cell was given for this position of the aggregate
# The mode every framework has: compiled modes are measured against it.
EAGER_MODE = "eager"
# FLOAT32 (fwbench.precisions, re-exported beside the cell key) is every cell's precision
# unless it names another: cells before precision was a dimension.


@dataclass(frozen=True, order=True)
class CellKey:
    """One cell: its framework, mode, architecture, batch and precision (last, float32 unless
    named: what the model computes in)."""

    framework: str
    mode: str
    arch: str
    batch: int
    precision: str = FLOAT32

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> CellKey:
        """The key from anything that names each dimension (a cell's attributes, a row); one
        that names no precision is float32 (a cell before precision was a dimension)."""
        missing = [name for name in CELL_DIMS if name not in values and name != "precision"]
        if missing:
            raise KeyError(f"no {', '.join(missing)} to name a cell")
        return cls(
            str(values["framework"]),
            str(values["mode"]),
            str(values["arch"]),
            int(values["batch"]),
            str(values.get("precision", FLOAT32)),
        )

    @property
    def variant(self) -> tuple[str, str]:
        """(framework, mode): what the comparisons set against each other."""
        return self.framework, self.mode

    @property
    def name(self) -> str:
        """framework/mode/arch/b<batch>, and the precision where it is not float32."""
        name = f"{self.framework}/{self.mode}/{self.arch}/b{self.batch}"
        return name if self.precision == FLOAT32 else f"{name}/{self.precision}"

    def sel(self) -> dict[str, Any]:
        """The key as xarray's `sel` arguments."""
        return dict(zip(CELL_DIMS, self.values(), strict=True))

    def values(self) -> tuple[Any, ...]:
        """The coordinates in CELL_DIMS order (a position in an array over CELL_DIMS)."""
        return tuple(getattr(self, d) for d in CELL_DIMS)

    def position(self, coords: Mapping[str, Any]) -> tuple[int, ...]:
        """The key's index in an array over CELL_DIMS whose values `coords` gives."""
        return tuple(
            np.asarray(coords[d]).tolist().index(v)
            for d, v in zip(CELL_DIMS, self.values(), strict=True)
        )

    @property
    def row(self) -> tuple[Any, ...]:
        """What a comparison holds fixed: every coordinate but the variant's."""
        values = zip(CELL_DIMS, self.values(), strict=True)
        return tuple(v for d, v in values if d not in VARIANT_DIMS)

    def with_batch(self, batch: int) -> CellKey:
        return replace(self, batch=int(batch))

    def with_mode(self, mode: str) -> CellKey:
        return replace(self, mode=mode)

    def with_precision(self, precision: str) -> CellKey:
        return replace(self, precision=precision)

    def __str__(self) -> str:
        return self.name


# The order of a cell's dimensions in every array: batch last (fits and scans over batches run
# along the last axis); CellKey's fields put precision last so that a key named by position
# (framework, mode, arch, batch) is a float32 cell.
CELL_DIMS = ("framework", "mode", "arch", "precision", "batch")
assert sorted(CELL_DIMS) == sorted(f.name for f in fields(CellKey))
VARIANT_DIMS = ("framework", "mode")  # what the comparisons set against each other


def along(values: Any, dim: str, dims: tuple[str, ...] = CELL_DIMS) -> np.ndarray:
    """`values` of one dimension shaped to broadcast over an array in `dims` order."""
    shape = [1] * len(dims)
    shape[dims.index(dim)] = -1
    return np.asarray(values).reshape(shape)


def keys_where(coords: Mapping[str, Any], mask: np.ndarray) -> Iterator[CellKey]:
    """The cells where `mask` (over CELL_DIMS, in that order) holds; `coords` gives each
    dimension's values (a Dataset or a dict of sequences)."""
    values = [np.asarray(coords[d]).tolist() for d in CELL_DIMS]
    for index in zip(*np.nonzero(mask), strict=True):
        named = {
            d: dim_values[i] for d, dim_values, i in zip(CELL_DIMS, values, index, strict=True)
        }
        yield CellKey(**named)


def variants_in(data: Any, compiled_only: bool = False) -> list[tuple[str, str]]:
    """(framework, mode) pairs with at least one cell or run (ok or failed), in the data's
    order: `data` is stats.nc or the stacked training runs (a `status` over framework, mode
    and more)."""
    status = data["status"].transpose("framework", "mode", ...).values
    found = []
    for f, framework in enumerate(data["framework"].values.tolist()):
        for m, mode in enumerate(data["mode"].values.tolist()):
            if compiled_only and mode == EAGER_MODE:
                continue
            if (status[f, m] != STATUS_ABSENT).any():
                found.append((framework, mode))
    return found


def nearest_batch(batches: list[int], wanted: int) -> int:
    """The batch nearest `wanted` on a log scale (the larger of two as near): the table
    batch's rule (stats.table_batch), and the rounds' default batch."""
    return min((int(b) for b in batches), key=lambda b: (abs(math.log(b / wanted)), -b))
