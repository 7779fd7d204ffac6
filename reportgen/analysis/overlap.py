"""Communication/computation overlap and the parallel layout: per-rank and per-stage views.

Three views, chosen by what the run holds:

* ``pipeline`` / ``model``: MindInsight's columns (step interval, computation, pure communication and, for
  pipeline runs, stage time, pure receive, pure collective communication) from `ascend_cluster_analyse_*`
  files or recomputed from the timeline;
* ``modern``: `step_trace_time.csv`'s columns (computing, communication not overlapped, overlapped, free,
  bubble, preparing, ...);
* ``none``: neither; data-parallel runs then show the communication share from the communication files.

Stage rows follow msprof-analyze: per stage and step, each column is the maximum over the stage's ranks;
the mean and spread are added. The rates are MindInsight's ParallelProposer formulas (§6.2 of the reference).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import pandas as pd

from reportgen.dataquality import dq
from reportgen.i18n import N_
from reportgen.model import PHASE_LABELS, DataIssue, Run

LEGACY_PIPELINE = ("iteration_interval", "computation", "communication_alone", "stage", "receive_alone",
                   "collective_alone")
LEGACY_MODEL = ("iteration_interval", "computation", "communication_alone")
MODERN = ("computing", "communication_not_overlapped", "overlapped", "communication", "free", "stage", "bubble",
          "communication_not_overlapped_exclude_receive", "preparing", "total")
# Modern columns keep the step-trace labels; the legacy ones are MindInsight's names.
COLUMN_LABELS = {
    **PHASE_LABELS,
    "computation": N_("Computation"),
    "communication_alone": N_("Pure communication"),
    "stage": N_("Stage time"),
    "receive_alone": N_("Pure receive"),
    "collective_alone": N_("Pure collective communication"),
    "communication_not_overlapped_exclude_receive": N_("Comm. (not overlapped, excl. receive)"),
    "total": N_("Step time"),
    "computing_only": N_("Computing (not overlapped)"),
}
# Parts that add up to the step, in stacking order.
STACKS = {
    "pipeline": ("computation", "collective_alone", "receive_alone"),
    "model": ("computation", "communication_alone"),
    "modern": ("computing_only", "overlapped", "communication_not_overlapped_exclude_receive", "bubble", "free"),
}
CHECK_TOLERANCE = 0.01  # timeline recomputation vs the profiler's file: share of the step time
# Highlights (the performance helper has its own, configurable thresholds): a stage is "slowest" when it computes
# this much above the mean of the stages, and "waits most" when its receive/bubble is this share of its step.
STAGE_SLOW_MIN = 0.05
STAGE_WAIT_MIN = 0.05


@dataclass
class StageInfo:
    index: int  # 0-based
    ranks: list[int]

    @property
    def label(self) -> str:
        rs = ", ".join(str(r) for r in self.ranks[:8]) + ("…" if len(self.ranks) > 8 else "")
        return f"stage {self.index} ({rs})"


@dataclass
class OverlapAnalysis:
    view: str  # "pipeline" | "model" | "modern" | "none"
    columns: tuple[str, ...]
    stack: tuple[str, ...]
    per_rank: pd.DataFrame  # index rank: columns (+ computing_only), comm_share, pp_stage, n_steps, rule
    per_step: pd.DataFrame  # rank, step, columns
    stage_rows: pd.DataFrame  # pp_stage, step (<NA> = average), stat ("max"|"mean"|"min"), columns
    stage_summary: list[dict]
    stages: list[StageInfo]
    rates: dict[str, object]
    sources: list[str]
    ranks_without_data: list[int]
    checks: list[dict] = field(default_factory=list)
    slowest_stage: Optional[int] = None
    waiting_stage: Optional[int] = None
    notes: list[str] = field(default_factory=list)
    issues: list[DataIssue] = field(default_factory=list)
    # view "none" only: communication time / step time per rank (rank; communication_ms, wait_ms, total, share)
    comm_share: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def has_data(self) -> bool:
        return self.view != "none"

    @property
    def compute_col(self) -> str:
        return "computing" if self.view == "modern" else "computation"

    @property
    def wait_col(self) -> str:
        return "bubble" if self.view == "modern" else "receive_alone"



def _stages(run: Run, ranks: list[int]) -> list[StageInfo]:
    by: dict[int, list[int]] = {}
    for r in ranks:
        by.setdefault(run.info.stage_of_rank.get(r, 0), []).append(r)
    if len(by) <= 1 and run.info.stages <= 1:
        return [StageInfo(0, sorted(ranks))] if ranks else []
    return [StageInfo(s, sorted(v)) for s, v in sorted(by.items())]


def _legacy_tables(run: Run, step_avg: pd.DataFrame, step_per: pd.DataFrame):
    rows, parts, sources, checks, notes = [], [], set(), [], []
    pipeline = any(d.overlap is not None and d.overlap.pipeline for d in run.ranks.values())
    has_free = False
    intervals = _Intervals(step_per) if "iteration_interval" in step_per else None
    for r in run.rank_ids:
        o = run.ranks[r].overlap
        if o is None:
            continue
        sources.add(o.producer)
        steps = o.steps.copy()
        if o.stored_average is not None:
            avg, rule = dict(o.stored_average), "stored"
        else:
            avg, rule = steps.drop(columns=["step"]).mean(numeric_only=True).to_dict(), "mean"
        if not steps["free"].isna().all():
            has_free = True
        ii = step_avg["iteration_interval"].get(r, math.nan) if "iteration_interval" in step_avg else math.nan
        rows.append({"rank": r, **avg, "iteration_interval": ii, "n_steps": len(steps), "rule": rule})
        if intervals is not None:
            steps = intervals.beside(steps, int(r))
            if o.stored_average is None:  # the mean over the steps the overlap covers
                rows[-1]["iteration_interval"] = float(steps["iteration_interval"].mean())
        else:
            steps["iteration_interval"] = math.nan
        steps.insert(0, "rank", r)
        parts.append(steps)
        if o.coverage_note:
            notes.append(f"rank {r}: {o.coverage_note}")
        if o.check is not None:
            checks.append(_check(r, o, o.check))
    return rows, parts, sources, checks, notes, pipeline, has_free


class _Intervals:
    """The step trace's iteration interval of each rank and step, put beside a rank's overlap steps as
    `steps.merge(<the rank's step and iteration_interval rows>, on="step", how="left")` would (a merge a rank
    cost ~1 ms: 4 s at 4,096 ranks). Where a step is missing or a rank repeats a step, that merge itself."""

    def __init__(self, step_per: pd.DataFrame) -> None:
        self.per = step_per
        rank = step_per["rank"].to_numpy()
        order = np.argsort(rank, kind="stable")  # each rank's rows in their order
        ranks, first = np.unique(rank[order], return_index=True)
        bounds = zip(first.tolist(), [*first[1:].tolist(), len(order)])
        self.rows = {int(r): order[a:b] for r, (a, b) in zip(ranks.tolist(), bounds)}
        col = step_per["step"]
        self.step_dtype = col.dtype
        self.steps = None if col.isna().any() else col.to_numpy(dtype=np.int64)
        self.values = step_per["iteration_interval"].to_numpy(dtype=np.float64)

    def beside(self, steps: pd.DataFrame, r: int) -> pd.DataFrame:
        rows = self.rows.get(r)
        own = steps["step"]
        if (self.steps is None or "iteration_interval" in steps.columns or own.dtype != self.step_dtype
                or own.isna().any()):
            return steps.merge(self._frame(rows), on="step", how="left")
        keys = self.steps[rows] if rows is not None else np.empty(0, dtype=np.int64)
        lookup = dict(zip(keys.tolist(), self.values[rows].tolist() if rows is not None else []))
        if len(lookup) != len(keys):  # (a step twice: the merge's rows, one per match)
            return steps.merge(self._frame(rows), on="step", how="left")
        out = steps.reset_index(drop=True)
        out["iteration_interval"] = np.array([lookup.get(k, math.nan) for k in own.to_numpy(dtype=np.int64).tolist()],
                                             dtype=np.float64)
        return out

    def _frame(self, rows) -> pd.DataFrame:
        if rows is None:
            return pd.DataFrame({"step": pd.array([], dtype="Int64"), "iteration_interval": []})
        return self.per.iloc[rows][["step", "iteration_interval"]]


def _check(rank: int, summary, timeline) -> dict:
    """Largest difference between the profiler's file and the timeline recomputation, as a share of the step."""
    cols = ["computation", "communication_alone"] + (["stage", "receive_alone", "collective_alone"]
                                                     if summary.pipeline else [])
    sa = summary.steps["step"].to_numpy(dtype="float64", na_value=np.nan)
    sb = timeline.steps["step"].to_numpy(dtype="float64", na_value=np.nan)
    common, ia, ib = np.intersect1d(sa, sb, return_indices=True)
    keep = ~np.isnan(common)
    ia, ib = ia[keep], ib[keep]
    if ia.size == 0:
        return {"rank": rank, "steps": 0, "max_diff": math.nan, "ok": None, "column": ""}
    dur = timeline.steps["step_duration"].to_numpy(dtype="float64")[ib]
    dur = np.where(dur > 0, dur, np.nan)
    worst, worst_col = 0.0, ""
    for c in cols:
        d = np.abs(summary.steps[c].to_numpy(dtype="float64")[ia] - timeline.steps[c].to_numpy(dtype="float64")[ib])
        m = float(np.nanmax(d / dur)) if np.isfinite(d / dur).any() else math.nan
        if not math.isnan(m) and m >= worst:
            worst, worst_col = m, c
    return {"rank": rank, "steps": int(ia.size), "max_diff": worst, "ok": worst <= CHECK_TOLERANCE,
            "column": worst_col}


