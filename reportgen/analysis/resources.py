"""Resource utilisation and per-rank detail analyses (pure functions of the loaded model).

* memory and FLOPs per rank (MindInsight's cluster heatmaps: peak / capacity, FLOPs / max FLOPs);
* data preparation: queue empty/full counts (MindInsight's `analyse_device_queue_info` / GetNext formulas) and the
  pipeline bottleneck operator (MindInsight's `_filter_outside_threshold`, thresholds 0.8 / 0.6);
* CPU utilisation averages; the cluster operator view (per-type spread across ranks).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Optional

import numpy as np
import pandas as pd

from reportgen.analysis.operator_totals import operator_totals
from reportgen.analysis.codes import column_array
from reportgen.i18n import N_, lazy
from reportgen.model import CpuUsage, DataPrep, Run

# MindInsight MinddataPipelineProposer thresholds: an op whose output queue is below LOW while every input
# queue is above HIGH cannot keep up with its producers.
QUEUE_HIGH = 0.8
QUEUE_LOW = 0.6
QUEUE_DROP = 0.5  # fallback: an op whose input queues are this much fuller than its output queue
HOST_QUEUE_EMPTY_WARNING = 0.3  # MindInsight DEVICE_QUEUE_EMPTY_WARNING_THRESHOLD
TOP_OPERATOR_TYPES = 20
OPERATOR_ROW_COLUMNS = ("rank", "side", "core", "op_type", "count", "total_ms", "avg_ms", "max_ms")
TYPE_SPREAD_MIN = 1.5  # a rank is "slow at" a type when its time is this many times the type's median ...
TYPE_SPREAD_MIN_MS = 0.05  # ... and at least this much above it (ms) ...
TYPE_SPREAD_MIN_SHARE = 0.01  # ... and by at least this share of a typical rank's total operator time


VERDICT_TEXT = {
    "data_process": N_("the host queue was empty in more than 30 % of the steps: data processing does not keep up"),
    "data_transmission": N_("the host queue was rarely empty but the chip-side queue ran dry: sending data to "
                            "the device is the limit"),
    "": "",
}


@dataclass
class QueueSummary:
    """Empty/full counts of the host queue (per step) and of the chip-side GetNext queue (per batch)."""

    host_total: int = 0
    host_empty: int = 0
    host_full: int = 0
    host_capacity: Optional[float] = None
    device_total: int = 0
    device_empty: int = 0
    get_next_ms: Optional[float] = None  # average GetNext wait (chip side)
    host_get_ms: Optional[float] = None
    host_push_ms: Optional[float] = None
    host_total_ms: Optional[float] = None
    verdict: str = ""  # "data_process" | "data_transmission" | "normal" | ""
    verdict_text: str = ""

    @property
    def host_empty_rate(self) -> Optional[float]:
        return self.host_empty / self.host_total if self.host_total else None

    def reading(self, empty_rate: float = HOST_QUEUE_EMPTY_WARNING) -> str:
        """MindInsight's analyse_queue_summary (host queue = its "device queue", chip queue = its "get_next
        queue"): "data_process" | "data_transmission" | "normal", or "" without a host queue."""
        if not self.host_total:
            return ""
        if self.host_empty > empty_rate * self.host_total:
            return "data_process"
        if self.device_total and self.device_empty > 0:
            return "data_transmission"
        return "normal"


def queue_summary(dp: Optional[DataPrep]) -> Optional[QueueSummary]:
    if dp is None or (dp.host_queue is None and dp.device_queue is None):
        return None
    q = QueueSummary()
    hq = dp.host_queue
    if hq is not None and len(hq):
        q.host_total = int(len(hq))
        q.host_empty = int((hq["size"] == 0).sum())
        q.host_full = int((hq["size"] == hq["capacity"]).sum())
        q.host_capacity = float(hq["capacity"].max())
    t = dp.host_times
    if t is not None and len(t):
        for col, attr in (("get_ms", "host_get_ms"), ("push_ms", "host_push_ms"), ("total_ms", "host_total_ms")):
            if col in t and t[col].notna().any():
                setattr(q, attr, float(t[col].mean()))
    dq = dp.device_queue
    if dq is not None and len(dq):
        q.device_total = int(len(dq))
        q.device_empty = int((dq["size"] == 0).sum())
        if dq["get_ms"].notna().any():
            q.get_next_ms = float(dq["get_ms"].mean())
    q.verdict = q.reading()
    q.verdict_text = VERDICT_TEXT[q.verdict] if q.verdict != "normal" else (
        N_("both queues were fed") if q.device_total else N_("the host queue was fed"))
    return q


