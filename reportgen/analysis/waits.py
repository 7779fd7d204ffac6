"""Who waits for whom: per communication group, an N x N matrix "rank i waited for rank j", in ms per step.

In a synchronous collective every member leaves when the last one has arrived (`analysis.arrival`, the one matcher
of collective instances across ranks). At each matched collective the rank that arrived last is the one the
others waited for: rank i, arriving `late_j − late_i` ms before it, waited that long for rank j. Summed over the
instances and divided by the steps, the matrix says per step how long each rank waited for each other rank; a
column holds what a rank costs its peers. A culprit hidden by the collective (its stall lengthens every rank's step
by the same amount, so step times and per-phase averages look even) stands out as one column.

Point-to-point operations (pipeline send/receive: a later stage waits for its activations, which is the bubble,
not a culprit) are left out.

`per_waiter_ms` of a culprit: the mean over the group's other ranks of what each waited for it per step (what each
of them loses); `saving_ms`: how much earlier the collectives it was last at would start had it arrived with the
next latest rank, per step (what fixing it saves on the step, `Arrivals.instances.last_margin_ms`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Optional

import numpy as np
import pandas as pd

from reportgen.analysis.arrival import Arrivals, arrivals
from reportgen.analysis.codes import Groups, distinct
from reportgen.groupsum import group_sum
from reportgen.i18n import N_

if TYPE_CHECKING:
    from reportgen.model import Run

P2P_KINDS = frozenset({"p2p", "send", "recv"})
TOP_CULPRITS = 5  # per group, in summary.json and the table
TOP_WAITERS = 3  # per culprit: the ranks that waited longest for it

# Why a run has no matrix (`Waits.reason`), shown as is (English; the site translates through the catalogue).
NO_RANKS = N_("one rank only: nobody waits for another rank")
NO_TIMES = N_("this input records no per-rank start time of its collectives (MindInsight hccl_raw, communication "
              "totals without a timestamp): who waits for whom cannot be read")
NO_MATCH = N_("no collective was recorded on two ranks or more (nothing to match across ranks)")


@dataclass
class Culprit:
    rank: int
    per_waiter_ms: float  # mean over the group's other ranks of what each waited for it, ms per step
    total_ms: float  # what the group's other ranks waited for it together, rank-ms per step
    saving_ms: float  # per step: its collectives' start with the next latest arrival instead of its own
    last_in: int  # instances it arrived last at
    instances: int  # the group's instances
    waiters: list[tuple[int, float]]  # (rank, ms per step) of the ranks that waited longest for it
    op: str  # the collective it cost the most at
    op_ms: float  # per waiter and step, at that collective

    def to_dict(self) -> dict:
        return {"rank": self.rank, "per_waiter_ms": self.per_waiter_ms, "total_ms": self.total_ms,
                "saving_ms": self.saving_ms, "last_in": self.last_in, "instances": self.instances,
                "waiters": [{"rank": r, "ms": ms} for r, ms in self.waiters], "op": self.op, "op_ms": self.op_ms}


@dataclass
class GroupWaits:
    group: str
    ranks: list[int]  # the group's ranks seen in matched collectives, ascending (the matrix's order)
    ms: np.ndarray  # [i, j]: ms per step rank ranks[i] waited for rank ranks[j] (diagonal 0)
    instances: int
    culprits: list[Culprit]  # every rank that anyone waited for, largest per_waiter_ms first


@dataclass
class Waits:
    basis: str  # Arrivals.basis: "start times" | "elapsed times"
    source: str  # Arrivals.source: "collectives" | "step trace"
    steps: int  # the steps the ms are per (distinct steps of the matched instances; 1 when unnumbered)
    groups: list[GroupWaits] = field(default_factory=list)
    arrivals: Optional[Arrivals] = None  # what the matrices were built from (the late-arrival rule reads its
    #                                       instances; `analyze_waits` keeps its `late` rows empty)

    def culprit(self, rank: int) -> Optional[tuple[GroupWaits, Culprit]]:
        """The group where `rank` costs its peers the most, and its record there."""
        got = [(g, c) for g in self.groups for c in g.culprits if c.rank == rank]
        return max(got, key=lambda gc: gc[1].per_waiter_ms) if got else None

    def top(self, n: int = TOP_CULPRITS) -> list[tuple[GroupWaits, Culprit]]:
        """The largest culprits over all groups, largest per_waiter_ms first."""
        out = [(g, c) for g in self.groups for c in g.culprits]
        return sorted(out, key=lambda gc: -gc[1].per_waiter_ms)[:n]

    def to_dict(self, n: int = TOP_CULPRITS) -> dict:
        return {"basis": self.basis, "source": self.source, "steps": self.steps, "unit": "ms per step",
                "groups": [{"group": g.group, "ranks": len(g.ranks), "instances": g.instances,
                            "culprits": [c.to_dict() for c in g.culprits[:n]]} for g in self.groups]}


def analyze_waits(run: "Run", arr: Optional[Arrivals] = None, release: bool = False) -> tuple[Optional[Waits], str]:
    """The wait-for matrices of `run` and "" ; or None and the reason there are none. `release` (`analyze`): the
    ranks' coded instances (`RankFigures.arrival`, read by `arrivals` only) dropped once the arrivals are made,
    before the matrices (the stage's peak; a later `arrivals` codes the instances' frames again)."""
    if len(run.ranks) < 2:
        return None, NO_RANKS
    arr = arrivals(run) if arr is None else arr
    if release:
        for d in run.ranks.values():
            if getattr(d.figures, "arrival", None) is not None:
                d.figures.arrival = None
    if arr is None:
        return None, NO_TIMES if not _has_times(run) else NO_MATCH
    w = wait_matrices(arr)
    # the per-rank lateness rows (one per rank and instance: ~225 MB at 1,024 ranks) are what the matrices were
    # built from; nothing reads them after (the rules read `instances`): kept as an empty frame of the same columns
    if w.arrivals is not None:
        w.arrivals = replace(w.arrivals, late=w.arrivals.late.iloc[:0].copy())
    return w, ""


def _has_times(run: "Run") -> bool:
    n = 0
    for d in run.ranks.values():
        c = d.communication
        inst = getattr(c, "instances", None) if c is not None else None
        ev = getattr(d.step_trace, "comm_events", None) if d.step_trace is not None else None
        n += bool((inst is not None and len(inst)) or (ev is not None and len(ev)))
    return n >= 2


def _text_codes(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Codes of a text column as `pd.factorize(col.astype(str))` gives them (first-seen order, -1 for a missing
    value), factorising the column once and only its distinct values as text (`astype(str)` of a million arrow
    strings and a factorisation of the objects cost seconds at 1,024 ranks)."""
    c, u = pd.factorize(col)
    if not len(u):
        return c.astype(np.int64), np.array([], dtype=object)
    su = pd.Series(np.asarray(u, dtype=object)).astype(str)
    uc, uu = pd.factorize(su)  # distinct values that read the same as text become one
    uc = np.asarray(uc, dtype=np.int64)
    return np.where(c >= 0, uc[np.maximum(c, 0)], -1), np.asarray(uu, dtype=object)


