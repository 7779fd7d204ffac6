"""Per-group sums and means of float rows exactly as pandas' groupby gives them (issue 33), without its per-call
cost: the loaders (`loaders.communication._steps_from_ops`) and the analyses (`analysis.comm_rank`,
`analysis.waits`) group a rank's rows by integer group numbers (`analysis.codes.Groups`) and reduce them here. A
foundation module (numpy and pandas only): the loaders sit below the analyses.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd


def group_sum(values: np.ndarray, gid: np.ndarray, n: int, min_count: int = 0) -> np.ndarray:
    """Per group (`gid`: 0..n-1 a row), the sum of each column of `values` (rows x columns, float64) as pandas'
    groupby sums it, bit for bit (NaN skipped, NaN where fewer than `min_count` values; a group without rows: 0, or
    NaN with a `min_count`), without its per-call cost (a rank's few hundred rows: ~30 us, not ~1 ms): pandas' own
    routine called directly (`pandas_sums`); where this pandas has none to call, its public groupby."""
    vals = np.asarray(values, dtype=np.float64)
    full = np.full((n, vals.shape[1]), np.nan if min_count > 0 else 0.0)
    if not len(gid):
        return full
    size = np.bincount(gid, minlength=n)
    out = pandas_sums(vals, gid, n, "sum", min_count)
    if out is None:
        out = pd.DataFrame(vals).groupby(_group_key(gid, n), sort=True, observed=True).sum(
            min_count=min_count).to_numpy(dtype=np.float64)
    else:
        out = out[size > 0]
    full[np.flatnonzero(size)] = out
    return full


def _group_key(gid: np.ndarray, n: int):
    """The key to group rows numbered `gid` (0..n-1) by: on many rows the numbers as a categorical's codes, which
    pandas groups by as they are (an integer key is factorised again through a hash table sized for every row:
    ~16 bytes a row, 60 MB at 1,024 ranks of the waits' rows, issue 33); the same groups, in the same order, the
    same sums."""
    if len(gid) > 1 << 16:
        return pd.Categorical.from_codes(gid, categories=pd.RangeIndex(max(1, n)))
    return gid


def group_mean(values: np.ndarray, gid: np.ndarray, n: int) -> np.ndarray:
    """Per group (all of 0..n-1 present) the mean of each column: pandas' groupby mean itself (its digits are not
    the compensated sum / count: its own routine, `pandas_sums`, else one call on the plain block)."""
    vals = np.asarray(values, dtype=np.float64)
    out = pandas_sums(vals, gid, n, "mean", -1) if len(gid) else None
    if out is not None:
        return out
    out = pd.DataFrame(vals).groupby(gid, sort=True).mean()
    return out.to_numpy(dtype=np.float64).reshape(n, -1)


_DIRECT: dict = {}  # "ok": whether `pandas_sums` gives what pandas' groupby gives here (checked once a process)


def pandas_sums(vals: np.ndarray, gid: np.ndarray, n: int, how: str, min_count: int) -> Optional[np.ndarray]:
    """`DataFrame(vals).groupby(gid, sort=True).<how>(min_count)` (`how`: "sum" / "mean"; float64 rows x columns,
    `gid` 0..n-1 a row), every group 0..n-1 a row of the result (a group without rows: as pandas' routine leaves
    it): the routine pandas' groupby runs there, called directly, without the groupby's own cost (~0.3 ms a call:
    the key factorised again, the result's index and frame; two calls a rank in `analysis.comm_rank`, issue 33).
    pandas sums a group's rows Kahan-compensated in its Cython routines, or, from pandas 3, by `np.add.reduceat`
    where the group numbers come sorted and no value is NaN: the same choice is made here. None where this pandas
    lacks those routines or gives other digits on a few probes (`_direct_ok`, checked once a process): the public
    call then."""
    ok = _DIRECT.get("ok")
    if ok is None:
        ok = _DIRECT["ok"] = _direct_ok()
    if not ok:
        return None
    return _reduced(vals, np.asarray(gid, dtype=np.intp), n, how, min_count)


def _reduced(vals: np.ndarray, gid: np.ndarray, n: int, how: str, min_count: int) -> np.ndarray:
    from pandas._libs import groupby as lib

    if _DIRECT.get("reduceat") and len(gid) and not np.isnan(vals).any() and not (gid[1:] < gid[:-1]).any():
        # (pandas >= 3: sorted group numbers, no NaN: a `reduceat` over the frame's block, its columns x rows)
        starts = np.flatnonzero(np.r_[True, gid[1:] != gid[:-1]])
        seg = np.add.reduceat(np.ascontiguousarray(vals.T), starts, axis=1)
        size = np.diff(starts, append=len(gid))
        if how == "mean":
            seg = seg / size.astype(np.float64).reshape(1, -1)
        out = np.full((vals.shape[1], n), 0.0 if how == "sum" else np.nan)
        out[:, gid[starts]] = seg
        cutoff = max(0, min_count) if how == "sum" else max(1, min_count)
        if cutoff > 0:
            cnt = np.zeros(n, dtype=np.int64)
            cnt[gid[starts]] = size
            out[:, cnt < cutoff] = np.nan
        return out.T
    out = np.full((n, vals.shape[1]), np.nan)
    counts = np.zeros(n, dtype=np.int64)
    if how == "sum":
        lib.group_sum(out=out, counts=counts, values=vals, labels=gid, mask=None, result_mask=None,
                      min_count=min_count, is_datetimelike=False)
    else:
        lib.group_mean(out=out, counts=counts, values=vals, labels=gid, min_count=min_count, is_datetimelike=False,
                       mask=None, result_mask=None)
    return out


def _direct_ok() -> bool:
    """Whether `_reduced` gives pandas' groupby sums and means to the bit on a few probes (sorted and unsorted
    group numbers, with and without NaN, infinities, -0.0, long and short groups)."""
    try:
        from pandas.core.groupby.ops import BaseGrouper

        _DIRECT["reduceat"] = hasattr(BaseGrouper, "_reduceat_aggregate")
        rng = np.random.default_rng(33)
        for trial in range(8):
            rows, groups = (300, 5) if trial % 2 else (40, 12)
            gid = rng.integers(0, groups, rows)
            gid[:groups] = np.arange(groups)  # (every group has a row)
            if trial % 4 < 2:
                gid = np.sort(gid)
            vals = rng.random((rows, 3)) * 10.0 ** rng.integers(-6, 9, (rows, 3))
            if trial >= 4:
                vals[rng.random((rows, 3)) < 0.1] = np.nan
                vals[rng.random((rows, 3)) < 0.02] = -0.0
                vals[rows - 1, 0] = np.inf
            frame = pd.DataFrame(vals).groupby(gid, sort=True)
            for how, mc in (("sum", 0), ("sum", 1), ("mean", -1)):
                want = (frame.sum(min_count=mc) if how == "sum" else frame.mean()).to_numpy(dtype=np.float64)
                got = _reduced(vals, gid.astype(np.intp), groups, how, mc)
                if want.shape != got.shape or not (want.view(np.int64) == got.view(np.int64)).all():
                    return False
        return True
    except Exception:  # noqa: BLE001  # (a pandas whose internals differ: the public call)
        return False


def series_mean(v: np.ndarray) -> float:
    """`Series.mean()` of a float64 array, bit for bit (NaN skipped: pandas' nanmean, the values with NaN as 0
    summed by numpy, over the count), without a Series: for the means of many small groups taken one by one."""
    ok = ~np.isnan(v)
    n = int(ok.sum())
    return float(np.where(ok, v, 0.0).sum(dtype=np.float64) / n) if n else float("nan")

