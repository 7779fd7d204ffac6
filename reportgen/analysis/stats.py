"""Robust "stands out from its peers": the one definition, used by the rules (and so by every page highlight).

A rank is compared with the other ranks of its group (its pipeline stage, or the whole cluster) in every step:
it stands out in a step when its value is beyond the group's median by more than all of

* `z` robust standard deviations (1.4826 x MAD of the group in that step),
* `min_rel` of the group's median value,
* `min_abs_ms` milliseconds, and
* `min_share` of the median step time (so a 0.9 ms difference in a 175 ms step never fires).

It is called out only if it stands out in at least `persistence` of the steps it has. Groups of two ranks have no
spread to estimate: the larger value must exceed the smaller by the same floors (the MAD term is dropped); groups
of fewer than `MIN_MAD_GROUP` ranks drop the MAD term too (the floors decide).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pandas as pd

MAD_SCALE = 1.4826
# Below this many ranks a group's MAD is no estimate of its spread (with 3-4 values it swings from ~0 to the gap
# itself, and the candidate's own value weighs on it): the MAD term is dropped and the relative, absolute and
# step-share floors decide.
MIN_MAD_GROUP = 5


@dataclass(frozen=True)
class Standout:
    rank: int
    group: int
    value_ms: float  # the rank's mean over its steps
    median_ms: float  # the group's median of the rank means (the other rank's value in a group of two)
    excess_ms: float  # |value - median|
    step_ms: float  # median step time of the cluster (reference for the share)
    steps_out: int  # steps in which it stood out
    steps_total: int  # steps it has a value for

    @property
    def share(self) -> float:
        return self.excess_ms / self.step_ms if self.step_ms else math.nan

    @property
    def ratio(self) -> float:
        return self.value_ms / self.median_ms if self.median_ms else math.inf


def standouts(per_step: pd.DataFrame, value: str, *, groups: Optional[dict[int, int]] = None,
              step_ms: Optional[pd.Series] = None, z: float, min_rel: float, min_abs_ms: float, min_share: float,
              persistence: float, high: bool = True, cells: Optional[pd.DataFrame] = None) -> list[Standout]:
    """Ranks whose `value` stands out (above the group when `high`, below it otherwise) in most steps.

    `per_step`: columns rank, step, value. Rows with a missing step are treated as one step (averages only).
    `step_ms`: median step time per step id (index step); missing -> the floors on share are not applied.
    `cells`: `standout_cells` of the same arguments, where the caller made them already (read, not changed).
    """
    df = cells if cells is not None else standout_cells(per_step, value, groups=groups, step_ms=step_ms, z=z,
                                                        min_rel=min_rel, min_abs_ms=min_abs_ms,
                                                        min_share=min_share, high=high)
    if df.empty:
        return []
    sign = 1.0 if high else -1.0
    per_rank = df.groupby(["g", "rank"]).agg(mean=("v", "mean"), steps_out=("out", "sum"),
                                             steps_total=("out", "size")).reset_index()
    ref_all = float(step_ms.median()) if step_ms is not None and len(step_ms) else math.nan
    out = []
    for g, f in per_rank.groupby("g"):
        if len(f) < 2:
            continue
        m = float(f["mean"].median())
        cand = f[(f["steps_out"] >= 1) & (f["steps_out"] >= persistence * f["steps_total"])]
        for rec in cand.itertuples(index=False):
            base = m
            if len(f) == 2:
                base = float(f["mean"].min() if high else f["mean"].max())
            exc = (float(rec.mean) - base) * sign
            if exc <= 0:
                continue
            out.append(Standout(rank=int(rec.rank), group=int(g), value_ms=float(rec.mean), median_ms=base,
                                excess_ms=exc, step_ms=ref_all, steps_out=int(rec.steps_out),
                                steps_total=int(rec.steps_total)))
    return sorted(out, key=lambda s: -s.excess_ms)


def standout_cells(per_step: pd.DataFrame, value: str, *, groups: Optional[dict[int, int]] = None,
                   step_ms: Optional[pd.Series] = None, z: float, min_rel: float, min_abs_ms: float,
                   min_share: float, high: bool = True) -> pd.DataFrame:
    """One row per (group, step, rank): the value `v`, its deviation from the group's median in that step `dev`
    and whether it stands out in that step `out` (the per-step test of `standouts`, before persistence)."""
    df = per_step[["rank", "step", value]].rename(columns={value: "v"}).copy()
    df = df[df["v"].notna()]
    if df.empty:
        return pd.DataFrame(columns=["g", "step", "rank", "v", "dev", "out"])
    df["step"] = df["step"].fillna(-1)
    df["rank"] = df["rank"].astype(int)
    df["g"] = df["rank"].map(groups).fillna(0).astype(int) if groups else 0
    df = df.groupby(["g", "step", "rank"], as_index=False)["v"].mean()
    sign = 1.0 if high else -1.0
    # per (group, step), its rows together (the groupby sorted them): size, median, MAD, min and max from one
    # sort of the values inside each (five groupby transforms cost ~10 ms each at a thousand ranks, and the rules
    # call this a dozen times)
    seg = df.groupby(["g", "step"], sort=False).ngroup().to_numpy()
    v = df["v"].to_numpy(dtype="float64")
    starts = np.flatnonzero(np.r_[True, seg[1:] != seg[:-1]])
    lens = np.diff(np.r_[starts, len(seg)])

    def medians(values: np.ndarray) -> np.ndarray:  # a groupby median per segment, as pandas computes it
        s = values[np.lexsort((values, seg))]
        mid, low = s[starts + lens // 2], s[starts + (lens - 1) // 2]
        return np.where(lens % 2 == 1, mid, (mid + low) / 2)
    n = np.repeat(lens, lens)
    med = np.repeat(medians(v), lens)
    mad = np.repeat(medians(np.abs(v - med)), lens)
    lo, hi = np.repeat(np.minimum.reduceat(v, starts), lens), np.repeat(np.maximum.reduceat(v, starts), lens)
    two = n == 2
    # groups of two: compare with the other rank; no MAD term
    df["dev"] = np.where(two, (v - lo) if sign > 0 else (hi - v), (v - med) * sign)
    ref_med = np.where(two, lo if sign > 0 else hi, med)
    if step_ms is not None and len(step_ms):
        ref = df["step"].map(step_ms).astype(float).fillna(float(step_ms.median()))
    else:
        ref = pd.Series(0.0, index=df.index)
    floor = np.maximum.reduce([
        np.where(n < MIN_MAD_GROUP, 0.0, z * MAD_SCALE * mad),
        min_rel * np.abs(ref_med),
        np.full(len(df), min_abs_ms),
        min_share * ref.to_numpy(),
    ])
    df["out"] = (n >= 2) & (df["dev"].to_numpy() > floor)
    return df


def peer_median(values: pd.Series, groups: Optional[dict[int, int]] = None) -> pd.Series:
    """For each rank (index), the median of `values` over the *other* ranks of its group (its stage; all when
    None). In a large group that is the group's median; in a group of two it is the other rank's value (a
    median that includes the rank itself would halve every gap)."""
    g = pd.Series([(groups or {}).get(int(r), 0) for r in values.index], index=values.index)
    out = values.groupby(g).transform("median")
    sizes = g.map(g.value_counts())
    for key in g[sizes < MIN_MAD_GROUP].unique():
        idx = g.index[g == key]
        vals = values.loc[idx]
        for r in idx:
            others = vals.drop(index=r).dropna()
            out.loc[r] = float(others.median()) if len(others) else float("nan")
    return out


def step_reference(per_step: pd.DataFrame, total: str = "total") -> Optional[pd.Series]:
    """Median step time over ranks, per step id (index: step, -1 for rows without a step id)."""
    if total not in per_step.columns or per_step.empty:
        return None
    f = per_step[["step", total]].dropna(subset=[total]).copy()
    if f.empty:
        return None
    f["step"] = f["step"].fillna(-1)
    return f.groupby("step")[total].median()


def robust_outliers(values: pd.Series, *, z: float = 3.5, min_rel: float = 0.05,
                    min_abs: float = 0.5) -> list:
    """Index labels whose value is far above the median (robust z, relative and absolute floors)."""
    v = values.dropna()
    if len(v) < 2:
        return []
    med = float(v.median())
    if len(v) == 2:
        lo, hi = float(v.min()), float(v.max())
        # Two ranks: no spread to speak of; only a large, plain gap counts.
        if hi - lo >= max(min_abs, 0.25 * lo) and hi > 0:
            return [v.idxmax()]
        return []
    mad = float((v - med).abs().median())
    floor = max(z * MAD_SCALE * mad, min_rel * abs(med), min_abs)
    return sorted(v.index[v > med + floor].tolist())