def analyze_overlap(run: Run, step_analysis, comm=None) -> OverlapAnalysis:
    sa = step_analysis
    issues: list[DataIssue] = []
    has_legacy = any(d.overlap is not None for d in run.ranks.values())
    if sa.kind == "modern" and not has_legacy:
        view = "modern"
        columns = MODERN
        per_rank = sa.average.reindex(columns=list(columns)).copy()
        per_rank["n_steps"] = sa.average["n_steps"]
        per_rank["rule"] = sa.average["rule"]
        per_step = sa.per_step.reindex(columns=["rank", "step", *columns]).copy()
        sources = ["step_trace_time"]
        checks, notes = [], []
    elif has_legacy:
        rows, parts, src, checks, notes, pipeline, has_free = _legacy_tables(run, sa.average, sa.per_step)
        view = "pipeline" if pipeline else "model"
        columns = LEGACY_PIPELINE if pipeline else LEGACY_MODEL
        if has_free:
            columns = (*columns, "free")
        per_rank = pd.DataFrame(rows).set_index("rank")
        per_step = pd.concat(parts, ignore_index=True).reindex(columns=["rank", "step", *columns])
        sources = sorted(src)
        for c in checks:
            if c["ok"] is False:
                issues.append(DataIssue("", dq("analysis.overlap-differs-from-file", c=c["rank"],
                                               c2=format(c["max_diff"], ".1%"), c3=c["column"]), "warning"))
    else:
        share = _communication_share(comm.per_rank if comm is not None and comm.has_data else None,
                                     sa.average if sa.kind else None)
        return OverlapAnalysis("none", (), (), pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), [],
                               _stages(run, run.rank_ids), {}, [], list(run.rank_ids), issues=issues,
                               comm_share=share)

    if view == "modern":
        if run.info.stages > 1 and not (per_rank["bubble"].fillna(0) > 0).any():
            notes.append("Bubble is zero on every rank although the run is pipelined: step_trace_time.csv counts only "
                         "hcom_receive operators as bubble. Pipeline exchanges done with batchSendRecv or send/recv "
                         "pairs appear as communication not overlapped instead (see the pp operators on the "
                         "communication page).")
        per_rank["computing_only"] = per_rank["computing"] - per_rank["overlapped"]
        per_rank["comm_share"] = per_rank["communication_not_overlapped"] / per_rank["total"]
    else:
        denom = per_rank["computation"] + per_rank["communication_alone"]
        per_rank["comm_share"] = per_rank["communication_alone"] / denom
    per_rank["pp_stage"] = [run.info.stage_of_rank.get(int(r), 0) for r in per_rank.index]
    per_rank = per_rank.sort_index()
    stages = _stages(run, [int(r) for r in per_rank.index])
    stage_rows = _stage_rows(per_rank, per_step, stages, columns)
    summary, slowest, waiting = _stage_summary(per_rank, stages, view)
    rates = _rates(per_rank, stages, view)
    without = sorted(set(run.rank_ids) - {int(r) for r in per_rank.index})
    return OverlapAnalysis(view=view, columns=tuple(columns), stack=STACKS[view], per_rank=per_rank,
                           per_step=per_step, stage_rows=stage_rows, stage_summary=summary, stages=stages,
                           rates=rates, sources=sources, ranks_without_data=without, checks=checks,
                           slowest_stage=slowest, waiting_stage=waiting, notes=notes, issues=issues)


