"""How numbers are written for people: every table, figure label and report line uses these."""

from __future__ import annotations

import math
import numbers
from typing import Any

MISSING = "—"  # no number: absent, NaN or not measured


def _finite(value: Any) -> bool:
    """A real number (numpy's included) that is not NaN or infinite; bools are not numbers."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def fixed(value: Any, scale: float = 1.0, digits: int = 1) -> str:
    """`value × scale` with thousands separators and `digits` decimals ('1,234.5'); '—' for
    None/NaN; +inf is 'never' (a break-even that never comes)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if isinstance(value, float) and math.isinf(value):
        return "never" if value > 0 else "-inf"
    return f"{value * scale:,.{digits}f}"


def significant(value: Any, digits: int = 3) -> str:
    """`digits` significant digits; '—' for None, NaN and infinities."""
    return f"{value:.{digits}g}" if _finite(value) else MISSING


def latency_us(seconds: Any) -> str:
    """Seconds as µs: one decimal from 10 µs up, three significant digits below."""
    if not _finite(seconds):
        return MISSING
    micro = seconds * 1e6
    return f"{micro:,.1f}" if micro >= 10 else f"{micro:.3g}"


def short(value: float) -> str:
    """Axis-label numbers: three significant digits below 100, whole numbers above."""
    return f"{value:.3g}" if value < 100 else f"{value:,.0f}"


def percent(fraction: float) -> str:
    """A fraction as a percentage: two significant digits below 10%, whole numbers above."""
    value = 100 * fraction
    return f"{value:.2g}%" if value < 10 else f"{value:.0f}%"


def times(value: Any) -> str:
    """A ratio as '1.23×'; '—' when it is not a finite number."""
    return f"{value:.3g}×" if _finite(value) else MISSING


def p_value(p: Any) -> str:
    """A p value as every table and finding prints it: 2 significant digits, '< 0.0001' below
    that."""
    if not _finite(p):
        return MISSING
    return "< 0.0001" if p < 1e-4 else f"{p:.2g}"


def speedup_with_ci(value: Any, low: Any, high: Any) -> str:
    """A ratio with its CI as every table and finding prints it: '1.23 [1.10, 1.38]'."""
    return f"{fixed(value, digits=2)} [{fixed(low, digits=2)}, {fixed(high, digits=2)}]"
