"""Execution overview: the Marey view of chosen steps and the time overview of every step.

Pure functions. `choose_steps` / `choose_ranks` decide what the step-operator loader reads (it keeps only those
steps in memory); `analyze_execution` turns what it read into per-device rows (with each device's alignment
shift), the join keys and the per-operator duration spread the rules read. What is drawn of it (the bars, the
lines joining operators across devices, the stage means, the caps) is shaped by `charts.marey_layout`.

Operators are joined across devices by name and occurrence: the k-th `MatMul-op12` of a step on one device is the
k-th on another (MindSpore's `-opN` names are unique, torch_npu kernel names repeat).

Alignment (MindInsight's `TimelineService`, `mindinsight_formats.md` §4): devices that share a collective form a
stage (the run's stage layout is used when the files give it); inside a stage every device is shifted so that
the first collective it shares with the stage's first device ends at the same time as there (a collective
completes together on all its members). Stage i is then shifted so that its first Receive ends when stage i-1's
first Send ends (the pipeline pairing MindInsight's UI draws). Times are ms from the first device's step start.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import pandas as pd

from reportgen.i18n import lazy
from reportgen.model import ExecutionData, Run, StepOps

MAX_DEVICES = 32  # timelines read (and rows drawn) for one step
MIN_JOIN_DEVICES = 2
OP_SUFFIX_RE = re.compile(r"-op\d+$|__\d+(?:_\d+)*$")  # MindSpore -opN; torch_npu hcom_allReduce__586_0_1


@dataclass
class Selection:
    steps: list[int]
    reasons: dict[int, str]
    ranks: list[int]
    skipped: list[int]


def _step_totals(per_step: pd.DataFrame) -> pd.Series:
    if per_step is None or not len(per_step) or "total" not in per_step:
        return pd.Series(dtype=float)
    return per_step.dropna(subset=["step", "total"]).groupby("step")["total"].mean().sort_index()


def choose_steps(per_step: pd.DataFrame, requested: Optional[list[int]] = None) -> tuple[list[int], dict[int, str]]:
    """The representative step (mean step time closest to the median, the first step left out when there are
    more than two: it carries compilation and warm-up), the slowest one, and any requested steps."""
    totals = _step_totals(per_step)
    steps: list[int] = []
    reasons: dict[int, str] = {}
    if len(totals):
        body = totals.iloc[1:] if len(totals) > 2 else totals
        med = float(body.median())
        rep = int((body - med).abs().idxmin())
        steps.append(rep)
        reasons[rep] = lazy("representative: mean step time {mean} ms, closest to the median {median} ms",
                           mean=f"{float(totals[rep]):.2f}", median=f"{med:.2f}")
        slow = int(totals.idxmax())
        if slow != rep:
            steps.append(slow)
            reasons[slow] = lazy("slowest: mean step time {mean} ms", mean=f"{float(totals[slow]):.2f}")
    for s in requested or []:
        if s not in reasons:
            steps.append(int(s))
            reasons[int(s)] = lazy("requested with --marey-step")
    return steps, reasons


def choose_ranks(ranks: list[int], stage_of: dict[int, int], per_step: pd.DataFrame, step: Optional[int],
                 cap: int = MAX_DEVICES) -> tuple[list[int], list[int]]:
    """All ranks up to `cap`; above it, per stage the slowest, fastest and median ranks of `step` first, then
    ranks spread evenly over each stage."""
    ranks = sorted(ranks)
    if len(ranks) <= cap:
        return ranks, []
    by_stage: dict[int, list[int]] = defaultdict(list)
    for r in ranks:
        by_stage[stage_of.get(r, 0)].append(r)
    totals = {}
    if per_step is not None and len(per_step) and step is not None:
        s = per_step[per_step["step"] == step]
        totals = dict(zip(s["rank"].astype(int), s["total"].astype(float)))
    picks: list[int] = []
    for st in sorted(by_stage):
        members = by_stage[st]
        ordered = sorted(members, key=lambda r: totals.get(r, math.nan) if r in totals else -math.inf)
        timed = [r for r in ordered if r in totals]
        if timed:
            for r in (timed[-1], timed[0], timed[len(timed) // 2]):
                if r not in picks:
                    picks.append(r)
    per = max(1, cap // max(1, len(by_stage)))
    for st in sorted(by_stage):
        members = by_stage[st]
        have = sum(1 for r in picks if stage_of.get(r, 0) == st)
        for r in members[::max(1, len(members) // per)]:
            if have >= per or len(picks) >= cap:
                break
            if r not in picks:
                picks.append(r)
                have += 1
    picks = sorted(picks[:cap])
    return picks, [r for r in ranks if r not in picks]


# --- the view -------------------------------------------------------------------------------------------------


@dataclass
class DeviceRow:
    rank: int
    stage: int
    label: str
    shift_ms: float
    step_ms: float
    n_ops: int
    busy_ms: dict[str, float]  # class -> summed duration
    source: str = ""


@dataclass
class OpSpread:
    key: str
    name: str
    cls: str
    stage: int
    n: int
    median_ms: float
    min_ms: float
    max_ms: float
    max_rank: int
    ratio: float  # max / median
    excess_ms: float  # max - median
    share: float  # median / step
    min_rank: int = -1  # the device where it was shortest

    @property
    def culprit_rank(self) -> int:
        """The device the others wait for: for computation the longest; for a collective (or a receive) the
        shortest, since every member leaves together and the last to arrive waits least."""
        return self.min_rank if self.cls in ("collective", "receive") and self.min_rank >= 0 else self.max_rank


@dataclass
class MareyStep:
    step: int
    reason: str
    devices: list[DeviceRow]  # in stage order; `shift_ms` aligns a device's operators (`aligned_start`)
    spread: list[OpSpread]
    type_spread: list[OpSpread]  # per operator type: the type's summed time per device
    alignment: list[str]
    window: str
    ops: dict[int, StepOps] = field(default_factory=dict)  # every operator of each device (step-relative times)
    keys: dict[int, list[str]] = field(default_factory=dict)  # join keys ("stage:name#k") parallel to ops' names

    def aligned_start(self, rank: int) -> np.ndarray:
        """The start of every operator of `rank` on the view's common time axis (ms)."""
        shift = next((d.shift_ms for d in self.devices if d.rank == rank), 0.0)
        return np.asarray(self.ops[rank].start, dtype=float) + shift


