"""Plain values for page contexts."""

from __future__ import annotations

import math
from typing import Any, Optional


def num(v: Any) -> Optional[float]:
    """A finite float, or None (for NaN, inf, missing and non-numbers): what templates and JSON can show."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) or math.isinf(f) else f


def stacked_bar_rows(frame, columns, labels: list[str], max_bars: int) -> tuple[list[dict], str]:
    """Rows for a stacked bar per rank: {label, order, phase, phase_order, value}, mean over `frame`'s columns.

    `frame` is indexed by rank. Above `max_bars` ranks, consecutive ranks are grouped into one bar (their mean),
    so the chart stays readable at thousands of ranks. Returns the rows and the x-axis title.
    """
    ranks = list(frame.index)
    if len(ranks) <= max_bars:
        groups, x_title = [[r] for r in ranks], "Rank"
    else:
        size = math.ceil(len(ranks) / max_bars)
        groups = [ranks[i:i + size] for i in range(0, len(ranks), size)]
        x_title = f"Ranks (groups of {size}, mean)"
    rows = []
    for gi, g in enumerate(groups):
        label = str(g[0]) if len(g) == 1 else f"{g[0]}–{g[-1]}"
        for pi, (c, lab) in enumerate(zip(columns, labels)):
            v = num(frame.loc[g, c].mean()) if c in frame else None
            if v is not None:
                rows.append({"label": label, "order": gi, "phase": lab, "phase_order": pi, "value": round(v, 4)})
    return rows, x_title


def fmt_list(items: list, limit: int = 16) -> str:
    s = ", ".join(str(i) for i in items[:limit])
    return s + (f", … ({len(items)} in all)" if len(items) > limit else "")


def compact_ranks(ranks: list[int]) -> str:
    """0-3, 5, 8-15 style."""
    if not ranks:
        return "none"
    parts, start, prev = [], ranks[0], ranks[0]
    for r in ranks[1:] + [None]:  # type: ignore[list-item]
        if r is not None and r == prev + 1:
            prev = r
            continue
        parts.append(f"{start}" if start == prev else f"{start}–{prev}")
        if r is not None:
            start = prev = r
    return fmt_list(parts, 24)
