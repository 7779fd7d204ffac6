"""Frames in a compact pickled form: a rank's summary crosses a process boundary (a worker to the main process) and
is stored in the rank cache (`rankcache`) as a pickle, and a 1,024-rank run holds a thousand of them (issue 33).

`pack(frame, strings)` turns a frame into plain arrays: float, integer and boolean columns as one 2-D array per
dtype, nullable integers and pandas' `str` columns as their arrays, and text columns (object columns holding only
`str`, NaN or None) as int32 codes into `strings`, a table shared by every frame packed with it (a rank's operator names are written once
for its operators and its collective instances). `unpack(packed, table)` builds the same frame back (the same
columns, dtypes, values and index) straight from those blocks, ~5x faster than unpickling the frame, and every
text is `sys.intern`ed: the ranks of a run share one copy of each operator name, group and key in memory instead of
one per rank. A frame this cannot represent exactly (another index, other dtypes, duplicate or non-text column
names, an object column holding anything but texts) is kept as it is, so packing never changes a value.
"""

from __future__ import annotations

import itertools
import math
import sys
from typing import Any, Optional

import numpy as np
import pandas as pd

try:  # pandas >= 2.3: a frame from ready blocks, without the per-column checks of the dict constructor
    from pandas.api.internals import create_dataframe_from_blocks as _from_blocks
except ImportError:  # pragma: no cover - older pandas: the dict constructor (the same frame, slower)
    _from_blocks = None

_NAN, _NONE = 0, 1  # the codes of a missing text: NaN (the loaders' missing value) and None; texts from 2
_PLAIN = {np.dtype("float64"), np.dtype("int64"), np.dtype("bool")}
_OBJECT = np.dtype("object")


def _codes(values: np.ndarray, strings: dict[str, int]) -> Optional[np.ndarray]:
    """int32 codes of an object column into `strings` (grown as needed; a text's code is its place in the table
    plus 2, `_NAN` and `_NONE` being the missing ones), or None when a value is neither a `str` nor NaN (a float) /
    None. (A `str` subclass equal to a `str` of the column is read as that `str`.)"""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)  # a hash table in C; None and NaN: -1
    setdefault = strings.setdefault
    ids = np.empty(len(uniques), dtype=np.int32)
    for i, u in enumerate(uniques.tolist()):
        if type(u) is not str:
            return None
        ids[i] = setdefault(u, len(strings)) + 2
    out = ids.take(codes) if len(ids) else np.zeros(len(codes), dtype=np.int32)
    missing = np.flatnonzero(codes < 0)
    if len(missing):
        for i in missing.tolist():
            v = values[i]
            if v is None:
                out[i] = _NONE
            elif type(v) is float and v != v:
                out[i] = _NAN
            else:  # pd.NA, NaT, a NumPy NaN: kept as they are (the frame is not packed)
                return None
    return out


def pack(frame: Any, strings: dict[str, int]) -> Any:
    """`frame` as a tuple of plain arrays (see the module), or `frame` itself when it is not a DataFrame or cannot
    be packed exactly."""
    if type(frame) is not pd.DataFrame:
        return frame
    idx = frame.index
    cols = list(frame.columns)
    if (type(idx) is not pd.RangeIndex or idx.start != 0 or idx.step != 1 or idx.name is not None
            or any(type(c) is not str for c in cols) or len(set(cols)) != len(cols) or frame.columns.name is not None
            or type(frame.columns) is not pd.Index or frame.attrs or frame.flags.allows_duplicate_labels is not True):
        return frame
    plain: dict[np.dtype, list[int]] = {}
    texts: list[tuple[int, np.ndarray]] = []
    arrays: list[tuple[int, Any]] = []  # nullable integers, pandas' `str` columns: their arrays as they are
    for i, (c, dt) in enumerate(zip(cols, frame.dtypes.tolist())):
        if dt in _PLAIN:
            plain.setdefault(dt, []).append(i)
        elif dt == _OBJECT:  # texts (anything else in it: the frame is kept as it is)
            codes = _codes(frame[c].to_numpy(), strings)
            if codes is None:
                return frame
            texts.append((i, codes))
        elif isinstance(dt, (pd.Int64Dtype, pd.StringDtype)):
            arrays.append((i, frame[c].array))
        else:
            return frame
    # own, writable copies (`to_numpy` may give a read-only view, and a read-only array unpickles read-only: the
    # frame would refuse an assignment later)
    blocks = [(np.array(ix, dtype=np.intp), np.array(frame.iloc[:, ix].to_numpy(dtype=dt).T, order="C", copy=True))
              for dt, ix in plain.items()]
    return ("framepack", 1, len(idx), frame.columns, blocks, texts, arrays)


def unpack(packed: Any, table: Optional[np.ndarray]) -> Any:
    """The frame `pack` was given; `table` is `text_table(strings)` for the table it was packed with. Anything that
    is not a packed frame is returned as it is."""
    if not (type(packed) is tuple and len(packed) == 7 and packed[0] == "framepack" and packed[1] == 1):
        return packed
    _, _, n, columns, blocks, texts, arrays = packed
    parts: list[tuple[Any, np.ndarray]] = [(values, ix) for ix, values in blocks]
    if texts:
        if table is None:
            raise ValueError("a packed frame's texts without their table")
        codes = np.vstack([c for _, c in texts])  # the table starts with NaN and None (`text_table`)
        parts.append((table.take(codes), np.array([i for i, _ in texts], dtype=np.intp)))
    parts += [(a, np.array([i], dtype=np.intp)) for i, a in arrays]
    index = pd.RangeIndex(n)
    if _from_blocks is not None:
        return _from_blocks(parts, index=index, columns=columns)
    out: dict[int, Any] = {}  # pragma: no cover - older pandas
    for v, ix in parts:
        for j, i in enumerate(ix):
            out[int(i)] = v if v.ndim == 1 else v[j]
    return pd.DataFrame({columns[i]: out[i] for i in range(len(columns))}, index=index, columns=columns, copy=False)


def text_table(strings: list[str]) -> np.ndarray:
    """The texts of a packed group of frames as the object array `unpack` takes: NaN and None (the missing codes),
    then each text `sys.intern`ed (shared with every other rank's copy in this process)."""
    return np.fromiter(itertools.chain((math.nan, None), map(sys.intern, strings)), dtype=object,
                       count=len(strings) + 2)


def frame_from(packed: Any, strings: list[str]) -> Any:
    """`unpack` with the frame's own table (a frame packed alone: `rankcache`'s entries)."""
    return unpack(packed, text_table(strings))


__all__ = ["pack", "unpack", "text_table", "frame_from"]
