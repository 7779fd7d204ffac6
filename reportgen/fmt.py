"""One home for turning numbers and rank lists into the text a report shows (issue 15).

Foundation layer: used by analysis (notes), rules (finding texts), site (the template filters `ms`, `pct`, `pct1`,
`num`) and compare; it imports nothing of ours. Every function takes what a page or a finding may hold (None, NaN,
numpy scalars, garbage) and returns a string; "—" stands for a missing value.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Iterable, Optional

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
    """A duration in ms for a table cell (filter `ms`): thousands separators and 3 decimals from 1 ms up; below,
    3 significant digits ("0.0123", "0.000412"), never "0.000" for a time that is not zero. (A column of ms keeps
    its unit; the sentences' `ms` switches to µs.)"""
    if type(v) is not float:  # (a float, the common case, goes straight below)
        if v is None:
            return MISSING
        try:
            v = float(v)
        except (TypeError, ValueError):
            return str(v)  # a label in a number column
    if v != v:
        return MISSING
    if v != 0 and -1 < v < 1:
        # `significant(v, 3)`; from 0.0001 up, Python's "#.3g" writes the same (3 significant digits, kept zeros,
        # no exponent below 1), ~4x faster (a rank page has a hundred such cells)
        return f"{v:#.3g}" if v >= 1e-4 or v <= -1e-4 else significant(v, 3)
    return f"{v:,.3f}"


def ms_cells(values: list) -> list:
    """`[ms_cell(v) for v in values]` for a list of floats: one of 1 ms or more in size (most of them) written here
    at once, as `ms_cell` writes it (a rank page has some 250 such cells: a call each less)."""
    return [f"{v:,.3f}" if v >= 1 or v <= -1 else ms_cell(v) for v in values]


def significant(f: float, digits: int = 3) -> str:
    """`f` with `digits` significant digits in plain decimal notation: 0.000412 -> "0.000412", 12.345 -> "12.3",
    1234.5 -> "1,234" (whole numbers keep every digit)."""
    if f == 0 or f != f:
        return "0"
    a = abs(f)
    decimals = max(0, digits - 1 - math.floor(math.log10(a)))
    text = f"{f:,.{decimals}f}"
    shown = abs(float(text.replace(",", "")))
    if shown and shown >= 10 ** (digits - decimals):
        decimals = max(0, decimals - 1)  # 9.996 rounded up to 10.00: one decimal fewer
        text = f"{f:,.{decimals}f}"
    return text


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
    whole = f.is_integer()  # (f == int(f) for a finite value; an infinite one is not whole: int() would raise)
    if lang != i18n.DEFAULT:  # the locale's grouping and decimal signs (Babel)
        return (_babel_number if f else i18n.format_number)(f, 0 if whole else 2, lang)
    return f"{f:,.0f}" if whole else f"{f:,.2f}"


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
    floor = _floor(f, digits)
    if floor is not None:  # a share that is not zero but rounds to it: "<0.1 %", never "0.0 %"
        return floor + _babel_percent(10.0 ** -digits if digits > 0 else 1.0, digits, lang)
    return (_babel_percent if f and lang != i18n.DEFAULT else i18n.format_percent)(f, digits, lang)


def _floor(f: float, digits: int) -> Optional[str]:
    """"<" (or ">-") when `f` is not zero but rounds to zero at `digits` decimals, else None."""
    if f == 0 or abs(f) >= 0.5 * 10.0 ** -digits:
        return None
    return "<" if f > 0 else ">-"


class _Share(i18n.Percent):
    """A percentage in a finding's text that keeps a small non-zero share visible ("<0.1 %")."""

    def render(self, lang: Optional[str] = None) -> str:
        v, digits = self.params["value"], self.params["digits"]
        if not self.params["signed"] and _floor(v, digits) is not None:
            return _percent(v, digits, lang)
        return super().render(lang)


def share_text(v: Any, digits: int = 1) -> Any:
    """A 0..1 ratio as a percentage put into a finding's text (`rules.base.fmt_pct`): a message rendered in the
    language of the text around it ("35.0 %" in English, Babel's "35.0%" in Chinese), so a finding's `title` and
    `title_en` each read right. Missing: "—"."""
    f = _float(v)
    return MISSING if f is None else _Share(f * 100, digits)


def signed_percent(v: Optional[float], missing: str = "n/a", digits: int = 1) -> str:
    """A change already in percent, with its sign, in the language's style (run comparison): "+3.2 %", zh "+3.2%"."""
    f = _float(v)
    return missing if f is None else i18n.Percent(f, digits, signed=True).render()


def _small(f: float, digits: int) -> Optional[str]:
    """3 significant digits for a value under 1 that `digits` decimals would cut ("0.000412", not "0.000")."""
    if f == 0 or abs(f) >= 1:
        return None
    text = significant(f, 3)
    return text if float(text) != float(f"{f:.{digits}f}") else None


def signed(v: Optional[float], digits: int = 3) -> str:
    """A change with its sign, thousands separators and a fixed number of decimals (run comparison); a change
    under 1 keeps 3 significant digits ("+0.000300")."""
    f = _float(v)
    if f is None:
        return MISSING
    small = _small(f, digits)
    return ("+" + small if f > 0 else small) if small else f"{f:+,.{digits}f}"


def fixed(v: Optional[float], digits: int = 3) -> str:
    """A number with thousands separators and a fixed number of decimals; under 1, 3 significant digits when the
    decimals would cut them."""
    f = _float(v)
    if f is None:
        return MISSING
    return _small(f, digits) or f"{f:,.{digits}f}"


# --- numbers in sentences (finding texts) -------------------------------------------------------------------------

def ms(v: Any) -> str:
    """A duration in a sentence, 3 significant digits: "1,234 ms", "12.3 ms", "1.23 ms"; below 1 ms in µs
    ("123 µs", "2.10 µs"), below 1 µs in ns; zero is "0 ms"."""
    f = _float(v)
    if f is None:
        return MISSING
    if f == 0:
        return "0 ms"
    if abs(f) < 100:
        f = float(f"{f:.2e}")  # 3 significant digits first, so 0.9996 ms is "1.00 ms", not "1,000 µs"
    a = abs(f)
    if a >= 100:
        return f"{f:,.0f} ms"
    if a >= 1:
        return significant(f, 3) + " ms"
    if a >= 0.001:
        return significant(f * 1e3, 3) + " µs"
    return significant(f * 1e6, 3) + " ns"


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


def number_runs(values: Iterable[int], dash: str = "–") -> list[str]:
    """Runs of consecutive integers, in the order given: [0, 1, 2, 3, 5] -> ["0–3", "5"]. The one implementation of
    compact rank (and step) ranges; sort first where the order does not matter."""
    parts: list[str] = []
    it = iter(values)
    start = prev = next(it, None)
    if start is None:
        return parts
    for r in [*it, None]:
        if r is not None and r == prev + 1:
            prev = r
            continue
        parts.append(f"{start}" if start == prev else f"{start}{dash}{prev}")
        if r is not None:
            start = prev = r
    return parts


def compact_ranks(ranks: Iterable[int], limit: Optional[int] = 24, *, dash: str = "–", sep: str = ", ",
                  empty: str = "none") -> str:
    """Runs of ranks: "0–3, 5, 8–15" (at most `limit` runs, then "… (N in all)"; `empty` for none). `dash` and
    `sep`: the spelling of a key (compare.json's groups: "0-3,5")."""
    parts = number_runs(ranks, dash)
    if not parts:
        return empty
    return joined(parts, limit) if limit is not None else sep.join(parts)
