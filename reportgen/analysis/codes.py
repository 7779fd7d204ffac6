"""Rows grouped by integer codes instead of text (issue 33): a groupby on a text column factorises the text again
on every call, seconds at 1,024 ranks of many small collectives; the analyses factorise each key column once
(`codes`, in the values' sort order) and group, sort and pick over integers (`Groups`), with the same numbers as
pandas' groupby (its own reductions over the rows in their order)."""

from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd


def codes(values, sort: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes of a key column and its distinct values as an object array, the codes in the values' sort
    order (so grouping or sorting by the codes orders rows as the values would); -1 for a missing value. A
    groupby on text factorises the text again on every call (seconds at 1,024 ranks): factorise once, group
    by integers."""
    v = values.to_numpy() if hasattr(values, "to_numpy") else np.asarray(values)
    if v.dtype.kind not in "iub":  # numbers stay numbers (factorised as such: fast); text and the rest as objects
        v = v.astype(object) if v.dtype != object else v
    c, u = pd.factorize(v, sort=False)
    c = c.astype(np.int64, copy=False)
    if sort and len(u) > 1:
        order = _text_order(u) if v.dtype == object else None
        if order is None:
            try:
                order = np.argsort(u, kind="stable")
            except TypeError:  # values that do not compare (text and numbers mixed): first-seen order
                order = None
        if order is not None:
            u = np.asarray(u)[order]
            rank = np.empty(len(order), dtype=np.int64)
            rank[order] = np.arange(len(order))
            c = np.where(c >= 0, rank[np.maximum(c, 0)], -1)
    return c, np.asarray(u, dtype=object)


def codes_of_parts(parts, rows: int = 1 << 16, dtype=np.int64) -> tuple[np.ndarray, np.ndarray]:
    """`codes(np.concatenate(parts))` (object values), factorised a batch of parts (about `rows` rows) at a time
    and the batches' distinct values then coded together (in the order first seen, as one factorisation sees
    them): the same codes and values without a hash table over every row (issue 33: the operators' names of
    1.6 million rows at 1,024 ranks, ~60 MB of table for ~50,000 names). `dtype`: the codes' (int32: 4 bytes a
    row, where the distinct values are fewer than 2**31)."""
    batches, cur, n = [], [], 0
    for p in parts:
        cur.append(p)
        n += len(p)
        if n >= rows:
            batches.append(cur)
            cur, n = [], 0
    if cur or not batches:
        batches.append(cur)
    if len(batches) == 1:
        c, u = codes(np.concatenate(batches[0]) if batches[0] else np.zeros(0, dtype=object))
        return c.astype(dtype, copy=False), u
    local = []
    for b in batches:
        v = np.concatenate(b).astype(object, copy=False)
        c, u = pd.factorize(v, sort=False)
        local.append((c.astype(np.int64, copy=False), np.asarray(u, dtype=object)))
    gc, gu = codes(np.concatenate([u for _, u in local]))
    out = np.empty(sum(len(c) for c, _ in local), dtype=dtype)
    at = k = 0
    for c, u in local:
        m = gc[k:k + len(u)]
        out[at:at + len(c)] = np.where(c >= 0, m[np.maximum(c, 0)] if len(m) else -1, -1)
        at += len(c)
        k += len(u)
    return out, gu


def codes_of_chunks(parts: list, dtype=np.int64) -> Optional[tuple[np.ndarray, np.ndarray]]:
    """`codes_of_parts` of texts given as codes into chunked tables (`framepack.chunks`): per part (starts, chunks,
    codes), each chunk's first place in the part's table, the chunks its codes fall in (others None) and the codes
    (0 and 1 missing). Each distinct chunk (one array object: `framepack` decodes a chunk's text once in a process)
    is coded once for every part that has it, not the text of every row (issue 33: the operators' names of 1.6
    million rows at 1,024 ranks are a few hundred groups' chunks). None where a value read is not a `str` (`codes`
    may then order the values as first seen: the caller codes the texts)."""
    base: dict[int, int] = {}
    arrays: list[np.ndarray] = []
    total = 0
    virt = np.empty(sum(len(c) for _, _, c in parts), dtype=np.int64)  # each row's place in the chunks end to end
    at = 0
    for starts, chunks, c in parts:
        shift = np.zeros(len(chunks) + 1, dtype=np.int64)  # (the last: a missing code's)
        for k, ch in enumerate(chunks):
            if ch is not None:
                b = base.get(id(ch))
                if b is None:  # (the arrays are kept below: an id is not reused while this runs)
                    b = base[id(ch)] = total
                    arrays.append(ch)
                    total += len(ch)
                shift[k] = b - int(starts[k])
        k = np.searchsorted(starts, c, side="right") - 1
        k[c < 2] = len(chunks)
        if (c >= int(starts[-1])).any() or any(chunks[j] is None for j in np.unique(k[k < len(chunks)]).tolist()):
            raise ValueError("a code outside the chunks read")
        v = virt[at:at + len(c)]
        np.add(c, shift[k], out=v)
        v[c < 2] = -1
        at += len(c)
    pos = np.flatnonzero(np.bincount(virt[virt >= 0], minlength=total)) if total else np.zeros(0, dtype=np.int64)
    vals = np.concatenate(arrays)[pos] if arrays else np.zeros(0, dtype=object)
    if not set(map(type, vals.tolist())) <= {str}:
        return None
    vc, uniques = codes(vals)
    lut = np.full(total + 1, -1, dtype=np.int64)  # (the last: a missing row's, -1)
    lut[pos] = vc
    virt[virt < 0] = total
    return lut[virt].astype(dtype, copy=False), uniques


def _text_order(values) -> Optional[np.ndarray]:
    """The sorting order of distinct texts (code point order, as Python sorts str): a few sorted by Python, more by
    pyarrow (UTF-8 byte order = code point order; several times faster than sorting many Python strings, but ~30
    µs a call on a few); None unless every value is a str."""
    if len(values) <= 64 and all(type(v) is str for v in values):
        return np.array(sorted(range(len(values)), key=values.__getitem__), dtype=np.intp)
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        arr = pa.array(np.asarray(values, dtype=object), type=pa.string(), from_pandas=False)
    except (pa.ArrowException, TypeError, ValueError, UnicodeError):
        return None
    if arr.null_count:
        return None
    return pc.sort_indices(arr).to_numpy()


class Groups:
    """Rows grouped by several key columns given as codes (`parts`: (codes, number of distinct values)), as a
    groupby on the columns would: rows with a missing key left out (`valid`, `rows`: the positions kept), groups
    numbered in the keys' lexicographic order (`gid`, one per kept row), `first[g]`: the position of group g's first
    row (its key columns are the codes there), `size[g]`; `order` / `cuts`: the kept rows by group (stable: rows in
    their order within a group) and each group's bounds there. One stable sort of one integer per row (the rows
    come in rank order, so mostly sorted already)."""

    def __init__(self, parts: list[tuple[np.ndarray, int]], n_rows: int) -> None:
        key = np.zeros(n_rows, dtype=np.int64)
        bad = np.zeros(n_rows, dtype=bool)
        span = 1
        for c, n in parts:
            n = max(1, int(n))
            if span * n >= 2 ** 62:  # too many combinations for one int64: renumber the key so far (same order)
                key = pd.factorize(key, sort=True)[0].astype(np.int64)
                span = int(key.max()) + 1 if len(key) else 1
            key = key * n + c
            span *= n
            bad |= c < 0
        self.valid = ~bad
        self.rows = np.flatnonzero(self.valid)
        k = key if len(self.rows) == n_rows else key[self.rows]  # (no copy when every row is kept)
        del key, bad
        self.order = np.argsort(k, kind="stable")
        sk = k[self.order]
        del k
        new = np.r_[True, sk[1:] != sk[:-1]] if len(sk) else np.zeros(0, dtype=bool)
        del sk
        starts = np.flatnonzero(new)
        del new
        self.n = len(starts)
        self.cuts = np.r_[starts, len(self.order)]
        self.size = np.diff(self.cuts)
        self.gid = np.empty(len(self.order), dtype=np.int64)
        self.gid[self.order] = np.repeat(np.arange(self.n, dtype=np.int64), self.size)
        self.first = self.rows[self.order[starts]]
        self._by: dict = {}

    def agg(self, frame: pd.DataFrame, cols: list[str], how: str, **kw) -> pd.DataFrame:
        """`how` ("sum", "mean", "min", ...) of `cols` per group, index 0..n-1. `frame`: one row per key row (all
        of them, or only the kept ones). pandas' own reductions over the rows in their order, with the group
        numbers a groupby on the key columns gives: the same digits. (Not the rows taken in group order: pandas
        sums labels that come sorted without Kahan's compensation, which changes the last digit.)"""
        got = self._by.get(id(frame))
        if got is None or got[0] is not frame:
            f = frame if len(frame) == len(self.rows) else frame.iloc[self.rows]
            # many groups: the group numbers as a categorical's codes, which pandas groups by as they are (an integer
            # key is hashed and sorted again on every call: 3x the reduction's time at a million groups); few
            # groups: the integers (quicker there)
            key = pd.Categorical.from_codes(self.gid, categories=pd.RangeIndex(self.n)) if self.n > 4096 \
                else self.gid
            got = self._by[id(frame)] = (frame, f.reset_index(drop=True).groupby(key, sort=True, observed=True))
        out = getattr(got[1][cols], how)(**kw)
        out.index = pd.RangeIndex(len(out))
        return out

    def pick(self, values: np.ndarray, largest: bool) -> np.ndarray:
        """Per group, the kept-row position (into `rows`) of the first row holding the group's largest (smallest)
        value, NaN skipped (groupby's idxmax / idxmin); -1 where the group has no value."""
        v = values[self.order]
        if not len(v):
            return np.zeros(0, dtype=np.int64)
        red = (np.fmax if largest else np.fmin).reduceat(v, self.cuts[:-1])
        # the positions holding their group's value (a few a group), the first of each group (no row-long
        # position arrays: issue 33)
        hit = np.flatnonzero(v == np.repeat(red, self.size))
        del v
        grp = np.searchsorted(self.cuts, hit, side="right") - 1
        out = np.full(self.n, -1, dtype=np.int64)
        head = np.r_[True, grp[1:] != grp[:-1]] if len(grp) else np.zeros(0, dtype=bool)
        out[grp[head]] = self.order[hit[head]]
        return out


def column_array(x: pd.DataFrame, name: str):
    """Column `name`'s own array (a numpy array or pandas' extension array), without a Series: a column taken as
    a Series a rank and column costs ~0.2 ms here (seconds over a run's ranks); all missing where there is none."""
    cols = x.columns
    if name not in cols:
        return np.full(len(x), np.nan, dtype=object)
    get = getattr(x, "_get_column_array", None)
    if get is not None and cols.is_unique:
        try:
            return get(cols.get_loc(name))
        except Exception:  # noqa: BLE001  # (a pandas whose internals differ: the public way)
            pass
    return x[name].array


def distinct(a: np.ndarray) -> np.ndarray:
    """`np.unique(a)` (the distinct values, ascending): for integers through a hash table and a sort of the distinct
    values only (numpy 2's `np.unique` costs ~5-10x more on a few hundred thousand integers)."""
    a = np.asarray(a)
    if a.dtype.kind not in "iu" or a.ndim != 1 or not len(a):
        return np.unique(a)
    lo, hi = int(a.min()), int(a.max())
    if hi - lo < 4 * len(a) + 1024:  # values in a narrow range: marked in a table of the range (no hash, no sort)
        seen = np.zeros(hi - lo + 1, dtype=bool)
        t = a.dtype.type
        seen[(a - t(lo)) if a.dtype.itemsize == 8 else (a.astype(np.int64) - lo)] = True  # (exact: hi - lo is small)
        return np.flatnonzero(seen).astype(a.dtype) + t(lo)
    return np.sort(pd.unique(a))


def frame_layout(f: pd.DataFrame) -> Optional[tuple]:
    """(the columns' Index object, which block holds each column, the blocks' dtypes): frames with the same key
    have the same columns (one Index the loaders share) and dtypes; None where pandas' internals differ."""
    try:
        m = f._mgr
        return id(f.columns), m.blknos.tobytes(), tuple(b.dtype for b in m.blocks)
    except Exception:  # noqa: BLE001
        return None


def take_rows(frame: pd.DataFrame, rows: np.ndarray) -> pd.DataFrame:
    """`frame.iloc[rows]` (`rows`: ascending positions), without the copy when they are every row."""
    return frame if len(rows) == len(frame) else frame.iloc[rows]


def text_column(uniques: np.ndarray, c: np.ndarray) -> pd.Series:
    """The values of codes `c` as an object column (shared objects: 8 bytes a row, not a copy of the text)."""
    return pd.Series(uniques.take(c), dtype=object)


def labels(uniques: np.ndarray, c: np.ndarray) -> pd.Categorical:
    """Codes `c` into the distinct values `uniques` as a categorical (its categories in the values' order); a
    code -1 is a missing value."""
    return pd.Categorical.from_codes(c, categories=pd.Index(uniques, dtype=object))