def _stage_rows(per_rank: pd.DataFrame, per_step: pd.DataFrame, stages: list[StageInfo],
                columns: tuple[str, ...]) -> pd.DataFrame:
    """Per (stage, step): max / mean / min of every column over the stage's ranks; step <NA> = the averages."""
    if len(stages) < 2:
        return pd.DataFrame()
    cols = list(columns)
    stage_of = {r: s.index for s in stages for r in s.ranks}
    ps = per_step.dropna(subset=["step"]).copy()
    ps["pp_stage"] = ps["rank"].map(stage_of)
    out = []
    for stat in ("max", "mean", "min"):
        g = ps.groupby(["pp_stage", "step"])[cols].agg(stat).reset_index()
        g["stat"] = stat
        out.append(g)
        avg = per_rank[[*cols, "pp_stage"]].groupby("pp_stage")[cols].agg(stat).reset_index()
        avg["step"] = pd.NA
        avg["stat"] = stat
        out.append(avg)
    df = pd.concat(out, ignore_index=True)
    df["step"] = df["step"].astype("Int64")
    return df[["pp_stage", "step", "stat", *cols]]


def _stage_summary(per_rank: pd.DataFrame, stages: list[StageInfo], view: str):
    if len(stages) < 2:
        return [], None, None
    comp = "computing" if view == "modern" else "computation"
    wait = "bubble" if view == "modern" else ("receive_alone" if view == "pipeline" else None)
    coll = ("communication_not_overlapped_exclude_receive" if view == "modern"
            else "collective_alone" if view == "pipeline" else "communication_alone")
    rows = []
    for s in stages:
        sel = per_rank.loc[[r for r in s.ranks if r in per_rank.index]]
        rec = {"stage": s.index, "label": s.label, "ranks": s.ranks, "n_ranks": len(s.ranks),
               "compute_ms": float(sel[comp].mean()), "compute_max_ms": float(sel[comp].max()),
               "wait_ms": float(sel[wait].mean()) if wait else math.nan,
               "collective_ms": float(sel[coll].mean()),
               "step_ms": float(sel["total"].mean() if view == "modern"
                                else (sel["computation"] + sel["communication_alone"]).mean()),
               "spread": float((sel[comp].max() - sel[comp].min()) / sel[comp].mean()) if sel[comp].mean() else 0.0}
        rows.append(rec)
    comps = [r["compute_ms"] for r in rows]
    mean_c = float(np.nanmean(comps)) if not all(math.isnan(c) for c in comps) else math.nan
    for r in rows:
        r["compute_vs_mean"] = r["compute_ms"] / mean_c - 1 if mean_c else 0.0
    slowest = None
    if not math.isnan(mean_c):
        top = rows[int(np.nanargmax(comps))]
        slowest = top["stage"] if top["compute_vs_mean"] > STAGE_SLOW_MIN else None
    waiting = None
    if wait:
        waits = [r["wait_ms"] / r["step_ms"] if r["step_ms"] else math.nan for r in rows]
        if not all(math.isnan(w) for w in waits) and np.nanmax(waits) > STAGE_WAIT_MIN:
            waiting = rows[int(np.nanargmax(waits))]["stage"]
    return rows, slowest, waiting