@dataclass
class ExecutionView:
    marey: list[MareyStep]
    overview: list[dict]  # step, rank, total_ms  (time overview lines)
    overview_comm: list[dict]  # step, communication_ms, wait_ms (averages over ranks)
    skipped_ranks: list[int]
    notes: list[str] = field(default_factory=list)
    spread_all: list[OpSpread] = field(default_factory=list)  # every step's spread, for the rules


def join_keys(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for n in names:
        k = seen.get(n, 0)
        seen[n] = k + 1
        out.append(n if k == 0 else f"{n}#{k}")
    return out


def group_stages(ops: dict[int, StepOps], stage_of: dict[int, int], keys: dict[int, list[str]]) -> dict[int, int]:
    """Stage of each device: the run's layout when known, else MindInsight's rule (devices sharing the first
    device's earliest collective join its stage)."""
    ranks = sorted(ops)
    if stage_of and len(set(stage_of.get(r, 0) for r in ranks)) > 1:
        return {r: stage_of.get(r, 0) for r in ranks}
    out: dict[int, int] = {}
    n = 0
    for r in ranks:
        if r in out:
            continue
        out[r] = n
        o = ops[r]
        first = next((keys[r][i] for i in range(len(o.names)) if o.classes[i] == "collective"), None)
        if first is not None:
            for r2 in ranks:
                if r2 not in out and first in set(keys[r2]):
                    out[r2] = n
        n += 1
    return out


def _end_of(o: StepOps, keys: list[str], key: str) -> Optional[float]:
    try:
        i = keys.index(key)
    except ValueError:
        return None
    return float(o.start[i] + o.dur[i])


def align(ops: dict[int, StepOps], stages: dict[int, int], keys: dict[int, list[str]]) -> tuple[dict[int, float], list[str]]:
    """Shift (ms) of each device; see the module doc."""
    shift = {r: 0.0 for r in ops}
    notes = []
    members: dict[int, list[int]] = defaultdict(list)
    for r in sorted(ops):
        members[stages[r]].append(r)
    for st, rs in sorted(members.items()):
        ref = rs[0]
        o = ops[ref]
        colls = [keys[ref][i] for i in range(len(o.names)) if o.classes[i] == "collective"]
        aligned = 0
        for r in rs[1:]:
            kset = set(keys[r])
            anchor = next((k for k in colls if k in kset), None)
            if anchor is None:
                continue
            shift[r] = _end_of(o, keys[ref], anchor) - _end_of(ops[r], keys[r], anchor)
            aligned += 1
        if len(rs) > 1:
            notes.append(lazy("stage {stage}: {aligned} of {n} device(s) aligned on rank {ref}'s first shared collective",
                              stage=st, aligned=aligned, n=len(rs) - 1, ref=ref) if aligned == len(rs) - 1 else
                         lazy("stage {stage}: {aligned} of {n} device(s) aligned on rank {ref}'s first shared "
                              "collective; the others start at their step start", stage=st, aligned=aligned,
                              n=len(rs) - 1, ref=ref))
    order = sorted(members)
    for a, b in zip(order, order[1:]):
        pa, pb = members[a][0], members[b][0]
        send = next((i for i, c in enumerate(ops[pa].classes) if c == "send"), None)
        recv = next((i for i, c in enumerate(ops[pb].classes) if c == "receive"), None)
        if send is None or recv is None:
            notes.append(lazy("stage {b}: no Send in stage {a} / Receive in stage {b}; not aligned with stage {a}", a=a, b=b))
            continue
        send_end = float(ops[pa].start[send] + ops[pa].dur[send]) + shift[pa]
        recv_end = float(ops[pb].start[recv] + ops[pb].dur[recv]) + shift[pb]
        delta = send_end - recv_end
        for r in members[b]:
            shift[r] += delta
        notes.append(lazy("stage {b}: aligned so that its first Receive ends with stage {a}'s first Send", a=a, b=b))
    return shift, notes


def spread(ops: dict[int, StepOps], stages: dict[int, int], keys: dict[int, list[str]], step_ms: float
           ) -> list[OpSpread]:
    """Per operator (join key) over the devices that ran it: duration median, min, max and the slowest device."""
    rows = []
    for r, o in ops.items():
        rows.append(pd.DataFrame({"key": keys[r], "name": o.names, "cls": o.classes, "dur": o.dur, "rank": r,
                                  "stage": stages[r]}))
    if not rows:
        return []
    df = pd.concat(rows, ignore_index=True)
    g = df.groupby("key", sort=False)
    stat = g.agg(name=("name", "first"), cls=("cls", "first"), stage=("stage", "min"), n=("dur", "size"),
                 median=("dur", "median"), lo=("dur", "min"), hi=("dur", "max"))
    stat = stat[stat["n"] >= MIN_JOIN_DEVICES]
    if not len(stat):
        return []
    idx = df.loc[df.groupby("key")["dur"].idxmax(), ["key", "rank"]].set_index("key")["rank"]
    idx_lo = df.loc[df.groupby("key")["dur"].idxmin(), ["key", "rank"]].set_index("key")["rank"]
    hi_rank, lo_rank = dict(zip(idx.index, idx.tolist())), dict(zip(idx_lo.index, idx_lo.tolist()))
    out = []  # column by column (a Series per operator costs seconds over a few thousand operators)
    for key, name, cls, stage, n, med, lo, hi in zip(stat.index, stat["name"], stat["cls"], stat["stage"],
                                                      stat["n"], stat["median"], stat["lo"], stat["hi"]):
        med = float(med)
        out.append(OpSpread(key=str(key), name=str(name), cls=str(cls), stage=int(stage),
                            n=int(n), median_ms=med, min_ms=float(lo), max_ms=float(hi),
                            max_rank=int(hi_rank.get(key, -1)), ratio=float(hi) / med if med > 0 else math.inf,
                            excess_ms=float(hi) - med, share=med / step_ms if step_ms > 0 else 0.0,
                            min_rank=int(lo_rank.get(key, -1))))
    return out


def op_type(name: str) -> str:
    """`Default/net/LayerNorm-op12` -> `LayerNorm`; kernel names (torch_npu) stay as they are."""
    return OP_SUFFIX_RE.sub("", name.rsplit("/", 1)[-1])


def type_spread(ops: dict[int, StepOps], stages: dict[int, int], step_ms: float) -> list[OpSpread]:
    """Per stage and operator type: the type's total time in the step on each device, over the devices."""
    items = list(ops.items())
    if not items:
        return []
    # every device's operators in one frame, each distinct name's type found once; per device, type and class the
    # total (rows of a device together, types and classes in order: what a groupby per device gave)
    names = [n for _, o in items for n in o.names]
    type_of = {n: op_type(n) for n in set(names)}
    pos = np.repeat(np.arange(len(items)), [len(o.names) for _, o in items])
    df = pd.DataFrame({"pos": pos, "type": [type_of[n] for n in names],
                       "cls": [c for _, o in items for c in o.classes],
                       "dur": np.concatenate([np.asarray(o.dur, dtype=float) for _, o in items]) if names else []})
    df = df.groupby(["pos", "type", "cls"], as_index=False)["dur"].sum()
    rank_of = np.array([r for r, _ in items])
    df = df.assign(rank=rank_of[df["pos"].to_numpy()], stage=[stages[r] for r in rank_of[df["pos"].to_numpy()]])
    df = df.drop(columns=["pos"])
    out = []
    for (st, typ, cls), g in df.groupby(["stage", "type", "cls"]):
        if len(g) < MIN_JOIN_DEVICES:
            continue
        med = float(g["dur"].median())
        i = g["dur"].idxmax()
        out.append(OpSpread(key=f"{st}:{typ}", name=str(typ), cls=str(cls), stage=int(st), n=len(g),
                            median_ms=med, min_ms=float(g["dur"].min()), max_ms=float(g["dur"].max()),
                            max_rank=int(g.loc[i, "rank"]), ratio=float(g["dur"].max()) / med if med > 0 else math.inf,
                            excess_ms=float(g["dur"].max()) - med, share=med / step_ms if step_ms > 0 else 0.0,
                            min_rank=int(g.loc[g["dur"].idxmin(), "rank"])))
    return sorted(out, key=lambda s: -s.median_ms)


def marey_step(step: int, reason: str, ops: dict[int, StepOps], stage_of: dict[int, int]) -> MareyStep:
    raw_keys = {r: join_keys(o.names) for r, o in ops.items()}
    stages = group_stages(ops, stage_of, raw_keys)
    shift, notes = align(ops, stages, raw_keys)
    # operators are joined inside a stage only (two stages may run kernels of the same name)
    keys = {r: [f"{stages[r]}:{k}" for k in ks] for r, ks in raw_keys.items()}
    ranks = sorted(ops, key=lambda r: (stages[r], r))
    many = len(set(stages.values())) > 1
    devices = []
    for r in ranks:
        o = ops[r]
        busy = defaultdict(float)
        for c, d in zip(o.classes, o.dur):
            busy[c] += float(d)
        devices.append(DeviceRow(rank=r, stage=stages[r], label=f"rank {r}" + (f" · stage {stages[r]}" if many else ""),
                                 shift_ms=shift[r], step_ms=o.step_ms, n_ops=len(o.names), busy_ms=dict(busy),
                                 source=o.source))
    step_ms = float(np.median([o.step_ms for o in ops.values()])) if ops else 0.0
    sp = spread(ops, stages, keys, step_ms)
    sp_sorted = sorted(sp, key=lambda s: -max(s.excess_ms, s.median_ms))
    window = next(iter(ops.values())).window if ops else ""
    return MareyStep(step=step, reason=reason, devices=devices, spread=sp_sorted,
                     type_spread=type_spread(ops, stages, step_ms), alignment=notes, window=window,
                     ops={r: ops[r] for r in ranks}, keys=keys)


def analyze_execution(run: Run, per_step: pd.DataFrame, comm_per_rank_step: pd.DataFrame) -> Optional[ExecutionView]:
    ex: Optional[ExecutionData] = run.execution
    overview = []
    if per_step is not None and len(per_step) and "total" in per_step:
        overview = [{"step": int(s), "rank": int(r), "total_ms": round(float(t), 4)}
                    for r, s, t in per_step[["rank", "step", "total"]].itertuples(index=False)
                    if pd.notna(t) and pd.notna(s)]
    oc = []
    if comm_per_rank_step is not None and len(comm_per_rank_step):
        c = comm_per_rank_step.dropna(subset=["step"]).groupby("step")[["communication_ms", "wait_ms"]].mean()
        oc = [{"step": int(s), "communication_ms": round(float(v.communication_ms), 4),
               "wait_ms": round(float(v.wait_ms), 4) if pd.notna(v.wait_ms) else None} for s, v in c.iterrows()]
    if ex is None and not overview:
        return None
    marey, spread_all = [], []
    if ex is not None:
        for s in ex.steps:
            ops = ex.ops.get(s) or {}
            if not ops:
                continue
            m = marey_step(s, ex.reasons.get(s, ""), ops, run.info.stage_of_rank)
            marey.append(m)
            spread_all.extend(m.spread)
    return ExecutionView(marey=marey, overview=overview, overview_comm=oc,
                         skipped_ranks=ex.skipped_ranks if ex else [],
                         notes=list(ex.notes) if ex else [], spread_all=spread_all)


def _per_step(run: Run, candidates: list[int]) -> pd.DataFrame:
    """(step, total, rank) of every step of `candidates`' step traces. Typed columns (the loaders' Int64 steps and
    float totals) are gathered as arrays into one frame (a frame a rank cost ~2 ms: 2 s at 1,024 ranks, in the
    load stage of every build and rebuild); others go through pandas a rank at a time, as they did."""
    traces = [(r, t) for r in candidates
              if (t := run.ranks[r].step_trace if r in run.ranks else None) is not None and len(t.steps)
              and "total" in t.steps]
    if traces and all(t.steps["step"].dtype in (pd.Int64Dtype(), np.dtype("int64"))
                      and t.steps["total"].dtype == np.dtype("float64") for _, t in traces):
        cols: dict[str, list] = {"step": [], "total": [], "rank": []}
        for r, t in traces:
            st = t.steps["step"]
            keep = st.notna().to_numpy()
            cols["step"].append(st.to_numpy(dtype="int64", na_value=0)[keep])
            cols["total"].append(t.steps["total"].to_numpy()[keep])
            cols["rank"].append(np.full(int(keep.sum()), r, dtype="int64"))
        per_step = pd.DataFrame({k: np.concatenate(v) for k, v in cols.items()})
        return per_step if len(per_step) else pd.DataFrame(columns=["rank", "step", "total"])
    frames = []
    for r, t in traces:
        f = t.steps.dropna(subset=["step"])[["step", "total"]].copy()
        f["rank"] = r
        frames.append(f)
    per_step = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["rank", "step", "total"])
    if len(per_step):
        per_step["step"] = per_step["step"].astype(int)
    return per_step


def select(run: Run, candidates: list[int], requested: Optional[list[int]] = None,
           cap: int = MAX_DEVICES) -> Selection:
    """What the step-operator loader reads: the steps (`choose_steps`) and the ranks (`choose_ranks`) among
    `candidates`, the ranks that have a timeline."""
    per_step = _per_step(run, candidates)
    steps, reasons = choose_steps(per_step, requested)
    ranks, skipped = choose_ranks(candidates, run.info.stage_of_rank, per_step, steps[0] if steps else None, cap)
    return Selection(steps=steps, reasons=reasons, ranks=ranks, skipped=skipped)
