"""Plain values for page contexts."""

from __future__ import annotations

from reportgen.i18n import N_, _

import math

import numpy as np
import pandas as pd

from reportgen.framepack import column_arrays
from reportgen.numbers import finite as num
from typing import Optional




def records(frame) -> list[dict]:
    """`frame.to_dict("records")` for the small per-rank frames the rank pages read, an order of magnitude faster
    (pandas builds each row through `itertuples`; thousands of rank pages pay that thousands of times): the values
    of `frame.to_numpy(dtype=object)`, read column by column from the frame's own arrays (`_object_column`;
    pandas' object array of a frame of mixed columns is built block by block, ~0.1 ms for a rank's few rows)."""
    if not len(frame):
        return []
    cols = column_names(frame)
    values = [_object_column(a) for a in column_arrays(frame)] if len(cols) else None
    if values is None or any(v is None for v in values):
        return [dict(zip(cols, row)) for row in frame.to_numpy(dtype=object).tolist()]
    return [dict(zip(cols, row)) for row in zip(*values)]


def column_names(frame) -> list:
    """`list(frame.columns)`, names held by pyarrow (pandas' `str` index) read from the Arrow array at once (pandas
    yields them one by one: ~7 us for a rank's frame of ten columns)."""
    names = frame.columns
    got = arrow_strings(names.array) if isinstance(names.dtype, pd.StringDtype) else None
    return got if got is not None else list(names)


_MASKED = (pd.arrays.IntegerArray, pd.arrays.FloatingArray, pd.arrays.BooleanArray)  # (pandas' nullable numbers)


def _object_column(a) -> Optional[list]:
    """A column's values as `DataFrame.to_numpy(dtype=object)` holds them: a NumPy column of numbers as Python
    numbers (`tolist`), an object column as it is, a string or masked column of pandas as its own object array
    (a missing string NaN, a missing Int64 `pd.NA`); None for any other kind (the caller asks pandas)."""
    if isinstance(a, np.ndarray):
        return a.tolist() if a.dtype.kind in "fiubO" and a.ndim == 1 else None
    if isinstance(a.dtype, pd.StringDtype) or isinstance(a, _MASKED):
        got = arrow_strings(a)
        return got if got is not None else a.to_numpy(dtype=object).tolist()
    return None


def arrow_strings(a) -> Optional[list]:
    """`a.to_numpy(dtype=object).tolist()` of a pandas string array held by pyarrow (pandas' default `str`), read
    from its Arrow array: pandas goes value by value (~35 us for a rank's ten operator types, ~1.5 us so; a rank
    page reads some eight such columns); a missing value is the dtype's (NaN, or `pd.NA`). None for any other
    array (the caller asks pandas)."""
    dtype = a.dtype
    if not isinstance(dtype, pd.StringDtype) or dtype.storage != "pyarrow" or not hasattr(a, "__arrow_array__"):
        return None
    import pyarrow as pa  # (loaded: pandas holds the array with it)

    arr = a.__arrow_array__()
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        return None
    out = arr.to_pylist()
    if arr.null_count:
        na = dtype.na_value
        out = [na if v is None else v for v in out]
    return out


def num_column(values) -> list:
    """`[num(v) for v in values]` for a column (a numpy array or a Series), vectorised where the column is
    numeric or converts to float as a whole (numpy's cast of an object is `float(v)`, None becoming NaN, as `num`
    reads None); anything else one value at a time."""
    arr = values.to_numpy() if hasattr(values, "to_numpy") else np.asarray(values)
    if arr.dtype.kind not in "fiub":
        if hasattr(values, "to_numpy"):
            arr = values.to_numpy(dtype=object)  # the values `records` gives
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError, OverflowError):
            return [num(v) for v in arr.tolist()]
    out = arr.astype(np.float64).tolist()
    for i in np.flatnonzero(~np.isfinite(arr)).tolist():
        out[i] = None
    return out


