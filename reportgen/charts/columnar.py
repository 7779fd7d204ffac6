"""Compact chart data for the page: a dataset as columns, numbers delta-coded, labels run-length coded.

`report.js` (`expandColumns`) turns `{"fields": [...], "cols": [...], "dicts": {...}}` back into rows of objects
before drawing, so a chart spec reads the same rows as before. A column is one of
  - a plain list of values;
  - `{"dec": p, "d": [n0, d1, d2, ...]}`: value i = (n0 + d1 + ... + di) / 10**p, for numbers that all have at
    most `p` decimals (a memory curve's 43889.51, 43889.68, ... becomes 4388951, 17, ...): the same doubles as the
    plain list, since an integer divided by a power of ten is the double nearest to the decimal;
  - `{"runs": [v, n, v, n, ...]}`: value v repeated n times (a series label per row).
  - `{"rank_href": "ranks/rank-987654321.html", "of": "rank"}`: each row's rank page, the row's `rank` put in
    place of `urls.RANK_SLOT` (the one href is resolved for the page that embeds it, as every `*_href` key).
A field named in `dicts` holds an index into that list (the same convention as the timeline's `rows` form).
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from reportgen import urls

MAX_DECIMALS = 6
_SAFE = 2 ** 53


def _sig7(v: float) -> float:
    """The page's number: 7 significant digits (as `builder._compact` writes chart data)."""
    return float(f"{v:.7g}")


def _decimals(values: "np.ndarray") -> Optional[int]:
    """The fewest decimals (<= MAX_DECIMALS) that write every value exactly, or None (vectorised: numpy's round
    is Python's, half to even, and dividing the rounded integer, exact below 2**53, is the same IEEE division)."""
    for p in range(MAX_DECIMALS + 1):
        scaled = values * float(10 ** p)
        if np.all(np.abs(scaled) < _SAFE) and np.array_equal(np.round(scaled) / float(10 ** p), values):
            return p
    return None


def number_column(values: list) -> Any:
    """Delta-code a column of finite numbers (cut to 7 significant digits); anything else stays a plain list."""
    if not values or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in values):
        return list(values)
    if any(isinstance(v, float) and not math.isfinite(v) for v in values):
        return list(values)
    vals = [v if isinstance(v, int) else _sig7(v) for v in values]
    if any(isinstance(v, int) and abs(v) >= _SAFE for v in vals):
        return vals  # beyond exact doubles: as written
    arr = np.array(vals, dtype=np.float64)
    p = _decimals(arr)
    if p is None:
        return vals
    ints = np.round(arr * float(10 ** p)).astype(np.int64)
    return {"dec": p, "d": [int(ints[0])] + np.diff(ints).tolist()}


def runs_column(values: list) -> dict:
    out: list = []
    for v in values:
        if out and type(out[-2]) is type(v) and out[-2] == v:
            out[-1] += 1
        else:
            out += [v, 1]
    return {"runs": out}


def rank_href_column(rows: list[dict], field: str, of: str) -> Any:
    """`field` holds each row's rank page (`urls.rank_page(row[of])`): one templated href; else a plain list."""
    vals = [r.get(field) for r in rows]
    if all(isinstance(r.get(of), int) and not isinstance(r.get(of), bool) and v == urls.rank_page(r[of])
           for r, v in zip(rows, vals)):
        return {"rank_href": urls.rank_page(urls.RANK_SLOT), "of": of}
    return vals


def encode(rows: list[dict], fields: list[str], labels: tuple[str, ...] = (), href_of: Optional[str] = None) -> dict:
    """Rows of objects -> one columnar dataset. `labels`: fields stored as runs (values that repeat in a row);
    `href_of`: the field holding the rank whose page the `href` field links."""
    cols = []
    for f in fields:
        vals = [r.get(f) for r in rows]
        if f == "href" and href_of:
            cols.append(rank_href_column(rows, f, href_of))
        else:
            cols.append(runs_column(vals) if f in labels else number_column(vals))
    return {"fields": list(fields), "cols": cols}


def encode_columns(columns: dict[str, list], labels: tuple[str, ...] = ()) -> dict:
    """`encode` of rows given as columns (the rows are never built)."""
    return {"fields": list(columns), "cols": [runs_column(v) if f in labels else number_column(v)
                                               for f, v in columns.items()]}


def decode(data: dict) -> list[dict]:
    """Python twin of report.js's expansion (tests check the round trip)."""
    fields, cols = data["fields"], []
    for c in data["cols"]:
        if isinstance(c, dict) and "rank_href" in c:
            cols.append(c)  # filled in below, from its rank column
        elif isinstance(c, dict) and "runs" in c:
            r = c["runs"]
            cols.append([v for i in range(0, len(r), 2) for v in [r[i]] * r[i + 1]])
        elif isinstance(c, dict) and "d" in c:
            acc, vals, scale = 0, [], 10 ** c["dec"]
            for d in c["d"]:
                acc += d
                vals.append(acc / scale if c["dec"] else acc)
            cols.append(vals)
        else:
            cols.append(list(c))
    for j, c in enumerate(cols):
        if isinstance(c, dict):
            slot = str(urls.RANK_SLOT)
            cols[j] = [c["rank_href"].replace(slot, str(r)) for r in cols[fields.index(c["of"])]]
    n = len(cols[0]) if cols else 0
    return [{f: cols[j][i] for j, f in enumerate(fields)} for i in range(n)]


def rows_of(data) -> list[dict]:
    """Rows of a dataset as embedded: a plain list of objects, or the columnar form (`decode`)."""
    return decode(data) if isinstance(data, dict) and "cols" in data else list(data)


def to_columns(chart, name: str, fields: list[str], labels: tuple[str, ...] = (), href_of: Optional[str] = None):
    """Move a chart's dataset `name` (rows of objects in its spec) beside the spec, columnar (`Chart.columns`)."""
    rows = chart.spec["datasets"][name]
    chart.spec = {**chart.spec, "datasets": {**chart.spec["datasets"], name: []}}
    chart.columns = {**(chart.columns or {}), name: encode(rows, fields, labels, href_of)}
    return chart