def _rates(per_rank: pd.DataFrame, stages: list[StageInfo], view: str) -> dict[str, object]:
    """ParallelProposer's rates (legacy) or their step_trace_time equivalents (modern), from the averages."""
    if view == "modern":
        total = float(per_rank["total"].sum())
        if not total:
            return {}
        within = {s.index: float(per_rank.loc[[r for r in s.ranks if r in per_rank.index],
                                              "communication_not_overlapped_exclude_receive"].sum()
                                 / per_rank.loc[[r for r in s.ranks if r in per_rank.index], "total"].sum())
                  for s in stages}
        return {"communication_rate": float(per_rank["communication_not_overlapped"].sum()) / total,
                "between_stage_rate": float(per_rank["bubble"].sum()) / total if len(stages) > 1 else None,
                "within_stage_rate": within if len(stages) > 1 else {},
                "definition": N_("sums over ranks of the averaged step: communication not overlapped / step time; "
                                 "bubble / step time; per stage, communication not overlapped excluding receive / "
                                 "step time")}
    denom = float((per_rank["computation"] + per_rank["communication_alone"]).sum())
    if not denom:
        return {}
    out: dict[str, object] = {"communication_rate": float(per_rank["communication_alone"].sum()) / denom,
                              "definition": N_("MindInsight ParallelProposer: Σ pure communication / Σ (computation "
                                               "+ pure communication); Σ pure receive / the same; per stage Σ pure "
                                               "collective / Σ (computation + pure communication) of its ranks")}
    if view == "pipeline":
        out["between_stage_rate"] = float(per_rank["receive_alone"].sum()) / denom
        within = {}
        for s in stages:
            sel = per_rank.loc[[r for r in s.ranks if r in per_rank.index]]
            d = float((sel["computation"] + sel["communication_alone"]).sum())
            within[s.index] = float(sel["collective_alone"].sum()) / d if d else math.nan
        out["within_stage_rate"] = within
    return out


def _communication_share(comm_per_rank: Optional[pd.DataFrame], step_avg: Optional[pd.DataFrame]) -> pd.DataFrame:
    """Data-parallel runs without overlap files: communication time / step time per rank (overlap unknown)."""
    if comm_per_rank is None or comm_per_rank.empty or step_avg is None or "total" not in step_avg.columns:
        return pd.DataFrame()
    j = comm_per_rank[["communication_ms", "wait_ms"]].join(step_avg[["total"]], how="inner")
    j["share"] = j["communication_ms"] / j["total"]
    return j
