"""A tiny builder of hand-made `Analysis` objects for the per-rule case tables (tests/test_rule_cases.py).

Every table is literal: one value per rank (position = rank id), or one row per step of such values.

    kit.analysis(steps={"computing": [[100, 101, 99, 130]] * 4, "free": [5, 5, 5, 5]})

* `steps`: phase -> per-rank values (the same in every one of `n_steps` steps) or a list of per-step rows. The
  phases decide the step-trace kind: `iteration_interval` / `fp_and_bp` / `tail` -> MindInsight ("legacy"),
  anything else -> Ascend `step_trace_time.csv` ("modern"). Without a `total`, it is the sum of
  iteration_interval + fp_and_bp + tail (legacy) or computing + communication_not_overlapped + free (modern).
  The step analysis and, for the Ascend kind, the overlap view are the real pure functions
  (`analyze_steps`, `analyze_overlap`) of these traces, so medians, stats and rates are computed as in a report.
* `overlap`: MindInsight overlap columns (computation, communication_alone, receive_alone, collective_alone,
  stage) -> per-rank averages; `receive_alone` makes it a pipeline run. Also through `analyze_overlap`.
* `stages`: the ranks of each pipeline stage, e.g. [[0, 1], [2, 3]].
* `comm`: COMM_TIME_COLUMNS name (wait_ms, communication_ms, ...) -> per-rank values or per-step rows
  (the `CommAnalysis.per_rank_step` frame); `links`: [("src-dst", transport, size_mb, time_ms), ...] (the
  `pairs` and `links` frames); `transfers`: [("src-dst", transport, size_mb, time_ms, count), ...] per-operator
  records on links (the `link_ops` frame: `count` records of that size, in step 1).
* `operators`: side -> op type -> per-rank total ms, or (total ms, count) per rank (`Resources.operator_rows`).
* `memory`: rank -> (peak MB, capacity MB or None); `flops`: per-rank GFLOPS; `stage_flops`: per-stage MFLOPs.
* `queues`: rank -> QueueSummary fields (host_empty, host_total, device_empty, device_total); `cpu`: rank ->
  busy % (100 − idle).
* `execution`: {"step_ms": ms, "types": {op type: per-rank ms in the representative step}} (the Marey view's
  type spread, computed by the real `type_spread`).
* `timeline`: rank -> (span ms, free ms); `issues`: DataIssue list; `layout`, `mode`, `hosts`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from reportgen.analysis import Analysis
from reportgen.analysis.communication import CommAnalysis
from reportgen.analysis.execution import DeviceRow, ExecutionView, MareyStep, type_spread
from reportgen.analysis.overlap import analyze_overlap
from reportgen.analysis.resources import OPERATOR_ROW_COLUMNS, CpuSummary, QueueSummary, Resources
from reportgen.analysis.steps import analyze_steps
from reportgen.collectives import op_class
from reportgen.model import (
    COMM_TIME_COLUMNS, OVERLAP_COLUMNS, PHASES_BY_KIND, DataIssue, Overlap, RankData, RankInfo, Run, RunInfo,
    StepOps, StepTrace, TimelineSummary,
)

LEGACY_ONLY = {"iteration_interval", "fp_and_bp", "tail"}
TOTAL_OF = {"legacy": ("iteration_interval", "fp_and_bp", "tail"),
            "modern": ("computing", "communication_not_overlapped", "free")}


def _rows(values, n_steps: int) -> list[list[float]]:
    """Per-step rows of per-rank values: a flat list is repeated for `n_steps` steps."""
    if values and isinstance(values[0], (list, tuple)):
        return [list(map(float, row)) for row in values]
    return [list(map(float, values)) for _ in range(n_steps)]


def _n_ranks(*tables) -> int:
    n = 0
    for t in tables:
        for v in (t or {}).values():
            if isinstance(v, dict):
                n = max(n, _n_ranks(v))
            elif isinstance(v, (list, tuple)) and v:
                n = max(n, len(v[0]) if isinstance(v[0], (list, tuple)) else len(v))
    return n


def _step_traces(steps: dict, n_ranks: int, n_steps: int) -> dict[int, StepTrace]:
    kind = "legacy" if LEGACY_ONLY & set(steps) else "modern"
    phases = PHASES_BY_KIND[kind]
    unknown = set(steps) - set(phases)
    assert not unknown, f"not {kind} step-trace phases: {unknown}"
    table = {p: _rows(v, n_steps) for p, v in steps.items()}
    count = len(next(iter(table.values())))
    out = {}
    for r in range(n_ranks):
        cols = {p: [row[r] for row in rows] for p, rows in table.items()}
        if "total" not in cols:
            cols["total"] = [sum(cols[p][i] for p in TOTAL_OF[kind] if p in cols) for i in range(count)]
        frame = pd.DataFrame({"step": pd.array(range(1, count + 1), dtype="Int64"),
                              **{p: cols.get(p, [math.nan] * count) for p in phases}})
        out[r] = StepTrace(kind=kind, steps=frame, source=f"rank_{r}/step_trace")
    return out


def _overlaps(overlap: dict, n_ranks: int) -> dict[int, Overlap]:
    pipeline = "receive_alone" in overlap
    out = {}
    for r in range(n_ranks):
        row = {c: [float(overlap[c][r])] if c in overlap else [math.nan] for c in OVERLAP_COLUMNS}
        frame = pd.DataFrame({"step": pd.array([1], dtype="Int64"), **row})
        out[r] = Overlap(source=f"rank_{r}/cluster_analyse.csv", producer="cluster_analyse", steps=frame,
                         pipeline=pipeline)
    return out


def _link_ops(transfers: Optional[list]) -> pd.DataFrame:
    recs = []
    for name, transport, size_mb, time_ms, count in transfers or []:
        src, dst = (int(x) for x in name.split("-"))
        recs += [{"rank": src, "step": 1, "op": f"op{len(recs) + k}", "group": "g0", "src": src, "dst": dst,
                  "transport": transport, "time_ms": float(time_ms), "size_mb": float(size_mb),
                  "bandwidth_gbps": size_mb / time_ms} for k in range(int(count))]
    return pd.DataFrame(recs)


def _comm(comm: Optional[dict], links: Optional[list], n_ranks: int, n_steps: int,
          transfers: Optional[list] = None) -> CommAnalysis:
    empty = pd.DataFrame()
    per_rank_step = pd.DataFrame(columns=["rank", "step", *COMM_TIME_COLUMNS, "n_ops"])
    if comm:
        table = {c: _rows(v, n_steps) for c, v in comm.items()}
        count = len(next(iter(table.values())))
        per_rank_step = pd.DataFrame([
            {"rank": r, "step": s + 1, **{c: table[c][s][r] if c in table else math.nan for c in COMM_TIME_COLUMNS},
             "n_ops": 1} for r in range(n_ranks) for s in range(count)])
    per_rank = per_rank_step.groupby("rank")[list(COMM_TIME_COLUMNS)].mean() if comm else empty
    pairs = pd.DataFrame(columns=["src", "dst", "transport", "time_ms", "size_mb", "bandwidth_gbps"])
    link_table = empty
    if links:
        recs = []
        for name, transport, size_mb, time_ms in links:
            src, dst = (int(x) for x in name.split("-"))
            recs.append({"src": src, "dst": dst, "transport": transport, "time_ms": float(time_ms),
                         "size_mb": float(size_mb), "bandwidth_gbps": size_mb / time_ms})  # MB/ms = GB/s
        pairs = pd.DataFrame(recs)
        link_table = pairs.assign(group="g0", mapped=True, stored_bandwidth_gbps=math.nan)
        link_table["self"] = pairs["src"] == pairs["dst"]
    return CommAnalysis(
        has_data=bool(comm or links or transfers), producers=["hand-made"] if comm or links or transfers else [],
        unit_notes=[], per_rank=per_rank, per_rank_step=per_rank_step, per_group_rank=empty, ops=empty,
        rank_ops=empty, links=link_table, pairs=pairs, link_ops=_link_ops(transfers), groups={}, ranks_without_data=[], transport_medians={})


def _operator_rows(operators: dict) -> pd.DataFrame:
    recs = []
    for side, types in operators.items():
        for op_type, per_rank in types.items():
            for r, v in enumerate(per_rank):
                total, count = (v if isinstance(v, tuple) else (v, 1))
                recs.append({"rank": r, "side": side, "core": side.upper(), "op_type": op_type, "count": count,
                             "total_ms": float(total), "avg_ms": total / count, "max_ms": total / count})
    return pd.DataFrame(recs, columns=list(OPERATOR_ROW_COLUMNS))


def _resources(operators, memory, flops, stage_flops, stages, queues, cpu) -> Resources:
    mem = pd.DataFrame([{"rank": r, "host": "", "peak_mb": float(peak),
                         "capacity_mb": float(cap) if cap else math.nan,
                         "ratio": peak / cap if cap else math.nan, "capacity_source": "hand-made" if cap else "",
                         "allocated_peak_mb": math.nan} for r, (peak, cap) in (memory or {}).items()],
                       columns=["rank", "host", "peak_mb", "capacity_mb", "ratio", "capacity_source",
                                "allocated_peak_mb"])
    fl = pd.DataFrame([{"rank": r, "host": "", "flops_m": float(g) * 1000, "flops_per_s_g": float(g),
                        "util_pct": math.nan} for r, g in enumerate(flops or [])],
                      columns=["rank", "host", "flops_m", "flops_per_s_g", "util_pct"])
    res = Resources(memory=mem, flops=fl, capacity_known=bool(len(mem)) and mem["capacity_mb"].notna().any())
    if stage_flops:
        mean = sum(stage_flops) / len(stage_flops)  # MindInsight: each stage vs the mean of stages
        res.stage_flops = [{"stage": s, "ranks": (stages or [[]] * len(stage_flops))[s], "flops_m": float(f),
                            "n_ranks": len((stages or [[]] * len(stage_flops))[s]), "vs_mean": f / mean - 1}
                           for s, f in enumerate(stage_flops)]
    if operators:
        res.operator_rows = _operator_rows(operators)
        res.operator_basis = "per step"
    for r, q in (queues or {}).items():
        s = QueueSummary(**q)
        s.verdict = s.reading()
        res.queues[r] = s
    for r, busy in (cpu or {}).items():
        res.cpu[r] = CpuSummary(machine={"user": busy, "sys": 0.0, "io": 0.0, "idle": 100.0 - busy}, busy=busy,
                                process={}, ops=[], cpu_count=None)
    return res


def _execution(execution: dict, stage_of: dict[int, int], n_ranks: int) -> ExecutionView:
    step_ms = float(execution["step_ms"])
    types = execution["types"]
    ops = {}
    for r in range(n_ranks):
        names = [t for t in types if types[t][r] is not None]
        ops[r] = StepOps(rank=r, step=1, source=f"rank_{r}/trace_view.json", step_ms=step_ms, names=names,
                         classes=[op_class(n) for n in names], start=np.zeros(len(names)),
                         dur=np.array([float(types[n][r]) for n in names]))
    stages = {r: stage_of.get(r, 0) for r in range(n_ranks)}
    devices = [DeviceRow(rank=r, stage=stages[r], label=f"rank {r}", shift_ms=0.0, step_ms=step_ms,
                         n_ops=len(ops[r].names), busy_ms={}) for r in range(n_ranks)]
    m = MareyStep(step=1, reason="representative", devices=devices, spread=[],
                  type_spread=type_spread(ops, stages, step_ms), alignment=[], window="", ops=ops)
    return ExecutionView(marey=[m], overview=[], overview_comm=[], skipped_ranks=[])


def analysis(*, steps: Optional[dict] = None, n_steps: int = 4, overlap: Optional[dict] = None,
             stages: Optional[list[list[int]]] = None, comm: Optional[dict] = None, links: Optional[list] = None,
             operators: Optional[dict] = None, memory: Optional[dict] = None, flops: Optional[list] = None,
             stage_flops: Optional[list] = None, queues: Optional[dict] = None, cpu: Optional[dict] = None,
             execution: Optional[dict] = None, timeline: Optional[dict] = None,
             issues: Optional[list[DataIssue]] = None, ranks: Optional[int] = None, layout: str = "ascend",
             mode: str = "data-parallel", hosts: Optional[list[str]] = None,
             transfers: Optional[list] = None, expert: Optional[dict] = None) -> Analysis:
    keyed = [r for d in (memory, queues, cpu, timeline) for r in (d or {})]
    n = ranks or max(_n_ranks(steps, overlap, comm, operators, {"f": flops or []}, (execution or {}).get("types")),
                     1 + max(keyed, default=0))
    if links:
        n = max(n, 1 + max(int(x) for name, *_ in links for x in name.split("-")))
    stage_of = {r: s for s, members in enumerate(stages or []) for r in members}
    info = RunInfo(path="hand-made", layout=layout, layout_label=layout, parallel_mode=mode,
                   stages=len(stages) if stages else 1, rank_size=n, stage_of_rank=stage_of)
    traces = _step_traces(steps, n, n_steps) if steps else {}
    overlaps = _overlaps(overlap, n) if overlap else {}
    ranks_data = {}
    for r in range(n):
        tl = None
        if timeline and r in timeline:
            span, free = timeline[r]
            tl = TimelineSummary(source=f"rank_{r}/trace_view.json", span_ms=float(span), free_ms=float(free))
        ranks_data[r] = RankData(info=RankInfo(rank=r, source_dir=f"rank_{r}", host=hosts[r] if hosts else None),
                                 step_trace=traces.get(r), overlap=overlaps.get(r), timeline=tl)
    run = Run(root=Path("hand-made"), info=info, ranks=ranks_data)
    st = analyze_steps(run)
    ca = _comm(comm, links, n, n_steps, transfers)
    ov = analyze_overlap(run, st, ca)
    res = _resources(operators, memory, flops, stage_flops, stages, queues, cpu)
    ex = _execution(execution, stage_of, n) if execution else None
    a = Analysis(run=run, steps=st, comm=ca, overlap=ov, resources=res, issues=list(issues or []), execution=ex)
    if expert is not None:  # {"group": name, "expert_ms": [per rank ms per step]}: one expert-parallel group
        from reportgen.analysis.expert import EpGroup, ExpertBalance

        vals = {r: float(v) for r, v in enumerate(expert["expert_ms"])}
        mean, top = sum(vals.values()) / len(vals), max(vals.values())
        a.expert = ExpertBalance([EpGroup(str(expert.get("group", "ep")), str(expert.get("group", "ep")),
                                          sorted(vals), vals, {}, mean_ms=mean, max_ms=top, peak_to_mean=top / mean,
                                          hot_ranks=sorted(r for r, v in vals.items() if v >= mean * 1.1),
                                          saving_ms=top - mean)], [])
    return a
