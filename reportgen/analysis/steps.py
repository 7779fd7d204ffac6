"""Cluster step trace: per-rank averages, per-step values, cluster statistics and outlier ranks."""

from __future__ import annotations

from reportgen.dataquality import dq
from reportgen.i18n import N_, lazy

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import pandas as pd

from reportgen.analysis.stats import robust_outliers
from reportgen.fmt import rank_list
from reportgen.model import PHASES_BY_KIND, STACKED_PHASES, DataIssue, Run

# Highlighting thresholds (the performance helper has its own, configurable ones).


@dataclass(frozen=True)
class PhaseStats:
    median: float
    mad: float
    mean: float
    min: float
    max: float
    min_rank: int
    max_rank: int


@dataclass
class StepAnalysis:
    kind: Optional[str]
    phases: tuple[str, ...]
    stacked: tuple[str, ...]
    average: pd.DataFrame  # index rank; columns: phases..., n_steps, rule
    per_step: pd.DataFrame  # columns: rank, step, phases...
    steps: list[int]
    ranks_with_data: list[int]
    ranks_without_data: list[int]
    stats: dict[str, PhaseStats] = field(default_factory=dict)
    rules_used: dict[str, Any] = field(default_factory=dict)  # rule -> explanation (an i18n.Msg)
    host_summary: list[dict] = field(default_factory=list)
    issues: list[DataIssue] = field(default_factory=list)


def _rank_average(trace, phases: tuple[str, ...]) -> tuple[dict[str, float], str, int]:
    n = len(trace.steps)
    if trace.stored_average:
        return {p: trace.stored_average.get(p, math.nan) for p in phases}, "stored", n
    if n == 0:
        return {p: math.nan for p in phases}, "none", 0
    means = trace.steps[list(phases)].mean(axis=0, skipna=True)
    return {p: float(means[p]) for p in phases}, "mean", n


def analyze_steps(run: Run) -> StepAnalysis:
    traces = {r: d.step_trace for r, d in run.ranks.items() if d.step_trace is not None}
    without = sorted(r for r in run.ranks if r not in traces)
    issues: list[DataIssue] = []
    if not traces:
        empty = pd.DataFrame(columns=["rank", "step"])
        return StepAnalysis(kind=None, phases=(), stacked=(), average=pd.DataFrame(), per_step=empty, steps=[],
                            ranks_with_data=[], ranks_without_data=without)
    kinds = Counter(t.kind for t in traces.values())
    kind = kinds.most_common(1)[0][0]
    phases = PHASES_BY_KIND[kind]
    if len(kinds) > 1:
        other = sorted(r for r, t in traces.items() if t.kind != kind)
        issues.append(DataIssue("", dq("analysis.mixed-step-trace-kinds", rank_list=rank_list(other)), "warning"))

    rules: set = set()
    ranks = sorted(traces)
    # every rank's steps one under the other (stacked once, then the columns picked: per-rank reindexing and
    # concatenation cost a millisecond a rank)
    per_step = pd.concat([traces[r].steps for r in ranks], ignore_index=True).reindex(columns=["step", *phases])
    per_step.insert(0, "rank", np.repeat(np.array(ranks, dtype=np.int64), [len(traces[r].steps) for r in ranks]))
    # Mean over the recorded steps for every rank at once; stored averages replace it where present.
    means = per_step.groupby("rank")[list(phases)].mean()
    counts = per_step.groupby("rank").size()
    # (each rank's means as a dict, all at once: a `.loc` row a rank costs ~50 µs)
    mean_of, count_of = means.to_dict("index"), counts.to_dict()
    rows = []
    for r in sorted(traces):
        t = traces[r]
        if t.stored_average or t.kind != kind:
            use = phases if t.kind == kind else ("total",)
            avg, rule, n = _rank_average(t, use)
        else:
            avg, rule, n = mean_of[r], "mean", int(count_of.get(r, 0))
        rules.add(rule)
        rows.append({"rank": r, **{p: avg.get(p, math.nan) for p in phases}, "n_steps": n, "rule": rule})
    average = pd.DataFrame(rows).set_index("rank")
    steps = sorted(int(s) for s in per_step["step"].dropna().unique())

    stats = {}
    for p in phases:
        col = average[p].dropna()
        if col.empty:
            continue
        med = float(col.median())
        stats[p] = PhaseStats(median=med, mad=float((col - med).abs().median()), mean=float(col.mean()),
                              min=float(col.min()), max=float(col.max()),
                              min_rank=int(col.idxmin()), max_rank=int(col.idxmax()))

    rules_used = {}
    # the loaders' notes on where a stored average comes from (shown inside the message above)
    _notes = (N_("the profiler's own average row ('-')"), N_("the profiler's average row (last line, labelled '0')"))
    if "stored" in rules:
        note = next((t.stored_average_note for t in traces.values() if t.stored_average), "")
        rules_used["stored"] = lazy("average stored by the profiler ({note}); MindSpore Insight shows this value. "
                                   "Most MindSpore versions leave step 1 out of it.", note=lazy(note) if note else "")
    if "mean" in rules:
        rules_used["mean"] = lazy("mean over the recorded steps (the profiler stored no average)")
    return StepAnalysis(kind=kind, phases=phases, stacked=STACKED_PHASES[kind], average=average,
                        per_step=per_step, steps=steps, ranks_with_data=sorted(traces),
                        ranks_without_data=without, stats=stats, rules_used=rules_used,
                        host_summary=_host_summary(run, average), issues=issues)


def _host_summary(run: Run, average: pd.DataFrame) -> list[dict]:
    hosts: dict[str, list[float]] = {}
    for r, total in zip(average.index.tolist(), average["total"].tolist()):  # (not `.at` a rank: ~0.2 ms each)
        h = run.ranks[r].info.host
        if h:
            hosts.setdefault(h, []).append(float(total))
    if len(hosts) < 2:
        return []
    out = [{"host": h, "ranks": len(v), "mean_total_ms": float(np.nanmean(v)), "max_total_ms": float(np.nanmax(v))}
           for h, v in sorted(hosts.items())]
    slow = set(robust_outliers(pd.Series({d["host"]: d["mean_total_ms"] for d in out})))
    for d in out:
        d["slow"] = d["host"] in slow
    return out


def step_values(per_step: pd.DataFrame, step: int, phases: tuple[str, ...]) -> pd.DataFrame:
    """Per-rank values of one step (mean when a rank has several rows for it)."""
    sel = per_step[per_step["step"] == step]
    return sel.groupby("rank")[list(phases)].mean()


