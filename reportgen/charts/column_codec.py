"""Compact chart data for the page: a dataset as columns, numbers delta-coded, labels run-length coded.

`report.js` (`expandColumns`) turns `{"fields": [...], "cols": [...], "dicts": {...}}` back into rows of objects
before drawing, so a chart spec reads the same rows as before. A column is one of
  - a plain list of values;
  - `{"dec": p, "d": [n0, d1, d2, ...]}`: value i = (n0 + d1 + ... + di) / 10**p, for numbers that all have at
    most `p` decimals (a memory curve's 43889.51, 43889.68, ... becomes 4388951, 17, ...): the same doubles as the
    plain list, since an integer divided by a power of ten is the double nearest to the decimal;
  - `{"dec": p, "dr": [d1, n1, d2, n2, ...]}`: the same with the deltas as runs (delta d1 n1 times, then d2 n2
    times: a curve sampled at a regular interval), written when it is under a quarter of the deltas;
  - `{"dec": p, "z": "..."}`: the same deltas as one string, each zigzag-coded (0, -1, 1, -2, ... -> 0, 1, 2, 3, ...)
    and written 5 bits a character, low bits first, in the URL-safe base-64 alphabet (`Z_ALPHABET`): a character
    of the first half ends a delta, one of the second half has more to come. A delta under 16 in size is one
    character, under 512 two, under 16,384 three, where a JSON list spends its digits, a sign and a comma
    (a column of 16 or more values whose deltas are all under 2**50, exact as doubles in the browser);
  - `{"runs": [v, n, v, n, ...]}`: value v repeated n times (a series label per row).
  - `{"rank_href": "ranks/rank-987654321.html", "of": "rank"}`: each row's rank page, the row's `rank` put in
    place of `urls.RANK_SLOT` (the one href is resolved for the page that embeds it, as every `*_href` key).
A field named in `dicts` holds an index into that list (the same convention as the timeline's `rows` form; `decode`
and report.js give the value, and the index as `<field>_i`).
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Optional

import numpy as np

from reportgen import urls

MAX_DECIMALS = 6
_SAFE = 2 ** 53
Z_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"  # (report.js has the same)
_Z_BYTES = np.frombuffer(Z_ALPHABET.encode("ascii"), dtype=np.uint8)
_Z_MIN_VALUES = 16  # shorter columns keep their readable list (the gain is a few bytes)
_Z_MAX_DELTA = 2 ** 50  # every step of the browser's decoding exact in doubles
_Z_STEPS = np.array([1 << (5 * k) for k in range(1, 12)], dtype=np.uint64)  # a character more from each


def sig7(v: float) -> float:
    """The page's number: 7 significant digits (as `jinja_env.compact` writes chart data)."""
    return float(f"{v:.7g}")


_sig7 = sig7


_P10 = np.array([float(10 ** p) for p in range(MAX_DECIMALS + 1)])[:, None]  # 10**p as a column, p = 0..MAX
_AT_ONCE = 512  # a column up to this long tries every count of decimals at once (a rank page's short columns)


def _decimals(values: "np.ndarray") -> Optional[int]:
    """The fewest decimals (<= MAX_DECIMALS) that write every value exactly, or None (vectorised: numpy's round
    is Python's, half to even, and dividing the rounded integer, exact below 2**53, is the same IEEE division).
    A short column tries every count at once, a row each (a few numpy calls instead of four per count); a long
    one count by count, stopping at the first that writes it."""
    if len(values) <= _AT_ONCE:
        scaled = values * _P10
        ok = np.all(np.abs(scaled) < _SAFE, axis=1) & np.all(np.round(scaled) / _P10 == values, axis=1)
        return int(np.argmax(ok)) if ok.any() else None
    for p in range(MAX_DECIMALS + 1):
        scaled = values * float(10 ** p)
        if np.all(np.abs(scaled) < _SAFE) and np.array_equal(np.round(scaled) / float(10 ** p), values):
            return p
    return None


def number_column(values: list) -> Any:
    """Delta-code a column of finite numbers (cut to 7 significant digits); anything else stays a plain list."""
    vals = _plain_numbers(values)
    if vals is not None:  # (the common case: the checks below in one pass)
        if len(vals) < _Z_MIN_VALUES:
            return _short_delta_coded([float(v) for v in vals], vals)
        return _delta_coded(np.array(vals, dtype=np.float64), vals)
    if not values or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in values):
        return list(values)
    if any(isinstance(v, float) and not math.isfinite(v) for v in values):
        return list(values)
    vals = [v if isinstance(v, int) else _sig7(v) for v in values]
    if any(isinstance(v, int) and abs(v) >= _SAFE for v in vals):
        return vals  # beyond exact doubles: as written
    if len(vals) < _Z_MIN_VALUES:  # a short column (a chart's 20 bars): `_delta_coded` without numpy's per-call costs
        return _short_delta_coded([float(v) for v in vals], vals)
    return _delta_coded(np.array(vals, dtype=np.float64), vals)


