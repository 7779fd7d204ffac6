"""Arrival at collectives: which rank reaches each collective last, and by how much, from the matched collective
instances of every rank (Kineto: the same instance across ranks, `loaders.kineto.match_collectives`' keys).

In a synchronous collective every member leaves together, when the last one has arrived; the time the others
spend in it before that is waiting for the late rank (the culprit), not transfer. The arrival of a rank is the
start of its communication kernel when the ranks' clocks agree (the ends of the matched instances line up), else
it is derived from the elapsed times alone (arrival = common end − elapsed: the rank with the shortest elapsed
arrived last, by the difference to the longest), which needs no common clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from reportgen.model import Run

CLOCK_TOLERANCE_MS = 0.05  # ends of one instance this close (median over instances): the clocks agree


@dataclass
class Arrivals:
    """Per matched instance (group, key) with two ranks or more: every rank's lateness (ms after the first)."""

    late: pd.DataFrame  # rank, step, op, group, key, late_ms
    instances: pd.DataFrame  # step, op, group, key, n, first_rank, last_rank, spread_ms, last_behind_median_ms,
    #                          last_margin_ms (the last arrival − the one before it)
    basis: str  # "start times" | "elapsed times"


def arrivals(run: "Run") -> Optional[Arrivals]:
    frames = []
    for r, d in run.ranks.items():
        c = d.communication
        inst = getattr(c, "instances", None) if c is not None else None
        if inst is None or not len(inst) or not {"start_ms", "dur_ms", "group", "key", "kind"} <= set(inst.columns):
            continue
        frames.append(inst[["step", "op", "group", "key", "kind", "start_ms", "dur_ms"]].assign(rank=int(r)))
    if len(frames) < 2:
        return None
    f = pd.concat(frames, ignore_index=True).dropna(subset=["start_ms", "dur_ms"])
    g = f.groupby(["group", "key"], sort=False)
    f = f[(g["rank"].transform("nunique") >= 2) & (g["kind"].transform("nunique") == 1)]
    f = f.drop_duplicates(subset=["group", "key", "rank"], keep="first")
    if f.empty:
        return None
    f = f.assign(end_ms=f["start_ms"] + f["dur_ms"])
    g = f.groupby(["group", "key"], sort=False)
    end_spread = (g["end_ms"].max() - g["end_ms"].min())
    start_spread = (g["start_ms"].max() - g["start_ms"].min())
    same_clock = float(end_spread.median()) <= max(CLOCK_TOLERANCE_MS, 0.1 * float(start_spread.median()))
    arrival = f["start_ms"] if same_clock else -f["dur_ms"]
    f = f.assign(arrival=arrival)
    g = f.groupby(["group", "key"], sort=False)
    f = f.assign(late_ms=f["arrival"] - g["arrival"].transform("min"))
    rows = []
    for (grp, key), x in f.groupby(["group", "key"], sort=False):
        x = x.sort_values("arrival", kind="stable")
        last = x.iloc[-1]
        others = x.iloc[:-1]["arrival"].to_numpy()
        rows.append({"step": x["step"].iloc[0], "op": str(x["op"].iloc[0]), "group": grp, "key": key, "n": len(x),
                     "first_rank": int(x["rank"].iloc[0]), "last_rank": int(last["rank"]),
                     "spread_ms": float(last["arrival"] - x["arrival"].iloc[0]),
                     "last_behind_median_ms": float(last["arrival"] - np.median(others)) if len(others) else math.nan,
                     "last_margin_ms": float(last["arrival"] - others[-1]) if len(others) else math.nan})
    return Arrivals(late=f[["rank", "step", "op", "group", "key", "late_ms"]].reset_index(drop=True),
                    instances=pd.DataFrame(rows), basis="start times" if same_clock else "elapsed times")


@dataclass
class LateRank:
    rank: int
    last_in: int  # significant instances it reached last
    significant: int  # instances whose spread is significant
    cost_ms: float  # per step: how long the median peer waited for it, summed over the instances it was last in
    saving_ms: float  # per step: how much earlier those collectives would start had it arrived with the next latest
    worst_ms: float  # its largest lateness after the first rank
    worst_op: str
    worst_step: object
    first_rank: int  # the first to arrive at that instance


def late_ranks(arr: Arrivals, n_steps: int, min_abs_ms: float, min_share: float, step_ms: float,
               persistence: float) -> list[LateRank]:
    """Ranks that reach the collectives last: in at least `persistence` of the instances whose spread (last − first
    arrival) is at least `min_abs_ms` and `min_share` of the step, and costing the median peer at least as much per
    step."""
    inst = arr.instances
    floor = max(min_abs_ms, min_share * step_ms if step_ms == step_ms else 0.0)
    sig = inst[inst["spread_ms"] >= floor]
    if sig.empty:
        return []
    out = []
    n_steps = max(1, n_steps)
    for r, x in sig.groupby("last_rank"):
        if len(x) < persistence * len(sig):
            continue
        cost = float(x["last_behind_median_ms"].sum()) / n_steps
        if cost < floor:
            continue
        w = x.loc[x["spread_ms"].idxmax()]
        out.append(LateRank(rank=int(r), last_in=len(x), significant=len(sig), cost_ms=cost,
                            saving_ms=float(x["last_margin_ms"].sum()) / n_steps,
                            worst_ms=float(w["spread_ms"]), worst_op=str(w["op"]), worst_step=w["step"],
                            first_rank=int(w["first_rank"])))
    return sorted(out, key=lambda x: -x.cost_ms)
