"""One home for turning numbers and rank lists into the text a report shows (issue 15).

Foundation layer: used by analysis (notes), rules (finding texts), site (the template filters `ms`, `pct`, `pct1`,
`num`) and compare; it imports nothing of ours. Every function takes what a page or a finding may hold (None, NaN,
numpy scalars, garbage) and returns a string; "—" stands for a missing value.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Optional

from reportgen import i18n

MISSING = "—"


def _float(v: Any) -> Optional[float]:
    """`v` as a float, None when it is missing, not a number or NaN."""
    if v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if f != f else f


# --- numbers in tables (template filters) -------------------------------------------------------------------------

def ms_cell(v: Any) -> str:
    """A duration in ms for a table cell: thousands separators, 3 decimals, scientific below 0.001 (filter `ms`)."""
    if v is None:
        return MISSING
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)  # a label in a number column
    if f != f:
        return MISSING
    if f != 0 and abs(f) < 0.001:
        return f"{f:.2e}"
    return f"{f:,.3f}"


# Babel formats a number in some 10 µs; a Chinese rank page has a hundred of them, mostly values that recur from
# page to page (operator counts, shares): remembered per (value, digits, language). (Not zeros: 0.0 and -0.0 are
# one key, and Babel may write them differently.)
@lru_cache(maxsize=1 << 16)
def _babel_number(f: float, digits: int, lang: str) -> str:
    return i18n.format_number(f, digits, lang)


@lru_cache(maxsize=1 << 16)
def _babel_percent(f: float, digits: int, lang: str) -> str:
    return i18n.format_percent(f, digits, lang)


def number(v: Any) -> str:
    """A count or amount: no decimals when whole, else 2 (filter `num`)."""
    f = _float(v)
    if f is None:
        return MISSING
    lang = i18n.current()
    if lang != i18n.DEFAULT:  # the locale's grouping and decimal signs (Babel)
        return (_babel_number if f else i18n.format_number)(f, 0 if f == int(f) else 2, lang)
    return f"{f:,.0f}" if f == int(f) else f"{f:,.2f}"


def percent(v: Any, digits: int = 1) -> str:
    """A value already in percent, 1 decimal (filter `pct`)."""
    f = _float(v)
    return MISSING if f is None else _percent(f, digits, None)  # zh: Babel's "12.3%"


def share(v: Any, digits: int = 1, lang: Optional[str] = None) -> str:
    """A 0..1 ratio as a percentage (filter `pct1`; finding texts)."""
    f = _float(v)
    return MISSING if f is None else _percent(f * 100, digits, lang)


def _percent(f: float, digits: int, lang: Optional[str]) -> str:
    lang = lang or i18n.current()
    return (_babel_percent if f and lang != i18n.DEFAULT else i18n.format_percent)(f, digits, lang)


def share_text(v: Any, digits: int = 1) -> Any:
    """A 0..1 ratio as a percentage put into a finding's text (`rules.base.fmt_pct`): a message rendered in the
    language of the text around it ("35.0 %" in English, Babel's "35.0%" in Chinese), so a finding's `title` and
    `title_en` each read right. Missing: "—"."""
    f = _float(v)
    return MISSING if f is None else i18n.Percent(f * 100, digits)


def signed_percent(v: Optional[float], missing: str = "n/a", digits: int = 1) -> str:
    """A change already in percent, with its sign, in the language's style (run comparison): "+3.2 %", zh "+3.2%"."""
    f = _float(v)
    return missing if f is None else i18n.Percent(f, digits, signed=True).render()


def signed(v: Optional[float], digits: int = 3) -> str:
    """A change with its sign, thousands separators and a fixed number of decimals (run comparison)."""
    return MISSING if v is None else f"{v:+,.{digits}f}"


def fixed(v: Optional[float], digits: int = 3) -> str:
    """A number with thousands separators and a fixed number of decimals."""
    return MISSING if v is None else f"{v:,.{digits}f}"


# --- numbers in sentences (finding texts) -------------------------------------------------------------------------

def ms(v: Any) -> str:
    """A duration in a sentence, digits by size: "1,234 ms", "12.3 ms", "1.23 ms", "0.123 ms"."""
    f = _float(v)
    if f is None:
        return MISSING
    a = abs(f)
    if a >= 100:
        return f"{f:,.0f} ms"
    if a >= 10:
        return f"{f:.1f} ms"
    if a >= 1:
        return f"{f:.2f} ms"
    return f"{f:.3f} ms"


# --- lists ---------------------------------------------------------------------------------------------------------

def joined(items: list, limit: int = 16) -> str:
    """"a, b, c, … (40 in all)"."""
    s = ", ".join(str(i) for i in items[:limit])
    return s + (f", … ({len(items)} in all)" if len(items) > limit else "")


def rank_list(ranks: list[int], limit: int = 12) -> str:
    """"1, 2, 3 and 5 more"."""
    s = ", ".join(str(r) for r in ranks[:limit])
    return s + (f" and {len(ranks) - limit} more" if len(ranks) > limit else "")


def ranks(ranks: list[int], limit: int = 8) -> str:
    """"rank 5", or "ranks 1, 2, 3 and 5 more"."""
    ranks = [int(r) for r in ranks]
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    return "ranks " + rank_list(ranks, limit)


def compact_ranks(ranks: list[int]) -> str:
    """Runs of ranks: "0–3, 5, 8–15"."""
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
    return joined(parts, 24)