def _plain_numbers(values: list, _float=float, _int=int) -> Optional[list]:
    """`number_column`'s values (floats cut to 7 significant digits) when every value is a finite float or an int
    (no subclass: no bool) under 2**53 in size, in one pass; else None (`number_column` checks them one by one)."""
    if not values:
        return None
    out = []
    for v in values:
        t = type(v)
        if t is _float:
            if not math.isfinite(v):
                return None
            out.append(_sig7(v))
        elif t is _int and -_SAFE < v < _SAFE:
            out.append(v)
        else:
            return None
    return out


_SCALES = [float(10 ** p) for p in range(MAX_DECIMALS + 1)]


def _short_delta_coded(floats: list, vals: list) -> Any:
    """`_delta_coded(np.array(floats), vals)` for fewer than 16 finite values, in Python (the same IEEE products,
    Python's `round` halving to even as numpy's): the fewest decimals that write every value, then the deltas
    (each count of decimals tried value by value, stopping at the first that it does not write)."""
    for scale in _SCALES:
        ints = []
        for v in floats:
            x = v * scale
            if not abs(x) < _SAFE:
                break
            k = round(x)
            if k / scale != v:
                break
            ints.append(k)
        else:
            return {"dec": _SCALES.index(scale), "d": [b - a for a, b in zip([0, *ints], ints)]}
    return vals


def _delta_coded(arr: "np.ndarray", vals: Optional[list] = None) -> Any:
    """The delta-coded column of `arr` (floats already cut to the page's digits), or its plain list."""
    p = _decimals(arr)
    if p is None:
        return vals if vals is not None else arr.tolist()
    return _coded_ints(np.round(arr * float(10 ** p)).astype(np.int64), p)


def _coded_ints(ints: "np.ndarray", p: int) -> Any:
    """`_delta_coded` of the values `ints / 10**p`, `p` their fewest decimals."""
    deltas = np.concatenate((ints[:1], np.diff(ints)))  # (not np.r_: 5 us a call of index parsing)
    if len(deltas) >= 16:  # a regular step (a memory curve's sampling interval): the deltas as runs when shorter
        change = deltas[1:] != deltas[:-1]
        if 4 * (1 + int(np.count_nonzero(change))) < len(deltas):  # (the runs counted before they are found)
            starts = np.flatnonzero(np.concatenate(([True], change)))
            times = np.diff(starts, append=len(deltas))
            return {"dec": p, "dr": np.column_stack((deltas[starts], times)).ravel().tolist()}
    if len(deltas) >= _Z_MIN_VALUES and -_Z_MAX_DELTA < deltas.min() and deltas.max() < _Z_MAX_DELTA:
        return {"dec": p, "z": z_string(deltas)}
    return {"dec": p, "d": deltas.tolist()}


def z_string(deltas: "np.ndarray") -> str:
    """Integers (|d| < 2**50) as the `z` column's string: zigzag, then 5 bits a character, low bits first, the
    second half of `Z_ALPHABET` for a character with more to come (vectorised: every rank page codes thousands)."""
    d = np.asarray(deltas, dtype=np.int64)
    z = ((d << 1) ^ (d >> 63)).astype(np.uint64)  # zigzag: 0, -1, 1, -2 -> 0, 1, 2, 3
    n = 1 + np.searchsorted(_Z_STEPS, z, side="right")  # characters per value
    # every character at once (~2x quicker than a pass per place: a rank page codes two curves of ~1,200 points)
    idx = np.repeat(np.arange(len(n)), n)  # the value of each character
    k = np.arange(len(idx)) - np.repeat(np.cumsum(n) - n, n)  # its place among the value's characters
    out = ((z[idx] >> (k.astype(np.uint64) * np.uint64(5))) & np.uint64(31)).astype(np.uint8)
    out |= (k + 1 < n[idx]).view(np.uint8) << np.uint8(5)  # more to come: the second half of the alphabet
    return _Z_BYTES[out].tobytes().decode("ascii")


