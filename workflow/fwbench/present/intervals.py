"""What a figure's whiskers are, in one sentence: the figure's own note and its caption in the
report say it in these words (workflow/report/*.rst in the same words, less the level, which
only stats.nc knows). How each interval is made, its formula included, is docs/method.md's, and
the report's method section prints stats.nc's `median_ci_level`: nowhere else."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from fwbench.present.format import percent

METHOD_DOC = "docs/method.md"
# The report is results/report.md: the method page from there.
METHOD_LINK = f"../{METHOD_DOC}"


def coverage(attrs: Mapping[str, Any]) -> str:
    """Which variation the sweep's intervals cover: between processes where stats.nc's
    `median_ci_level` (fwbench.analysis.estimators.ci_level) says so, else one process's."""
    if str(attrs.get("median_ci_level", "")).startswith("between processes"):
        return (
            "which covers the variation between fresh processes, within a process and the "
            "machine's drift over the sweep"
        )
    return "a bootstrap of one process's timings, which covers within-process variation only"


def whiskers(attrs: Mapping[str, Any], of: str) -> str:
    """'Whiskers: the 95% CI of <of>, which covers …' (no full stop)."""
    confidence = percent(float(attrs.get("stats_confidence", math.nan)))
    return f"Whiskers: the {confidence} CI of {of}, {coverage(attrs)}"


def whiskers_note(attrs: Mapping[str, Any], of: str) -> str:
    """The sentence under a figure: the whiskers, and where how they are made is."""
    return f"{whiskers(attrs, of)} (how: {METHOD_DOC})."


def whiskers_caption(attrs: Mapping[str, Any], of: str) -> str:
    """The sentence under a figure in the report, with a link to the method page."""
    return f"{whiskers(attrs, of)} (how: [{METHOD_DOC}]({METHOD_LINK}))."