def _is_p2p(col: pd.Series) -> np.ndarray:
    """Per row: the kind is point-to-point (`P2P_KINDS`, any case), decided once per distinct value."""
    c, u = pd.factorize(col)
    if not len(u):
        return np.zeros(len(c), dtype=bool)
    p2p = pd.Series(np.asarray(u, dtype=object)).astype(str).str.lower().isin(P2P_KINDS).to_numpy(dtype=bool)
    return np.where(c >= 0, p2p[np.maximum(c, 0)], False)


def _n_steps(step: pd.Series, coll: np.ndarray) -> int:
    """The distinct steps of the collectives' rows (1 when none is numbered)."""
    if isinstance(step.dtype, pd.CategoricalDtype):  # (`arrivals`: codes into the distinct steps)
        c = step.cat.codes.to_numpy()[coll]
        return max(1, len(distinct(c[c >= 0])))
    v = step.to_numpy(dtype=object, na_value=None)[coll] if len(step) else np.zeros(0, dtype=object)
    steps = pd.Series(v, dtype=object).dropna()
    return max(1, int(steps.nunique())) if len(steps) else 1


def _dense(v: np.ndarray, values: bool = False) -> tuple[np.ndarray, object]:
    """Codes 0..n-1 (int32) of integers `v` and n, or (`values`) the distinct values ascending: through a lookup
    table where the values are small non-negative integers (no hash table of every row), else by sorting."""
    if len(v) and v.min() >= 0 and v.max() < 4 * len(v) + 1024:
        seen = np.zeros(int(v.max()) + 1, dtype=bool)
        seen[v] = True
        u = np.flatnonzero(seen)
        table = np.full(len(seen), -1, dtype=np.int32)
        table[u] = np.arange(len(u), dtype=np.int32)
        c = table[v]
    else:
        u, c = np.unique(v, return_inverse=True)
        c = c.astype(np.int32).reshape(-1)
    return c, (u if values else len(u))