def z_values(text: str) -> list[int]:
    """The integers of a `z` string (`z_string`'s inverse, as report.js reads it)."""
    out, acc, shift = [], 0, 0
    for ch in text:
        k = Z_ALPHABET.index(ch)
        acc |= (k & 31) << shift
        if k & 32:
            shift += 5
            continue
        out.append(-(acc + 1) // 2 if acc & 1 else acc // 2)
        acc, shift = 0, 0
    return out


_POW10 = np.array([10 ** i for i in range(19)], dtype=np.int64)
_FAST_MAX = 1e8  # below this, a value times 10**6 is an exact-enough double for the checks of `rounded_column`


def rounded_column(values: "np.ndarray", decimals: int) -> Any:
    """`number_column([round(v, decimals) for v in values])` for a float64 array, vectorised (a rank page's memory
    curve: a thousand points per series on each of thousands of rank pages). The same column, bit for bit:
    Python's `round` and the 7-significant-digit cut both round the exact binary value to a decimal, which numpy
    reproduces with integers except where the value is (within the float's error) half-way between two results;
    those few values take the Python path. Non-finite or large values: the Python path for the whole column."""
    a = np.asarray(values, dtype=np.float64)
    if not len(a) or not 0 <= decimals <= 6 or not np.abs(a).max() < _FAST_MAX:  # (NaN and inf fail `<`)
        return number_column([round(v, decimals) for v in a.tolist()])
    scale = float(10 ** decimals)
    t = a * scale  # within 2**-13 of the exact product (|t| < 2**47)
    k = np.rint(t)
    near_half = np.abs(t - k) > 0.499  # Python's round of the exact value could go either way (within 1e-3 of .5)
    if np.abs(k).max() < 1e7:  # the common case (a memory curve): 7 digits at most, nothing for the cut to drop
        ints = k.astype(np.int64)
        for i in np.flatnonzero(near_half).tolist():
            ints[i] = round(round(float(a[i]), decimals) * scale)  # (`_sig7` keeps its 7 digits or fewer)
        # the values are ints / 10**decimals, exactly as doubles: their fewest decimals (`_decimals`) are those
        # the integers' common trailing zeros leave (no other count writes a value under 1e7 exactly), told by
        # their greatest common divisor
        p = decimals
        if p:
            g = int(np.gcd.reduce(ints))
            while p and g % 10 == 0:
                g //= 10
                p -= 1
            if p < decimals:
                ints //= 10 ** (decimals - p)
        return _coded_ints(ints, p)
    k = k.astype(np.int64)
    # the 7 significant digits the page writes (`_sig7`): the value is k / 10**decimals exactly as a decimal
    mag = np.abs(k)
    digits = np.searchsorted(_POW10, mag, side="right")  # decimal digits of |k| (0 for 0)
    drop = np.maximum(digits - 7, 0)
    unit = _POW10[drop]
    q, rem = np.divmod(mag, unit)
    half = unit // 2
    up = rem > half
    tie = (drop > 0) & (rem == half)  # the exact binary value decides: Python's formatting
    m = np.where(k < 0, -(q + up), q + up)
    e = drop - decimals  # the value is m * 10**e
    out = np.where(e >= 0, m * _POW10[np.clip(e, 0, 18)], 0).astype(np.float64)
    neg = e < 0
    out[neg] = m[neg] / _POW10[-e[neg]].astype(np.float64)
    for i in np.flatnonzero(near_half | tie).tolist():
        out[i] = _sig7(round(float(a[i]), decimals))
    return _delta_coded(out)


def decimal_column(values: list, decimals: int) -> Any:
    """`number_column(values)` for a column of floats each already rounded to `decimals` (`round(v, decimals)`:
    a layout's times, rounded when made), vectorised (`rounded_column`: rounding such a value again changes
    nothing); any other column takes `number_column`."""
    if values and all(type(v) is float and v == round(v, decimals) for v in values):
        return rounded_column(np.array(values, dtype=np.float64), decimals)
    return number_column(values)


def runs_column(values: list) -> dict:
    """Values that repeat in a row as [value, times, value, times, ...]."""
    return runs_of((v, 1) for v in values)


def runs_of(runs: Iterable[tuple[Any, int]]) -> dict:
    """`runs_column` of the values given as (value, times) pairs (the rows are never built)."""
    out: list = []
    for v, n in runs:
        if n <= 0:
            continue
        if out and type(out[-2]) is type(v) and out[-2] == v:
            out[-1] += n
        else:
            out += [v, n]
    return {"runs": out}


def list_or_runs(values: list) -> Any:
    """A column of indexes or labels (a timeline's lane of each operator, its launch mostly ""): as runs where that
    is shorter than the plain list (rows sorted by lane hold long runs), else integers delta-coded
    (`number_column`: a `z` string from 16 values), anything else the plain list. report.js and `decode` expand
    each the same way, a dict field's index included."""
    if len(values) < 16:
        return list(values)
    limit = len(values) // 2  # runs (2 entries each) shorter than half the list
    runs: list = [values[0], 0]
    start = 0
    for i, (a, b) in enumerate(zip(values, values[1:]), 1):
        if a != b or type(a) is not type(b):  # (True is not 1: as runs_column)
            runs[-1] = i - start
            runs += [b, 0]
            start = i
            if len(runs) >= limit:  # integers (a dict field's indexes) delta-coded, anything else as it is
                return _int_column(values) if all(type(v) is int for v in values) else list(values)
    runs[-1] = len(values) - start
    return {"runs": runs}


def _int_column(values: list) -> Any:
    """`number_column(values)` of a list of ints (no bool), without its checks value by value (a timeline's name
    indexes: thousands on a page)."""
    if not -_SAFE < min(values) or not max(values) < _SAFE:
        return list(values)  # beyond exact doubles: as written
    return _delta_coded(np.array(values, dtype=np.float64), list(values))


def rank_href_column(rows: list[dict], field: str, of: str) -> Any:
    """`field` holds each row's rank page (`urls.rank_page(row[of])`): one templated href; else a plain list."""
    vals = [r.get(field) for r in rows]
    if all(isinstance(r.get(of), int) and not isinstance(r.get(of), bool) and v == urls.rank_page(r[of])
           for r, v in zip(rows, vals)):
        return {"rank_href": urls.rank_page(urls.RANK_SLOT), "of": of}
    return vals


def encode(rows: list[dict], fields: list[str], labels: tuple[str, ...] = (), href_of: Optional[str] = None,
           dicts: tuple[str, ...] = (), plain: tuple[str, ...] = (), decimals: Optional[dict[str, int]] = None) -> dict:
    """Rows of objects -> one columnar dataset. `labels`: fields stored as runs (values that repeat in a row);
    `href_of`: the field holding the rank whose page the `href` field links; `dicts`: fields of a few distinct
    strings in any order (a link's group): each row holds an index into the field's list in `dicts`; `plain`:
    fields kept as plain lists (a few numbers of unlike size, whose deltas are longer than the numbers);
    `decimals`: number fields whose values were rounded to so many decimals (coded vectorised, the same column:
    `decimal_column`)."""
    cols, lists = [], {}
    for f in fields:
        vals = [r.get(f) for r in rows]
        if f == "href" and href_of:
            cols.append(rank_href_column(rows, f, href_of))
        elif f in plain:
            cols.append(vals)
        elif decimals and f in decimals:
            cols.append(decimal_column(vals, decimals[f]))
        elif f in dicts:
            index: dict = {}
            cols.append(list_or_runs([index.setdefault(v, len(index)) for v in vals]))
            lists[f] = list(index)
        else:
            cols.append(runs_column(vals) if f in labels else number_column(vals))
    out = {"fields": list(fields), "cols": cols}
    if lists:
        out["dicts"] = lists
    return out


def decode(data: dict) -> list[dict]:
    """Python twin of report.js's expansion (tests check the round trip)."""
    fields, cols = data["fields"], []
    for c in data["cols"]:
        if isinstance(c, dict) and "rank_href" in c:
            cols.append(c)  # filled in below, from its rank column
        elif isinstance(c, dict) and "runs" in c:
            r = c["runs"]
            cols.append([v for i in range(0, len(r), 2) for v in [r[i]] * r[i + 1]])
        elif isinstance(c, dict) and ("d" in c or "dr" in c or "z" in c):
            acc, vals, scale = 0, [], 10 ** c["dec"]
            deltas = (c["d"] if "d" in c else z_values(c["z"]) if "z" in c else
                      [d for i in range(0, len(c["dr"]), 2) for d in [c["dr"][i]] * c["dr"][i + 1]])
            for d in deltas:
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
    dicts = data.get("dicts") or {}
    rows = [{f: cols[j][i] for j, f in enumerate(fields)} for i in range(n)]
    for f, values in dicts.items():  # as report.js: the value looked up, the index kept as <field>_i
        for row in rows:
            row[f + "_i"] = row[f]
            row[f] = values[row[f]]
    return rows


def rows_of(data) -> list[dict]:
    """Rows of a dataset as embedded: a plain list of objects, or the columnar form (`decode`)."""
    return decode(data) if isinstance(data, dict) and "cols" in data else list(data)


def to_columns(chart, name: str, fields: list[str], labels: tuple[str, ...] = (), href_of: Optional[str] = None,
               dicts: tuple[str, ...] = (), decimals: Optional[dict[str, int]] = None):
    """Move a chart's dataset `name` (rows of objects in its spec) beside the spec, columnar (`Chart.columns`)."""
    rows = chart.spec["datasets"][name]
    chart.spec = {**chart.spec, "datasets": {**chart.spec["datasets"], name: []}}
    chart.columns = {**(chart.columns or {}), name: encode(rows, fields, labels, href_of, dicts,
                                                           decimals=decimals)}
    return chart