def pipeline_bottleneck(ops: Optional[pd.DataFrame], high: float = QUEUE_HIGH, low: float = QUEUE_LOW
                        ) -> tuple[list[int], str]:
    """Operators MindInsight flags (`_filter_outside_threshold`) and why. Returns (op ids, kind) where kind is
    "operator" (its input queues are full and its output queue low), "source" (every queue is low: the leaf
    readers are slow), "consumer" (every queue is high: the pipeline keeps up; the device is the limit),
    "queue_drop" (MindInsight flags nothing, but one op's input queues are at least `QUEUE_DROP` fuller than its
    output queue: the seed's "high input, low output" reading, as MindSpore's own queue analysis states it) or ""."""
    if ops is None or not len(ops) or "usage_rate" not in ops:
        return [], ""
    rows = _op_rows(ops)
    usage = {int(r.op_id): r.usage_rate for r in rows}
    flagged, leaves, root = [], [], None
    all_low, all_high, any_op = True, True, False
    for r in rows:
        if r.parent_id is None or (isinstance(r.parent_id, float) and math.isnan(r.parent_id)):
            root = int(r.op_id)
            continue
        u = r.usage_rate
        if u is None or (isinstance(u, float) and math.isnan(u)):
            continue
        any_op = True
        is_low = u < low
        if not is_low:
            all_low = False
        if u < high:
            all_high = False
        children = list(r.children or [])
        if not children:
            leaves.append(int(r.op_id))
            continue
        child_rates = [usage.get(int(c), math.nan) for c in children]
        if is_low and all(not math.isnan(c) and c >= high for c in child_rates):
            flagged.append(int(r.op_id))
    if not any_op:
        return [], ""
    if all_low:
        return leaves, "source"
    if all_high:
        return ([root] if root is not None else []), "consumer"
    if flagged:
        return flagged, "operator"
    best, gap = None, QUEUE_DROP
    for r in rows:
        u = r.usage_rate
        children = [usage.get(int(c), math.nan) for c in (r.children or [])]
        children = [c for c in children if not math.isnan(c)]
        if children and u is not None and not math.isnan(u) and min(children) - u >= gap:
            best, gap = int(r.op_id), min(children) - u
    return ([best], "queue_drop") if best is not None else ([], "")


class _OpRow(NamedTuple):
    op_id: Any
    parent_id: Any
    usage_rate: Any
    children: Any


def _op_rows(ops: pd.DataFrame) -> list[_OpRow]:
    """The data pipeline's operators as `itertuples` gives their values (each column's Python values), without
    the named tuple class `itertuples` makes on every call (~0.2 ms: a rank's pipeline has a few operators)."""
    cols = [ops[c].tolist() if c in ops else [None] * len(ops) for c in _OpRow._fields]
    return [_OpRow(*v) for v in zip(*cols)]


@dataclass
class CpuSummary:
    machine: dict[str, Optional[float]]  # user, sys, io, idle averages (%), whole percents as MindInsight shows them
    busy: Optional[float]  # 100 - idle
    process: dict[str, Optional[float]]
    ops: list[dict]
    cpu_count: Optional[int]
    selection: str = ""  # which samples the averages cover (MindInsight's rule, see loaders.cpu_usage)
    ops_total: dict[str, Optional[float]] = field(default_factory=dict)  # Σ operator averages (MindInsight's total)


def cpu_summary(cpu: Optional[CpuUsage]) -> Optional[CpuSummary]:
    """Averages exactly as MindInsight shows them: the samples its default step filter keeps (the loader's
    `selected` column: the first samples, not the last one), `round(mean)` to a whole percent; the operators'
    averages are computed the same way by the loader, and their total is the sum of the rounded averages."""
    if cpu is None:
        return None

    def avg(df: pd.DataFrame, col: str) -> Optional[float]:
        if col not in df or not len(df):
            return None
        sel = df["selected"].to_numpy(bool) if "selected" in df else np.ones(len(df), bool)
        v = df[col].to_numpy(float)[sel]
        v = v[~np.isnan(v)]
        return round(float(v.sum()) / len(v)) if len(v) else None

    machine = {k: avg(cpu.machine, k) for k in ("user", "sys", "io", "idle")}
    busy = 100 - machine["idle"] if machine["idle"] is not None else None
    m = cpu.machine
    if "user" in m:  # described on the machine's user series (other series may have other lengths)
        m = m[m["user"].notna()]
    sel = m["selected"].to_numpy(bool) if "selected" in m else np.ones(len(m), bool)
    n = len(sel)
    if sel.all():
        selection = lazy("the only sample") if n == 1 else lazy("all {n} samples (no host queue file to place them in "
                                                                  "steps)", n=n)
    elif not sel.any():
        selection = lazy("none of the {n} samples (no sample falls in a profiled step)", n=n)
    else:
        kept = np.flatnonzero(sel)
        selection = lazy("samples {first}-{last} of {n}: MindInsight places every sample after the first in a step "
                         "of the host queue file and leaves out the samples outside the recorded steps (so the last "
                         "one always)", first=kept[0] + 1, last=kept[-1] + 1, n=n)
    totals = {}
    for k in ("user", "sys"):
        vals = [o[k] for o in cpu.ops.to_dict("records") if o.get(k) is not None and not math.isnan(o[k])]
        totals[k] = float(sum(vals)) if vals else None
    return CpuSummary(machine=machine, busy=busy, process={k: avg(cpu.process, k) for k in ("user", "sys")},
                      ops=cpu.ops.to_dict("records"), cpu_count=cpu.cpu_count, selection=selection, ops_total=totals)


