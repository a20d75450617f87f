"""Markdown helpers the report's sections share: nesting embedded files' headings, embedding
the summary tables, figure links relative to the report, a finding's few names (or their count),
JSON text from attributes, and tables of values as the files hold them (floats to 4 significant
digits)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fwbench.present.format import significant
from fwbench.present.tables import markdown_table


def demote(markdown: str, levels: int = 2) -> str:
    """Headings one or more levels down, so an embedded table file nests under a section."""
    return re.sub(r"^(#+) ", lambda m: "#" * (len(m.group(1)) + levels) + " ", markdown, flags=re.M)


def find_table(files: Mapping[str, Path], name: str) -> Path | None:
    """The table `name`, or `name_b<batch>` (the stats rule names the latency table by its
    batch)."""
    if name in files:
        return files[name]
    batched = [stem for stem in files if re.fullmatch(rf"{re.escape(name)}_b\d+", stem)]
    return files[batched[0]] if len(batched) == 1 else None


def embedded_tables(files: Mapping[str, Path], names: Sequence[str], heading: str) -> str:
    """`heading`, then each named table file with its headings demoted (or a note that it
    was not given)."""
    parts = [heading]
    for name in names:
        path = find_table(files, name)
        if path is None:
            parts.append(f"(The {name} table was not given.)\n")
        else:
            parts.append(demote(path.read_text().strip()) + "\n")
    return "\n".join(parts)


def link(path: Path, report_dir: Path) -> str:
    """The path of `path` relative to the report's directory, with forward slashes."""
    return Path(os.path.relpath(path, report_dir)).as_posix()


# A finding names at most this many cells inline; more are counted, and its table names them.
NAMED_AT_MOST = 3


def named(names: Sequence[str], where: str) -> str:
    """'a, b, c' where there are at most NAMED_AT_MOST names, else their count and where each
    is named: '15 (each: <where>)'."""
    if len(names) <= NAMED_AT_MOST:
        return ", ".join(names)
    return f"{len(names)} (each: {where})"


def parse_json(text: Any) -> Any:
    """A JSON attribute's value ({} for none or ''); text that is no JSON as it is."""
    try:
        return json.loads(text) if isinstance(text, str) and text else {}
    except json.JSONDecodeError:
        return text


def cell(value: Any) -> Any:
    """Floats to 4 significant digits (— when not finite); everything else as it is."""
    return significant(float(value), 4) if isinstance(value, float | np.floating) else value


def table(header: Sequence[str], rows: Any) -> str:
    return markdown_table(header, ([cell(v) for v in row] for row in rows))


def frame_table(frame: pd.DataFrame) -> str:
    """A DataFrame as it is, column by column."""
    return table(list(frame.columns), frame.itertuples(index=False, name=None))