def representative_ranks(values, stage_of: dict[int, int], flagged, limit: int) -> dict[int, str]:
    """The ranks to draw one by one when there are too many for a bar each: every flagged rank first (the ones the
    findings name: never averaged away), then per stage the slowest, the median and the fastest rank by `values`
    (a Series indexed by rank). Returns rank -> its role, in rank order, at most `limit` ranks."""
    v = values.dropna()
    roles: dict[int, str] = {}
    for r in sorted(int(x) for x in flagged if int(x) in v.index):
        roles[r] = "flagged"
    stages: dict[int, list[int]] = {}
    for r in v.index:
        stages.setdefault(stage_of.get(int(r), 0), []).append(int(r))
    for st in sorted(stages):
        s = v.loc[stages[st]].sort_values()
        if not len(s):
            continue
        pre = f"s{st} " if len(stages) > 1 else ""
        for r, role in ((s.index[-1], "slowest"), (s.index[len(s) // 2], "median"), (s.index[0], "fastest")):
            if len(roles) >= limit:
                break
            roles.setdefault(int(r), pre + role)
    return dict(sorted(roles.items()))


def rank_bar_label(r: int, role: str) -> str:
    return f"{r} ⚑" if role == "flagged" else f"{r} ({role})"


PICKED_TITLE = N_("Selected ranks: ⚑ named by a finding; per stage the slowest, median and fastest")


def stacked_bar_rows(frame, columns, labels: list[str], max_bars: int,
                     picked: Optional[dict[int, str]] = None) -> tuple[list[dict], str]:
    """Rows for a stacked bar per rank: {label, order, phase, phase_order, value}, mean over `frame`'s columns.

    `frame` is indexed by rank. Above `max_bars` ranks, only the `picked` ranks are drawn, each as its own bar
    (`representative_ranks`: the flagged ranks and each stage's slowest, median and fastest), so the culprit keeps
    its own bar at thousands of ranks. Returns the rows and the x-axis title.
    """
    ranks = list(frame.index)
    if len(ranks) <= max_bars:
        groups, x_title = [([r], str(r)) for r in ranks], _("Rank")
    elif picked:
        groups = [([r], rank_bar_label(r, role)) for r, role in picked.items() if r in frame.index]
        x_title = _(PICKED_TITLE)
    else:
        size = math.ceil(len(ranks) / max_bars)
        groups = [(ranks[i:i + size], f"{ranks[i]}–{ranks[min(i + size, len(ranks)) - 1]}")
                  for i in range(0, len(ranks), size)]
        x_title = _("Ranks (groups of {n}, mean)").format(n=size)
    rows = []
    # a bar of one rank: its value as it is (the mean of one number, read off the column's array once: a `.loc`
    # lookup a bar and phase cost ~0.1 ms, ~0.2 s a build); a bar of several ranks: their mean, as pandas takes it
    where = _positions(frame) if any(len(g) == 1 for g, _ in groups) else None
    arrays: dict = {}
    for gi, (g, label) in enumerate(groups):
        for pi, (c, lab) in enumerate(zip(columns, labels)):
            if c not in frame:
                continue
            if where is not None and len(g) == 1 and g[0] in where:
                a = arrays.get(c)
                if a is None:
                    a = arrays[c] = _numbers(frame[c])
                v = num(float(a[where[g[0]]])) if a is not False else num(frame.loc[g, c].mean())
            else:
                v = num(frame.loc[g, c].mean())
            if v is not None:
                rows.append({"label": label, "order": gi, "phase": lab, "phase_order": pi, "value": round(v, 4)})
    return rows, x_title


def _positions(frame) -> Optional[dict]:
    """Each rank's row in `frame` (indexed by rank), or None when a rank has several rows (then a bar is the mean
    of its rows: `.loc`)."""
    if not frame.index.is_unique:
        return None
    return {r: i for i, r in enumerate(frame.index.tolist())}


def _numbers(col) -> "np.ndarray | bool":
    """A column's values as float64 (what the mean of one of them is), or False when they are not numbers held as
    such (then `.loc` and pandas' mean, as for several rows)."""
    arr = col.to_numpy()
    if arr.dtype.kind not in "fiub":
        return False
    return arr.astype(np.float64)
