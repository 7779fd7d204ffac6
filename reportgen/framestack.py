"""Frames stacked one under the other as `pd.concat(frames, ignore_index=True)` stacks them, column by column
(issue 33): pandas 3's concat plans its blocks frame by frame, ~0.3 ms a frame, so stacking the 4,096 ranks'
operator tables cost 1.2 s of planning for a few milliseconds of copying. When every frame has the same columns
in the same order and each column one array type and dtype in every frame, each column's arrays are joined as one
array (numpy's concatenation, or the extension array's own); anything else is left to `pd.concat` itself. A
foundation module (pandas and numpy only).

The same values, not the same memory: each column is its own block here, where pd.concat makes one 2-D block a
dtype, and pandas' reductions over a frame (a groupby mean of its float columns) can round differently in the
last bit with the layout (the torch_gloo sample's step means did). So it is for frames whose columns are read as
arrays (`analysis.operator_totals`), never for one handed to pandas' reductions as it is.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pandas as pd

from reportgen.framepack import column_arrays


def stack(frames: Sequence[pd.DataFrame], columns: Optional[Sequence[str]] = None) -> pd.DataFrame:
    """`pd.concat(frames, ignore_index=True)`, the same columns, dtypes and values (`columns`: only those, in the
    frames' order, as `pd.concat(frames, ignore_index=True)[columns]` would hold them). Frames of other columns or
    of mixed dtypes in a column, or fewer than two frames: `pd.concat`."""
    frames = list(frames)
    joined = _joined(frames, columns) if len(frames) > 1 else None
    if joined is not None:
        return joined
    out = pd.concat(frames, ignore_index=True)
    return out if columns is None else out[[c for c in out.columns if c in set(columns)]]


def _joined(frames: list[pd.DataFrame], columns: Optional[Sequence[str]]) -> Optional[pd.DataFrame]:
    first = frames[0].columns
    if not first.is_unique or type(first) is not pd.Index or not all(f.columns.equals(first) and
                                                                      f.columns.dtype == first.dtype
                                                                      for f in frames[1:]):
        return None
    want = None if columns is None else set(columns)
    keep = [i for i, c in enumerate(first) if want is None or c in want]
    arrays = [column_arrays(f) for f in frames]
    out = []
    for i in keep:
        parts = [a[i] for a in arrays]
        kind, dtype = type(parts[0]), parts[0].dtype
        if any(type(p) is not kind or p.dtype != dtype for p in parts):
            return None
        if kind is np.ndarray:
            if parts[0].ndim != 1:
                return None
            out.append(np.concatenate(parts))
        elif hasattr(kind, "_concat_same_type"):
            out.append(kind._concat_same_type(parts))
        else:
            return None
    names = first[keep]
    # (each column's dtype given: an object array of texts would otherwise become pandas' text dtype)
    frame = pd.DataFrame({j: pd.Series(a, dtype=a.dtype, copy=False) for j, a in enumerate(out)}, copy=False)
    frame.columns = names
    return frame


__all__ = ["stack"]