@dataclass
class Resources:
    memory: pd.DataFrame  # rank, host, peak_mb, capacity_mb, ratio, allocated_peak_mb
    flops: pd.DataFrame  # rank, host, flops_m, flops_per_s_g, util_pct, flops_norm, flops_per_s_norm
    capacity_known: bool = False
    stage_flops: list[dict] = field(default_factory=list)  # stage, ranks, flops_m (MindInsight: sum / ranks per stage)
    # every rank's operator-type rows (OPERATOR_ROW_COLUMNS), and the top types' per-rank totals
    operator_rows: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(OPERATOR_ROW_COLUMNS)))
    operator_types: pd.DataFrame = field(default_factory=pd.DataFrame)  # side, op_type, rank, total_ms
    operator_summary: list[dict] = field(default_factory=list)
    operator_basis: str = ""
    operator_totals: Optional[dict] = None  # summary.json's `operators` (`analysis.operator_totals`), given the steps
    queues: dict[int, QueueSummary] = field(default_factory=dict)
    bottlenecks: dict[int, tuple[list[int], str]] = field(default_factory=dict)
    cpu: dict[int, CpuSummary] = field(default_factory=dict)

    @property
    def has_memory(self) -> bool:
        return bool(len(self.memory))

    @property
    def has_flops(self) -> bool:
        return bool(len(self.flops))


def analyze_resources(run: Run, device_memory_mb: Optional[float] = None, steps=None) -> Resources:
    """`device_memory_mb`: the device capacity to assume where the profiler recorded none (--device-memory-gb).
    `steps` (the `StepAnalysis`): summary.json's operator totals are made too, where the operator tables are open."""
    mem_rows, flop_rows = [], []
    queues, bottlenecks, cpus = {}, {}, {}
    for r in run.rank_ids:
        d = run.ranks[r]
        host = d.info.host or ""
        m = d.memory
        if m is not None and m.peak_mb is not None:
            cap = m.capacity_mb or device_memory_mb
            ratio = m.peak_mb / cap if cap else math.nan
            mem_rows.append({"rank": r, "host": host, "peak_mb": m.peak_mb,
                             "capacity_mb": cap if cap else math.nan, "ratio": ratio,
                             "capacity_source": m.capacity_source if m.capacity_mb else
                             ("--device-memory-gb" if cap else ""),
                             "allocated_peak_mb": m.allocated_peak_mb if m.allocated_peak_mb is not None
                             else math.nan})
        f = d.flops
        if f is not None and f.flops_m is not None:
            flop_rows.append({"rank": r, "host": host, "flops_m": f.flops_m,
                              "flops_per_s_g": f.flops_per_s_g if f.flops_per_s_g is not None else math.nan,
                              "util_pct": f.utilization_pct if f.utilization_pct is not None else math.nan})
        q = queue_summary(d.dataprep)
        if q is not None:
            queues[r] = q
        if d.dataprep is not None and d.dataprep.ops is not None:
            bottlenecks[r] = pipeline_bottleneck(d.dataprep.ops)
        c = cpu_summary(d.cpu)
        if c is not None:
            cpus[r] = c
    memory = pd.DataFrame(mem_rows, columns=["rank", "host", "peak_mb", "capacity_mb", "ratio", "capacity_source",
                                             "allocated_peak_mb"])
    flops = pd.DataFrame(flop_rows, columns=["rank", "host", "flops_m", "flops_per_s_g", "util_pct"])
    if len(flops):
        top = flops["flops_m"].max()
        flops["flops_norm"] = flops["flops_m"] / top if top > 0 else math.nan
        topf = flops["flops_per_s_g"].max()
        flops["flops_per_s_norm"] = flops["flops_per_s_g"] / topf if topf and topf > 0 else math.nan
    else:
        flops["flops_norm"] = flops["flops_per_s_norm"] = []
    res = Resources(memory=memory, flops=flops, capacity_known=bool(len(memory)) and memory["capacity_mb"].notna().any(),
                    queues=queues, bottlenecks=bottlenecks, cpu=cpus)
    res.stage_flops = _stage_flops(run, flops)
    _operator_view(run, res)
    if steps is not None:
        res.operator_totals = operator_totals(run, steps)
    return res


