"""Arrival at collectives: which rank reaches each collective last, and by how much, from the matched collective
instances of every rank (Kineto: the same instance across ranks, `loaders.kineto.run.match_collectives`' keys).

In a synchronous collective every member leaves together, when the last one has arrived; the time the others
spend in it before that is waiting for the late rank (the culprit), not transfer. The arrival of a rank is the
start of its communication kernel when the ranks' clocks agree (the ends of the matched instances line up), else
it is derived from the elapsed times alone (arrival = common end − elapsed: the rank with the shortest elapsed
arrived last, by the difference to the longest), which needs no common clock.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

import numpy as np
import pandas as pd

from reportgen.i18n import N_, Msg, lazy

if TYPE_CHECKING:
    from reportgen.model import Run

CLOCK_TOLERANCE_MS = 0.05  # ends of one instance this close (median over instances): the clocks agree


@dataclass
class Arrivals:
    """Per matched instance (group, key) with two ranks or more: every rank's lateness (ms after the first)."""

    late: pd.DataFrame  # rank, step, op, group, key, kind, late_ms, inst (an integer per (group, key))
    instances: pd.DataFrame  # step, op, group, key, kind, n, first_rank, last_rank, spread_ms,
    #                          last_behind_median_ms, last_margin_ms (the last arrival − the one before it)
    basis: str  # "start times" | "elapsed times"
    source: str = "collectives"  # "collectives" (matched instances) | "step trace" (legacy step-trace columns)


STREAM_PREFIX_RE = re.compile(r"^stream_\d+_")


def _instances_of(run: "Run") -> list[pd.DataFrame]:
    """Every rank's collective instances (step, op, group, key, kind, start_ms, dur_ms, rank): the loaders'
    matched instances (`Communication.instances`: Kineto traces, Ascend communication.json / analysis.db /
    COMMUNICATION_OP)."""
    frames = []
    for r, d in run.ranks.items():
        c = d.communication
        inst = getattr(c, "instances", None) if c is not None else None
        if inst is None or not len(inst) or not {"start_ms", "dur_ms", "group", "key", "kind"} <= set(inst.columns):
            continue
        frames.append(inst[["step", "op", "group", "key", "kind", "start_ms", "dur_ms"]].assign(rank=int(r)))
    return frames


def _step_trace_events(run: "Run") -> list[pd.DataFrame]:
    """Legacy step traces (MindInsight, MindSpore GPU `step_trace_raw`): each rank's collective columns with their
    start and end points, an instance per (step, operator) once the per-rank stream number is dropped from the
    column name (`stream_48_0_AllReduce-op663` and `stream_37_0_AllReduce-op663` are one operator); ranks of
    different pipeline stages run different graphs and are never matched with each other."""
    from reportgen.loaders.communication import op_kind

    frames = []
    stage_of = run.info.stage_of_rank if run.info.stages > 1 else {}
    for r, d in run.ranks.items():
        st = d.step_trace
        ev = getattr(st, "comm_events", None) if st is not None else None
        if ev is None or not len(ev):
            continue
        name = ev["name"].astype(str).str.replace(STREAM_PREFIX_RE, "", regex=True)
        kind = np.array(["p2p" if op_kind(n) == "p2p" else "collective" for n in name], dtype=object)
        group = f"stage {stage_of.get(int(r), 0)}" if stage_of else "step trace"
        step = ev["step"].astype("Int64")
        frames.append(pd.DataFrame({"step": step, "op": name, "group": group,
                                    "key": step.astype(str) + ":" + name, "kind": kind,
                                    "start_ms": ev["start_ms"].astype(float),
                                    "dur_ms": (ev["end_ms"] - ev["start_ms"]).astype(float), "rank": int(r)}))
    return frames


def pseudo_group_text(gid: str) -> "Optional[Msg]":
    """The words for the groups this module makes up where the profile names none (legacy step traces: "stage N",
    "step trace"; no group recorded: ""), in the report's language; None for a group the profile names."""
    if gid == "":
        return lazy(N_("all ranks (group not recorded)"))
    if gid == "step trace":
        return lazy(N_("all ranks (step trace)"))
    if gid.startswith("stage "):
        return lazy(N_("stage {n} (step trace)"), n=gid[6:])
    return None


