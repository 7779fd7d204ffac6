"""One home for turning values into numbers a report can show and JSON can carry.

Used at every level of the pipeline (discovery, loaders, analysis, rules, site), so it imports nothing of ours.
"""

from __future__ import annotations

import math
from typing import Any, Optional


MAX_ABS_NUMBER = 2.0 ** 62  # beyond this no profiler value (ns since 1970 is ~1.8e18) is meaningful
MAX_INT = 2 ** 62
NA_TOKENS = frozenset(("", "N/A", "NA", "NONE", "NULL", "-", "--"))


def clean_cell(value: str) -> str:
    """Strip the whitespace and the trailing tab torch_npu adds to timestamps."""
    return value.strip().strip("\t").strip()


def to_float(value: Any) -> float:
    """Parse a number; `N/A`, empty and garbage give NaN, and so do non-finite and absurd values (`inf`, `1e400`,
    30-digit integers: |x| > MAX_ABS_NUMBER), so nothing downstream sees an infinity or overflows an Int64."""
    if value is None or isinstance(value, bool):
        return math.nan
    if isinstance(value, (int, float)):
        try:
            v = float(value)
        except OverflowError:
            return math.nan
    elif type(value) is str:
        try:  # the common case ("1763717400354549.930"): float() strips the whitespace clean_cell strips
            v = float(value)
        except (ValueError, OverflowError):  # "N/A", "", garbage, a trailing tab and more
            v = _cleaned_float(value)
    else:
        v = _cleaned_float(str(value))
    if not math.isfinite(v) or abs(v) > MAX_ABS_NUMBER:
        return math.nan
    return v


def _cleaned_float(s: str) -> float:
    s = clean_cell(s)
    if not s or s.upper() in NA_TOKENS:
        return math.nan
    try:
        return float(s)
    except (ValueError, OverflowError):
        return math.nan


def to_int(value: Any) -> Optional[int]:
    """An integer (step number, id, rank) from an int, "12", " 12 ", "12.0" or 12.0; None for garbage, missing,
    non-finite, fractional or absurd (> MAX_INT) values."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if abs(value) <= MAX_INT else None
    v = to_float(value)
    if math.isnan(v) or abs(v) > MAX_INT or not v.is_integer():
        return None
    return int(v)


def finite(v: Any) -> Optional[float]:
    """A finite float, or None (for NaN, inf, missing and non-numbers): what templates and JSON can show."""
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):
        return None
    return None if math.isnan(f) or math.isinf(f) else f


def rounded(v: Any, digits: int = 6) -> Optional[float]:
    """`finite(v)` rounded to `digits` decimals; None when not a finite number."""
    f = finite(v)
    return None if f is None else round(f, digits)


def json_clean(v: Any) -> Any:
    """JSON-safe copy: numpy scalars to Python, NaN/inf to None, floats to 15 significant digits, keys to str."""
    if isinstance(v, dict):
        return {str(k): json_clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_clean(x) for x in v]
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        try:
            v = v.item()
        except (ValueError, AttributeError):
            return str(v)
    if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
        return v
    if isinstance(v, float):
        if not math.isfinite(v):
            return None
        return float(f"{v:.15g}")
    return str(v)


def extreme_points(values, n: int):
    """The positions (ascending) of at most `n` of `values` (a float array without NaN, in drawing order) that keep
    every extreme the eye would see: the array cut into n // 2 equal buckets, in each its first maximum and its
    first minimum. The peak and the troughs of a saw-tooth (allocated in forward, freed in backward) both stay;
    a uniform subsample would drop them. Every position when there are `n` or fewer."""
    import numpy as np

    v = np.asarray(values, dtype="float64")
    if len(v) <= n:
        return np.arange(len(v))
    buckets = max(1, n // 2)
    bucket = np.arange(len(v)) * buckets // len(v)
    starts = np.flatnonzero(np.r_[True, bucket[1:] != bucket[:-1]])  # every bucket holds values (len > n)
    picks = []
    for reduce in (np.maximum, np.minimum):
        at = np.flatnonzero(v == reduce.reduceat(v, starts)[bucket])
        picks.append(at[np.r_[True, bucket[at][1:] != bucket[at][:-1]]])  # the first in each bucket
    return np.unique(np.concatenate(picks))