def _sums(parts: list[tuple[np.ndarray, int]], ms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per group of the key codes `parts` (a missing code: the row left out) the sum of `ms` as pandas' groupby
    sums it (compensated, the rows in their order), and each group's first row."""
    g = Groups(parts, len(ms))
    if not g.n:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    return group_sum(ms[g.rows].reshape(-1, 1), g.gid, g.n)[:, 0], g.first


def wait_matrices(arr: Arrivals) -> Waits:
    late = arr.late
    coll = ~_is_p2p(late["kind"])  # the rows of collectives, as arrays (no copy of the text columns)
    n_steps = _n_steps(late["step"], coll)
    out = Waits(basis=arr.basis, source=arr.source, steps=n_steps, arrivals=arr)
    if not coll.any():
        return out
    # (memory, issue 33: a row per rank and collective, 1.6 million at 1,024 ranks: 4-byte codes, no hash table of
    # the rows, each array freed when done)
    rows = slice(None) if coll.all() else np.flatnonzero(coll)
    del coll
    gcode, gnames = _text_codes(late["group"])
    gcode = gcode[rows].astype(np.int32)
    inst = (late["inst"].to_numpy() if "inst" in late else
            late.groupby(["group", "key"], sort=False).ngroup().to_numpy())[rows]
    ic, n_i = _dense(inst)  # instance numbers 0..n_i-1
    del inst
    lv = late["late_ms"].to_numpy(dtype=float)[rows]
    rc, rv = _dense(late["rank"].to_numpy(dtype="int64")[rows], values=True)  # rank codes, the ranks
    nr = max(1, len(rv))
    # per instance the latest arrival (NaN skipped), its first row: the rank the others waited for, and the
    # collective as its profile names it there (ranks may number concurrent operators differently)
    lmax = np.full(n_i, -np.inf)
    np.fmax.at(lmax, ic, lv)
    is_max = np.flatnonzero(lv == lmax[ic])
    first = np.full(n_i, len(lv))
    np.minimum.at(first, ic[is_max], is_max)
    del is_max
    op_code, op_names = _text_codes(late["op"])
    op_first = op_code[rows][first].astype(np.int32)  # per instance
    del op_code
    cc = rc[first]  # per instance: the culprit's rank code (its first row's)
    del first
    # the rows of a rank that waited (not the culprit itself): what it waited, by group, waiter and culprit
    wr = np.flatnonzero(rc != cc[ic])
    ms = lmax[ic[wr]] - lv[wr]
    del lmax, lv
    w_g, w_i, w_inst = gcode[wr], rc[wr], ic[wr]
    w_j, w_op = cc[w_inst], op_first[w_inst]
    del wr, cc, op_first
    ng = max(1, len(gnames))
    # one aggregation each over every group (a groupby per group costs seconds at 1,024 ranks)
    cv, cfirst = _sums([(w_g, ng), (w_i, nr), (w_j, nr)], ms)
    cg, ci, cj = w_g[cfirst], np.asarray(rv)[w_i[cfirst]], np.asarray(rv)[w_j[cfirst]]
    # the largest collective per (group, culprit): the largest sum, the first seen of equal ones
    ov, ofirst = _sums([(w_g, ng), (w_j, nr), (w_op, max(1, len(op_names)))], ms)
    best = np.lexsort((ofirst, -ov, w_j[ofirst], w_g[ofirst]))
    gj = w_g[ofirst][best] * nr + w_j[ofirst][best]
    best = best[np.r_[True, gj[1:] != gj[:-1]]] if len(best) else best
    top_op = {(int(w_g[ofirst[b]]), int(rv[w_j[ofirst[b]]])): (str(op_names[int(w_op[ofirst[b]])]), float(ov[b]))
              for b in best}
    # the instances a group's waiters were in
    # (an instance is one group's: its group code marked at its number, the marked ones counted per group)
    g_of = np.full(max(1, n_i), -2, dtype=np.int64)
    g_of[w_inst] = w_g
    g_of = g_of[g_of > -2]
    n_inst = pd.Series(np.bincount(g_of + 1, minlength=len(gnames) + 1)[1:])
    del g_of
    n_inst = n_inst[n_inst > 0]
    del ms, w_g, w_i, w_j, w_op, w_inst
    mp = distinct(gcode.astype(np.int64) * nr + rc)  # every group's ranks (by group code, -1 too)
    mg, mr = mp // nr, np.asarray(rv)[mp % nr]
    cut = np.flatnonzero(np.r_[True, mg[1:] != mg[:-1]]) if len(mg) else np.zeros(0, dtype=np.int64)
    members_of = {int(mg[a]): np.sort(mr[a:b]) for a, b in zip(cut, np.r_[cut[1:], len(mg)])}
    del gcode, rc, mp
    ins = arr.instances
    if "kind" in ins:  # (the collectives' rows of the three columns read here: not a copy of every column)
        ins = ins.loc[~np.asarray(_is_p2p(ins["kind"]), dtype=bool),
                      [c for c in ("group", "last_rank", "last_margin_ms") if c in ins]]
    code_of = {name: k for k, name in enumerate(gnames)}
    if len(ins):
        ic, iu = _text_codes(ins["group"])
        ig = np.array([code_of.get(str(x), -1) for x in iu] + [-1], dtype="int64")[ic]
    else:
        ig = np.zeros(0, int)
    lasts = pd.DataFrame({"g": ig, "j": ins["last_rank"].to_numpy() if len(ins) else np.zeros(0, int),
                          "m": ins["last_margin_ms"].to_numpy(dtype=float) if len(ins) else np.zeros(0)})
    last_n = lasts.groupby(["g", "j"]).size()
    last_m = lasts.groupby(["g", "j"])["m"].sum()
    ins_n = lasts.groupby("g").size()
    order = np.argsort(cg, kind="stable")
    bounds = np.searchsorted(cg[order], np.arange(len(gnames) + 1))
    for k in sorted(range(len(gnames)), key=lambda k: str(gnames[k])):
        sel = order[bounds[k]:bounds[k + 1]]
        if not len(sel):
            continue  # nobody waited in this group
        mem = members_of[k]
        m = np.zeros((len(mem), len(mem)))
        m[np.searchsorted(mem, ci[sel]), np.searchsorted(mem, cj[sel])] = cv[sel] / n_steps
        others = max(1, len(mem) - 1)
        n_i = int(ins_n.get(k, n_inst.get(k, 0)))
        culprits = []
        for j in np.flatnonzero(m.sum(axis=0) > 0):
            r = int(mem[j])
            col = m[:, j]
            top = np.argsort(-col, kind="stable")[:TOP_WAITERS]
            key = (k, r)
            op_name, op_ms = top_op.get(key, ("", 0.0))
            culprits.append(Culprit(
                rank=r, per_waiter_ms=float(col.sum() / others), total_ms=float(col.sum()),
                saving_ms=float(last_m.get(key, 0.0)) / n_steps, last_in=int(last_n.get(key, 0)), instances=n_i,
                waiters=[(int(mem[t]), float(col[t])) for t in top if col[t] > 0],
                op=op_name, op_ms=op_ms / n_steps / others))
        culprits.sort(key=lambda c: -c.per_waiter_ms)
        out.groups.append(GroupWaits(group=str(gnames[k]), ranks=[int(r) for r in mem], ms=m, instances=n_i,
                                     culprits=culprits))
    return out


def binned(g: GroupWaits, max_cells: int = 48, keep: int = 8) -> tuple[list[str], np.ndarray, list[bool]]:
    """The matrix for a heatmap of at most `max_cells` x `max_cells`: a group this small as is; a larger one with
    its `keep` largest culprits as rows and columns of their own and the other ranks in contiguous rank bins.
    A cell is what a rank of the row (bin) waited per step, on average, for the ranks of the column (bin) together.
    Returns the labels, the matrix and, per label, whether it is a culprit kept on its own."""
    n = len(g.ranks)
    if n <= max_cells:
        labels = [str(r) for r in g.ranks]
        return labels, g.ms.copy(), [False] * n
    kept = [c.rank for c in g.culprits[:keep]]
    pos = {r: k for k, r in enumerate(g.ranks)}
    kept_idx = sorted(pos[r] for r in kept)
    # the other ranks in bins of contiguous positions that never straddle a kept culprit (a label "0–36" holds
    # every rank from 0 to 36): at most `max_cells` labels in all
    size = max(1, math.ceil((n - len(kept_idx)) / max(1, max_cells - 2 * len(kept_idx) - 1)))
    chunks, lo = [], 0
    for stop in kept_idx + [n]:
        seg = np.arange(lo, stop, dtype=int)
        chunks += [seg[i:i + size] for i in range(0, len(seg), size)]
        lo = stop + 1
    parts: list[tuple[int, np.ndarray, str, bool]] = []  # (sort position, members, label, kept)
    for k in kept_idx:
        parts.append((k, np.array([k]), str(g.ranks[k]), True))
    for c in chunks:
        lo, hi = g.ranks[int(c[0])], g.ranks[int(c[-1])]
        parts.append((int(c[0]), c, str(lo) if lo == hi else f"{lo}–{hi}", False))
    parts.sort(key=lambda p: p[0])
    k = len(parts)
    out = np.zeros((k, k))
    for a, (_, rows, _, _) in enumerate(parts):
        sub = g.ms[rows]
        for b, (_, cols, _, _) in enumerate(parts):
            out[a, b] = float(sub[:, cols].sum()) / len(rows)
    return [p[2] for p in parts], out, [p[3] for p in parts]