def arrivals(run: "Run") -> Optional[Arrivals]:
    frames, source = _instances_of(run), "collectives"
    if len(frames) < 2:
        frames, source = _step_trace_events(run), "step trace"
    if len(frames) < 2:
        return None
    f = pd.concat(frames, ignore_index=True).dropna(subset=["start_ms", "dur_ms"])
    # one integer per (group, key): the string keys are factorised once, not in every groupby (seconds at scale)
    f = f.assign(_inst=f.groupby(["group", "key"], sort=False).ngroup().to_numpy(),
                 _kind=pd.factorize(f["kind"].astype(str))[0])
    f = f[f.groupby("_inst", sort=False)["_kind"].transform("nunique").to_numpy() == 1]
    f = f.drop_duplicates(subset=["_inst", "rank"], keep="first")
    f = f[f.groupby("_inst", sort=False)["rank"].transform("size").to_numpy() >= 2]
    if f.empty:
        return None
    f = f.assign(end_ms=f["start_ms"] + f["dur_ms"])
    g = f.groupby("_inst", sort=False)
    end_spread = (g["end_ms"].max() - g["end_ms"].min())
    start_spread = (g["start_ms"].max() - g["start_ms"].min())
    same_clock = float(end_spread.median()) <= max(CLOCK_TOLERANCE_MS, 0.1 * float(start_spread.median()))
    arrival = f["start_ms"] if same_clock else -f["dur_ms"]
    f = f.assign(arrival=arrival.astype(float))
    g = f.groupby("_inst", sort=False)
    f = f.assign(late_ms=f["arrival"] - g["arrival"].transform("min"))
    # per instance, vectorised (a Python loop over instances costs seconds at 1,024 ranks): sorted by arrival, the
    # first, the last and the one before it, and the median of all but the last
    x = f.sort_values(["_inst", "arrival"], kind="stable")
    inst_id = x["_inst"].to_numpy()
    pos = x.groupby("_inst", sort=False).cumcount().to_numpy()
    n = x.groupby("_inst", sort=False)["rank"].transform("size").to_numpy()
    arr_v, rank_v = x["arrival"].to_numpy(dtype=float), x["rank"].to_numpy(dtype="int64")
    first, last, before = pos == 0, pos == n - 1, pos == n - 2
    ids = inst_id[last]
    order = np.argsort(ids, kind="stable")
    ids = ids[order]
    lastv, lastr = arr_v[last][order], rank_v[last][order]
    fi = np.argsort(inst_id[first], kind="stable")
    firstv, firstr = arr_v[first][fi], rank_v[first][fi]
    bi = np.argsort(inst_id[before], kind="stable")
    beforev = arr_v[before][bi]
    med = pd.Series(arr_v[~last]).groupby(inst_id[~last]).median().reindex(ids).to_numpy()
    head = x[last].iloc[order]
    instances = pd.DataFrame({
        "step": head["step"].to_numpy(), "op": head["op"].astype(str).to_numpy(), "group": head["group"].to_numpy(),
        "key": head["key"].to_numpy(), "kind": head["kind"].to_numpy(), "n": n[last][order],
        "first_rank": firstr, "last_rank": lastr, "spread_ms": lastv - firstv,
        "last_behind_median_ms": lastv - med, "last_margin_ms": lastv - beforev})
    if "step" in f and str(f["step"].dtype) == "Int64":
        instances["step"] = instances["step"].astype("Int64")
    return Arrivals(late=f[["rank", "step", "op", "group", "key", "kind", "late_ms"]].assign(
                        inst=f["_inst"].to_numpy()).reset_index(drop=True),
                    instances=instances.reset_index(drop=True), basis="start times" if same_clock else "elapsed times",
                    source=source)


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
        # and in `persistence` of the steps: a one-off stall (one step) is the stall rule's, not a late rank
        if x["step"].notna().any() and x["step"].nunique() < persistence * n_steps:
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