def _stage_flops(run: Run, flops: pd.DataFrame) -> list[dict]:
    """MindInsight ParallelProposer: stage FLOPs = sum of its ranks' FLOPs / (rank_size / stage_num)."""
    if run.info.stages <= 1 or not len(flops) or not run.info.stage_of_rank:
        return []
    size = run.info.rank_size or len(run.rank_ids)
    per_stage = size / run.info.stages
    out = []
    for s in range(run.info.stages):
        ranks = [r for r, st in run.info.stage_of_rank.items() if st == s]
        vals = flops[flops["rank"].isin(ranks)]["flops_m"]
        if len(vals):
            out.append({"stage": s, "ranks": sorted(ranks), "flops_m": float(vals.sum()) / per_stage,
                        "n_ranks": int(len(vals))})
    if out:
        mean = sum(o["flops_m"] for o in out) / len(out)
        for o in out:
            o["vs_mean"] = o["flops_m"] / mean - 1 if mean else math.nan
    return out


def _operator_view(run: Run, res: Resources) -> None:
    """Per (side, type): each rank's total, the cluster median, and the rank furthest above it."""
    cols = list(OPERATOR_ROW_COLUMNS[1:])
    parts: dict[str, list] = {c: [] for c in cols}
    ranks, sizes, bases = [], [], set()
    for r in run.rank_ids:
        ops = run.ranks[r].operators
        if ops is None or not len(ops.by_type):
            continue
        for c in cols:  # column by column: a frame per rank selected and concatenated costs ~1 ms a rank, a Series
            parts[c].append(np.asarray(column_array(ops.by_type, c)))  # a column ~40 µs (0.3 s at 1,024 ranks)
        ranks.append(r)
        sizes.append(len(ops.by_type))
        bases.update(ops.basis.values())
    if not ranks:
        return
    res.operator_rows = pd.DataFrame({"rank": np.repeat(np.array(ranks, dtype=np.int64), sizes),
                                      **{c: np.concatenate(parts[c]) for c in cols}})
    allt = res.operator_rows.groupby(["rank", "side", "op_type"], as_index=False)["total_ms"].sum()
    res.operator_basis = ", ".join(sorted(bases))
    n_ranks = allt["rank"].nunique()
    typical_total = float(allt.groupby("rank")["total_ms"].sum().median())
    min_gap = max(TYPE_SPREAD_MIN_MS, TYPE_SPREAD_MIN_SHARE * typical_total)
    tot = allt.groupby(["side", "op_type"])["total_ms"].sum().sort_values(ascending=False)
    keep = list(tot.index[:TOP_OPERATOR_TYPES])
    sel = allt.set_index(["side", "op_type"]).loc[keep].reset_index()
    res.operator_types = sel
    # every kept type's totals as one matrix (type x rank, 0 where a rank has none of it): a row a type, no scan
    # of the whole table per type
    all_ranks = np.array(sorted(allt["rank"].unique()))
    kpos = {k: i for i, k in enumerate(keep)}
    m = np.zeros((len(keep), len(all_ranks)))
    row = np.array([kpos[k] for k in zip(sel["side"], sel["op_type"])], dtype=np.int64)
    m[row, np.searchsorted(all_ranks, sel["rank"].to_numpy())] = sel["total_ms"].to_numpy(dtype="float64")
    summary = []
    for (side, op_type), v in zip(keep, m):
        med = float(np.median(v)) if len(v) else math.nan  # (what Series.median gives: no missing values here)
        hi_rank = int(all_ranks[np.argmax(v)])
        hi = float(v.max())
        slow = n_ranks >= 3 and med > 0 and hi >= TYPE_SPREAD_MIN * med and hi - med >= min_gap
        summary.append({"side": side, "op_type": op_type, "total_ms": float(tot[(side, op_type)]),
                        "mean_ms": float(v.sum() / len(v)), "median_ms": med, "min_ms": float(v.min()),
                        "min_rank": int(all_ranks[np.argmin(v)]), "max_ms": hi, "max_rank": hi_rank,
                        "spread": hi / med if med > 0 else math.nan, "slow_rank": hi_rank if slow else None,
                        "n_ranks": int((v > 0).sum())})
    res.operator_summary = summary
