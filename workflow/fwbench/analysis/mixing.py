"""What the aggregate refuses to mix (fwbench.analysis.aggregate): two cells at one position,
two versions of one framework or of one package its modes use on one system, two devices on
one system. Each refusal names both files."""

from __future__ import annotations

import json
from collections.abc import Sequence

from fwbench.io.cell_file import CellRecord
from fwbench.io.dims import CellKey
from fwbench.io.per_system import SYSTEM


def refuse_mixed(records: Sequence[CellRecord]) -> None:
    """Raise on the first mix among `records` (their systems already assigned)."""
    _check_unique_positions(records)
    _check_agree(records, "framework_version", within_framework=True)
    _check_versions(records)
    _check_agree(records, "device", within_framework=False)


def _check_unique_positions(records: Sequence[CellRecord]) -> None:
    seen: dict[tuple[str, CellKey, int], str] = {}
    for record in records:
        position = (record.attrs[SYSTEM], record.key, record.process)
        if position in seen:
            raise ValueError(
                f"two cells for {record.attrs[SYSTEM]}/{record.key} "
                f"process {record.process}: {seen[position]} and {record.path}"
            )
        seen[position] = record.path


def _check_agree(records: Sequence[CellRecord], attr: str, within_framework: bool) -> None:
    """Raise when two cells of one system (and framework, if `within_framework`) disagree on
    `attr`; cells that do not record it are not counted."""
    first: dict[tuple[str, str], CellRecord] = {}
    for record in records:
        value = record.attrs.get(attr, "")
        if value in ("", None):
            continue
        group = (record.attrs[SYSTEM], record.key.framework if within_framework else "")
        if group not in first:
            first[group] = record
        elif first[group].attrs[attr] != value:
            scope = "/".join(part for part in group if part)
            raise ValueError(
                f"{scope} cells disagree on {attr}: {first[group].attrs[attr]!r} in "
                f"{first[group].path} but {value!r} in {record.path}; aggregate one at a time"
            )


def package_versions(record: CellRecord) -> dict[str, str]:
    """A cell's recorded {package: version} (its mode's share of the framework's stack)."""
    text = record.attrs.get("versions", "")
    return json.loads(text) if text else {}


def _check_versions(records: Sequence[CellRecord]) -> None:
    """Raise when two cells of one system and framework record different versions of one
    package; a package only some modes use (a runtime) is compared where it is recorded."""
    first: dict[tuple[str, str, str], tuple[str, CellRecord]] = {}
    for record in records:
        for package, version in package_versions(record).items():
            where = (record.attrs[SYSTEM], record.key.framework, package)
            seen = first.setdefault(where, (version, record))
            if seen[0] != version:
                raise ValueError(
                    f"{where[0]}/{where[1]} cells disagree on {package}: {seen[0]!r} in "
                    f"{seen[1].path} but {version!r} in {record.path}; aggregate one at a time"
                )
