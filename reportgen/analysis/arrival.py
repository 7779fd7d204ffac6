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


COLUMNS = ["step", "op", "group", "key", "kind", "start_ms", "dur_ms"]


def _instances_of(run: "Run") -> list[tuple[int, pd.DataFrame]]:
    """Every rank's collective instances (step, op, group, key, kind, start_ms, dur_ms), with its rank: the
    loaders' matched instances (`Communication.instances`: Kineto traces, Ascend communication.json / analysis.db /
    COMMUNICATION_OP)."""
    frames = []
    for r, d in run.ranks.items():
        c = d.communication
        inst = getattr(c, "instances", None) if c is not None else None
        if inst is None or not len(inst) or not {"start_ms", "dur_ms", "group", "key", "kind"} <= set(inst.columns):
            continue
        frames.append((int(r), inst))
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
        frames.append((int(r), pd.DataFrame({"step": step, "op": name, "group": group,
                                             "key": step.astype(str) + ":" + name, "kind": kind,
                                             "start_ms": ev["start_ms"].astype(float),
                                             "dur_ms": (ev["end_ms"] - ev["start_ms"]).astype(float)})))
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
    # one frame of every rank's instances (a copy per rank costs seconds at 1,024 ranks), its columns read as they
    # are (a copy of the columns and one of the kept rows were two more copies of 1.6 million rows), then integers
    whole = pd.concat([x for _, x in frames], ignore_index=True)
    col = {n: whole[n] for n in COLUMNS}
    rank_all = np.repeat(np.array([r for r, _ in frames], dtype=np.int64), [len(x) for _, x in frames])
    rows = np.flatnonzero((col["start_ms"].notna() & col["dur_ms"].notna()).to_numpy(dtype=bool))
    rank = rank_all[rows]
    start = col["start_ms"].to_numpy(dtype=float)[rows]
    dur = col["dur_ms"].to_numpy(dtype=float)[rows]
    # one integer per (group, key), numbered as they first appear, -1 where either is missing (as a groupby's
    # ngroup numbers them): the text is factorised once, not in every groupby (seconds at scale)
    g_all, gu = pd.factorize(col["group"])
    k_all, ku = pd.factorize(col["key"])
    gc, kc = g_all[rows], k_all[rows]
    pair = np.where((gc >= 0) & (kc >= 0), gc.astype(np.int64) * max(1, len(ku)) + kc, -1)
    inst = np.full(len(pair), -1, dtype=np.int64)
    inst[pair >= 0] = pd.factorize(pair[pair >= 0])[0]
    kind = pd.factorize(col["kind"].astype(str))[0].astype(np.int64)[rows] + 1
    # dense ids of the instance numbers (-1 included) for the counting below
    did, dvals = pd.factorize(inst)
    nd = len(dvals)
    # an instance whose rows name more than one kind is not one collective: left out
    base = int(kind.max()) + 1 if len(kind) else 1
    kinds = np.bincount(pd.unique(did * base + kind) // base, minlength=nd)
    keep = (kinds[did] == 1) & (inst >= 0)  # (a row without group or key is no instance: a groupby drops it)
    # a rank counted once per instance (its first row), and instances on two ranks or more
    rc, ru = pd.factorize(rank)
    once = ~pd.Series(np.where(keep, did.astype(np.int64) * max(1, len(ru)) + rc, -1)).duplicated().to_numpy()
    keep &= once
    size = np.bincount(did[keep], minlength=nd)
    keep &= size[did] >= 2
    if not keep.any():
        return None
    sel = np.flatnonzero(keep)
    at = rows[sel]  # the kept rows' positions in the stacked columns
    rank, start, dur, inst, did = rank[sel], start[sel], dur[sel], inst[sel], did[sel]
    end = start + dur
    # per instance (sorted once): the spread of the ends and of the starts, the first arrival
    order = np.argsort(did, kind="stable")
    sd = did[order]
    cuts = np.flatnonzero(np.r_[True, sd[1:] != sd[:-1]])

    def per(v: np.ndarray, how) -> np.ndarray:
        return how.reduceat(v[order], cuts)
    end_spread = per(end, np.maximum) - per(end, np.minimum)
    start_spread = per(start, np.maximum) - per(start, np.minimum)
    same_clock = float(pd.Series(end_spread).median()) <= max(CLOCK_TOLERANCE_MS,
                                                              0.1 * float(pd.Series(start_spread).median()))
    arr_all = start if same_clock else -dur
    lo = np.zeros(nd)
    lo[sd[cuts]] = per(arr_all, np.minimum)
    late_ms = arr_all - lo[did]
    # per instance, vectorised (a Python loop over instances costs seconds at 1,024 ranks): sorted by arrival, the
    # first, the last and the one before it, and the median of all but the last
    xo = np.lexsort((arr_all, inst))  # by instance number, then arrival (stable)
    inst_id, arr_v, rank_v = inst[xo], arr_all[xo], rank[xo]
    starts = np.flatnonzero(np.r_[True, inst_id[1:] != inst_id[:-1]])
    lens = np.diff(np.r_[starts, len(inst_id)])
    pos = np.arange(len(inst_id)) - np.repeat(starts, lens)
    n = np.repeat(lens, lens)
    first, last, before = pos == 0, pos == n - 1, pos == n - 2
    ids = inst_id[last]  # ascending already (sorted by instance)
    lastv, lastr = arr_v[last], rank_v[last]
    firstv, firstr = arr_v[first], rank_v[first]
    beforev = arr_v[before]
    med = pd.Series(arr_v[~last]).groupby(inst_id[~last]).median().reindex(ids).to_numpy()
    head = at[xo[last]]
    instances = pd.DataFrame({
        "step": col["step"].iloc[head].to_numpy(), "op": col["op"].iloc[head].astype(str).array,
        "group": col["group"].iloc[head].array, "key": col["key"].iloc[head].array,
        "kind": col["kind"].iloc[head].array, "n": lens,
        "first_rank": firstr, "last_rank": lastr, "spread_ms": lastv - firstv,
        "last_behind_median_ms": lastv - med, "last_margin_ms": lastv - beforev})
    if str(col["step"].dtype) == "Int64":
        instances["step"] = instances["step"].astype("Int64")
    # the lateness rows: the group as a categorical of its codes above (4 bytes a row, not a text column)
    late = pd.DataFrame({"rank": rank, "step": col["step"].iloc[at].reset_index(drop=True),
                         "op": col["op"].iloc[at].reset_index(drop=True),
                         "group": pd.Categorical.from_codes(g_all[at], categories=pd.Index(gu)),
                         "key": col["key"].iloc[at].reset_index(drop=True),
                         "kind": col["kind"].iloc[at].reset_index(drop=True), "late_ms": late_ms, "inst": inst})
    return Arrivals(late=late, instances=instances, basis="start times" if same_clock else "elapsed times",
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
