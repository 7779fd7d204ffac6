"""Plan the overlap / parallel-layout page and the overlap section of rank pages (plain data only)."""

from __future__ import annotations

from reportgen.i18n import N_, _, text

from dataclasses import field
from typing import Any, Optional

import pandas as pd

from reportgen import urls
from reportgen.analysis import Analysis
from reportgen.analysis.overlap import CHECK_TOLERANCE, COLUMN_LABELS
from reportgen.charts import Chart
from reportgen.charts import overlap as overlap_charts
from reportgen.charts import steps as step_charts
from reportgen.charts.steps import MAX_BARS
from reportgen.rules import highlights
from reportgen.site.views import steps as step_views
from reportgen.rules.highlights import Highlights
from reportgen.site.plan.page import Page, PageContext, PageKind, PlanInput, view
from reportgen.site.views.values import num, representative_ranks, stacked_bar_rows

VIEW_LABELS = {
    "pipeline": N_("Pipeline-parallel view (MindInsight): step interval, computation, pure communication, stage time, "
                "pure receive, pure collective communication"),
    "model": N_("Model-parallel view (MindInsight): step interval, computation, pure communication"),
    "modern": N_("Step time breakdown from step_trace_time.csv: computing, communication not overlapped, "
              "overlapped, free, bubble, preparing"),
    "none": N_("No overlap data"),
}
SOURCE_LABELS = {
    "cluster_analyse": N_("the profiler's ascend_cluster_analyse_{mode}_{stages}_{size}_{rank}.csv files"),
    "timeline": N_("recomputed from output_timeline_data_{rank}.txt and the step trace's communication columns "
                "with MindSpore's algorithm"),
    "msprof_timeline": N_("the Overlap Analysis lanes of msprof's per-iteration msprof_*.json timelines"),
    "step_trace_time": N_("step_trace_time.csv (or the same sums from trace_view.json's Overlap Analysis lanes)"),
}
COLUMN_HELP = {
    "iteration_interval": N_("time between the end of the previous step and the start of this step's forward pass "
                          "(data waiting)"),
    "computation": N_("step time minus pure communication"),
    "communication_alone": N_("communication while no computation runs"),
    "stage": N_("step time minus pure receive: the time the stage itself works"),
    "receive_alone": N_("only a point-to-point Receive runs (waiting for the previous stage: the bubble)"),
    "collective_alone": N_("pure communication excluding Receive"),
    "free": N_("neither computation nor communication runs"),
    "computing": N_("union of compute-task time"),
    "communication_not_overlapped": N_("communication while no computation runs"),
    "overlapped": N_("communication hidden under computation"),
    "communication": N_("union of communication-operator time"),
    "bubble": N_("receive (hcom_receive) time: the pipeline bubble"),
    "communication_not_overlapped_exclude_receive": N_("communication not overlapped, receive excluded"),
    "preparing": N_("host time before the device starts the step"),
    "total": N_("stage + bubble"),
}



def _rank_columns(a: Analysis) -> list[dict]:
    o = a.overlap
    cols = [{"key": "rank", "label": N_("Rank"), "fmt": "rank"}, {"key": "host", "label": N_("Host"), "fmt": "text"},
            {"key": "pp_stage", "label": N_("Stage"), "fmt": "int"}]
    if a.run.info.parallel_index:
        cols += [{"key": k + "_index", "label": _("{axis} index").format(axis=k.upper()), "fmt": "int"}
                 for k in ("dp", "pp", "tp", "cp") if k in a.run.info.parallel_sizes
                 and (k != "cp" or a.run.info.parallel_sizes.get("cp", 1) > 1)]
    for c in o.columns:
        cols.append({"key": c, "label": f"{COLUMN_LABELS[c]} (ms)", "fmt": "ms", "help": COLUMN_HELP.get(c, "")})
    cols.append({"key": "comm_share", "label": N_("Pure comm. share"), "fmt": "ratio",
                 "help": N_("pure communication / step") if o.view == "modern"
                 else N_("pure communication / (computation + pure communication)")})
    return cols


def rank_rows(a: Analysis, hl: Highlights) -> list[dict]:
    o = a.overlap
    pr = o.per_rank.to_dict("index")
    rows = []
    for r in a.run.rank_ids:
        info = a.run.ranks[r].info
        rec = pr.get(r)
        row = {"rank": r, "host": info.host or "", "href": urls.rank_page(r), "has_data": rec is not None,
               "pp_stage": a.run.info.stage_of_rank.get(r, 0)}
        for k, v in a.run.info.parallel_index.get(r, {}).items():
            row[k + "_index"] = v
        if rec:
            for c in (*o.columns, "comm_share"):
                row[c] = num(rec.get(c))
            row["hot"] = [COLUMN_LABELS[c] for c in o.columns if c in COLUMN_LABELS and hl.is_hot(r, c)]
            row["waiting"] = r in hl.waiting
        rows.append(row)
    return rows


def _stage_table(a: Analysis) -> tuple[list[dict], list[dict]]:
    """Stage rows of the averaged step (msprof-analyze: max over the stage's ranks) plus mean and spread."""
    o = a.overlap
    if o.stage_rows.empty:
        return [], []
    avg = o.stage_rows[o.stage_rows["step"].isna()]
    mx = avg[avg["stat"] == "max"].set_index("pp_stage")
    mean = avg[avg["stat"] == "mean"].set_index("pp_stage")
    mn = avg[avg["stat"] == "min"].set_index("pp_stage")
    comp = o.compute_col
    summary = {s["stage"]: s for s in o.stage_summary}
    rows = []
    for st in o.stages:
        if st.index not in mx.index:
            continue
        m = mean.loc[st.index, comp]
        spread = (mx.loc[st.index, comp] - mn.loc[st.index, comp]) / m if m else None
        rows.append({"stage": st.index, "label": stage_label(st), "n_ranks": len(st.ranks),
                     "values": {c: num(mx.loc[st.index, c]) for c in o.columns},
                     "mean_compute": num(m), "spread": num(spread),
                     "compute_vs_mean": num(summary.get(st.index, {}).get("compute_vs_mean")),
                     "slowest": st.index == o.slowest_stage, "waits": st.index == o.waiting_stage})
    cols = [{"key": c, "label": f"{COLUMN_LABELS[c]} (ms)"} for c in o.columns]
    return rows, cols


def stage_label(s) -> str:
    """`StageInfo.label` ("stage 1 (8, 9, …)") in the report language."""
    rs = ", ".join(str(r) for r in s.ranks[:8]) + ("…" if len(s.ranks) > 8 else "")
    return _("stage {stage} ({ranks})").format(stage=s.index, ranks=rs)


def _rates(a: Analysis) -> list[dict]:
    r = a.overlap.rates
    if not r:
        return []
    out = [{"label": N_("Communication share (cluster)"), "value": r.get("communication_rate"),
            "help": N_("MindInsight flags above 10 % (data/model-parallel communication rate)")}]
    if r.get("between_stage_rate") is not None:
        out.append({"label": N_("Between stages (receive / bubble share)"), "value": r["between_stage_rate"],
                    "help": N_("MindInsight flags above 10 %")})
    for s, v in (r.get("within_stage_rate") or {}).items():
        out.append({"label": _("Within stage {stage} (collective-only share)").format(stage=s), "value": v,
                    "help": N_("MindInsight flags the stage with the highest rate above 10 %")})
    return out


def _strip_row(x: dict, flagged: set) -> dict:
    return {"rank": x["rank"], "value": x["share"], "stage": x["stage"], "href": x["href"],
            "status": "slow" if x["rank"] in flagged else "normal"}


def _share_by_step(o) -> dict[int, pd.Series]:
    """Each step's communication share per rank, as `analysis.overlap` builds the average's."""
    ps = o.per_step.dropna(subset=["step"])
    if o.view == "modern" and {"communication_not_overlapped", "total"} <= set(ps):
        share = ps["communication_not_overlapped"] / ps["total"].where(ps["total"] > 0)
    elif o.view != "modern" and {"computation", "communication_alone"} <= set(ps):
        denom = ps["computation"] + ps["communication_alone"]
        share = ps["communication_alone"] / denom.where(denom > 0)
    else:
        return {}
    frame = ps[["rank", "step"]].assign(share=share)
    return {int(s): g.groupby("rank")["share"].mean() for s, g in frame.groupby("step")}


def _stage_cols(view: str) -> list[str]:
    """The stage summary's metrics as `analysis.overlap` columns (compute, collective, wait)."""
    comp = "computing" if view == "modern" else "computation"
    coll = ("communication_not_overlapped_exclude_receive" if view == "modern"
            else "collective_alone" if view == "pipeline" else "communication_alone")
    wait = "bubble" if view == "modern" else "receive_alone"
    return [comp, coll] + ([wait] if view != "model" else [])


def _charts(a: Analysis, hl: Highlights) -> list[Chart]:
    o = a.overlap
    stage_name = _("stage {stage}")  # chart legends
    charts: list[Chart] = []
    labels = [COLUMN_LABELS[c] for c in o.stack]
    basis = o.per_rank[list(o.stack)].sum(axis=1) if len(o.per_rank) else None
    picked = (representative_ranks(basis, a.run.info.stage_of_rank, hl.slow_ranks | hl.waits_least, MAX_BARS)
              if basis is not None else None)
    rows, x_title = stacked_bar_rows(o.per_rank, o.stack, labels, MAX_BARS, picked)
    if rows:
        cap = (N_("Where each rank's step goes: computation, pure collective communication and pure receive "
                  "(the bubble).") if o.view == "pipeline" else
               N_("Where each rank's step goes: computation and pure communication.") if o.view == "model" else
               N_("Where each rank's step goes: computing alone, communication hidden under computing, "
                  "communication not overlapped (receive excluded), bubble and free time."))
        stack = Chart("overlap-stack", step_charts.breakdown_by_rank(rows, labels, x_title), cap)
        ps = o.per_step.dropna(subset=["step"])
        if "computing_only" in o.stack and "computing_only" not in ps and {"computing", "overlapped"} <= set(ps):
            ps = ps.assign(computing_only=ps["computing"] - ps["overlapped"])  # as analysis.overlap's per_rank
        have = [c for c in o.stack if c in ps]
        by_step = ({int(s): g.groupby("rank")[have].mean() for s, g in ps.groupby("step")}
                   if len(have) == len(o.stack) else {})  # a step view missing a part of the bar would mislead
        step_views.attach(stack, sorted(by_step), lambda s: {"breakdown": stacked_bar_rows(
            by_step[s], o.stack, labels, MAX_BARS, picked)[0]},
            axis_title=(_("Time per step (ms)"), _("Step {n}: time (ms)")))
        charts.append(stack)
    stage_of = {int(r): int(v) for r, v in o.per_rank["pp_stage"].items()}
    flagged = hl.slow_ranks | hl.waits_least

    def share_rows(shares: pd.Series) -> list[dict]:
        return [{"rank": int(r), "share": round(float(v), 6), "stage": stage_name.format(stage=stage_of.get(int(r), 0)),
                 "href": urls.rank_page(int(r))} for r, v in shares.dropna().items()]

    share = share_rows(o.per_rank["comm_share"])
    if share:
        bars = len(share) <= MAX_BARS
        if bars:
            chart = Chart("overlap-share", overlap_charts.comm_share_by_rank(share),
                          N_("Share of the step spent in communication that computation does not hide, per rank "
                             "(colour: pipeline stage). Click a bar to open the rank."))
        else:
            chart = Chart("overlap-share", step_charts.rank_strip(
                [_strip_row(x, flagged) for x in share], _("Pure communication / step"), ".1%"),
                _("Share of the step in communication that computation does not hide, each of the {n} ranks a tick "
                  "on its stage's line; black: the stage median; red and numbered: ranks a finding names (a culprit "
                  "shows a low share: the others wait for it).").format(n=len(share)))
        by_step_share = _share_by_step(o)
        step_views.attach(chart, sorted(by_step_share), lambda s: {"share" if bars else "ranks": [
            x if bars else _strip_row(x, flagged) for x in share_rows(by_step_share[s])]}, join="rank",
            axis_title=(_("Pure communication / step"), _("Pure communication / step {n}")))
        charts.append(chart)
    if o.stage_summary:
        wait_label = "Bubble" if o.view == "modern" else "Pure receive"
        coll_label = ("Comm. not overlapped (excl. receive)" if o.view == "modern" else
                      "Pure collective" if o.view == "pipeline" else "Pure communication")
        comp_label = "Computing" if o.view == "modern" else "Computation"
        metrics = [comp_label, coll_label] + ([wait_label] if o.view != "model" else [])
        srows = []
        for s in o.stage_summary:
            vals = [s["compute_ms"], s["collective_ms"]] + ([s["wait_ms"]] if o.view != "model" else [])
            for i, (m, v) in enumerate(zip(metrics, vals)):
                note = ""
                if i == 0 and s["stage"] == o.slowest_stage:
                    note = "slowest"
                if i == 2 and s["stage"] == o.waiting_stage:
                    note = "waits most"
                if num(v) is not None:
                    srows.append({"stage": stage_name.format(stage=s["stage"]), "metric": m, "value": round(float(v), 4),
                                  "note": note, "ranks": ", ".join(str(r) for r in s["ranks"][:16])})
        stages_chart = Chart("overlap-stages", overlap_charts.stage_summary(srows, metrics),
                             N_("Per pipeline stage, the mean over its ranks. The stage that computes longest sets "
                                "the pace; the others wait for it in Receive (the bubble)."))
        sr = o.stage_rows
        means = sr[(sr["stat"] == "mean") & sr["step"].notna()] if len(sr) else sr
        cols = _stage_cols(o.view)
        if len(means) and all(c in means for c in cols):
            def stage_step_rows(step: int) -> dict[str, list[dict]]:
                out = []
                for rec in means[means["step"] == step].sort_values("pp_stage").to_dict("records"):
                    for m, c in zip(metrics, cols):
                        if num(rec[c]) is not None:
                            out.append({"stage": stage_name.format(stage=int(rec["pp_stage"])), "metric": m,
                                        "value": round(float(rec[c]), 4), "note": "", "ranks": ""})
                return {"stages": out}
            step_views.attach(stages_chart, sorted(int(x) for x in means["step"].unique()), stage_step_rows,
                              axis_title=(_("Mean per rank, per step (ms)"), _("Mean per rank in step {n} (ms)")))
        charts.append(stages_chart)
        sr = o.stage_rows
        per_step = sr[(sr["stat"] == "max") & sr["step"].notna()]
        if per_step["step"].nunique() > 1:
            comp = o.compute_col
            lines = [{"step": int(s), "stage": stage_name.format(stage=int(st)), "value": round(float(v), 4)}
                     for s, st, v in zip(per_step["step"], per_step["pp_stage"], per_step[comp]) if num(v) is not None]
            charts.append(Chart("overlap-stage-steps", overlap_charts.stage_steps(
                lines, f"{COLUMN_LABELS[comp]}, stage max (ms)"),
                N_("Each stage's computation per step (the maximum over its ranks, as msprof-analyze's stage rows).")))
    return charts


def _csv(a: Analysis, cols: list[dict], rows: list[dict]) -> list[tuple[str, list[dict], list[dict]]]:
    o = a.overlap
    out = [(urls.OVERLAP_RANKS_CSV, [c for c in cols if c["key"] != "host"] + [{"key": "host", "label": N_("Host")}],
            [r for r in rows if r["has_data"]])]
    if not o.stage_rows.empty:
        sr = o.stage_rows
        scols = [{"key": "pp_stage", "label": N_("Stage")}, {"key": "step", "label": N_("Step")},
                 {"key": "stat", "label": N_("Over the stage's ranks")}] + [
            {"key": c, "label": f"{COLUMN_LABELS[c]} (ms)"} for c in o.columns]
        srows = []
        for rec in sr.to_dict("records"):
            rec["step"] = "average" if pd.isna(rec["step"]) else int(rec["step"])
            srows.append({k: (num(v) if k in o.columns else v) for k, v in rec.items()})
        out.append((urls.OVERLAP_STAGES_CSV, scols, srows))
    return out


@view
class OverlapContext(PageContext):
    has_data: bool
    view: str
    view_label: str
    mode: str
    mode_source: str
    n_stages: int
    stage_source: str
    stages: list[dict]
    sizes: dict[str, int]
    sources: list[str]
    notes: list[str]
    without: list[int]
    tolerance: float
    checks: list[dict]
    dp_rows: list[dict] = field(default_factory=list)  # without overlap data: the data-parallel share per rank
    columns: list[dict] = field(default_factory=list)
    rows: list[dict] = field(default_factory=list)
    stage_rows: list[dict] = field(default_factory=list)
    stage_columns: list[dict] = field(default_factory=list)
    rates: list[dict] = field(default_factory=list)
    slowest_stage: Optional[int] = None
    waiting_stage: Optional[int] = None
    multi_stage: bool = False
    averaging: str = ""


def plan_overlap_context(a: Analysis, hl: Highlights) -> tuple[dict, list[Chart], list]:
    o, info = a.overlap, a.run.info
    ctx: dict[str, Any] = {
        "has_data": o.has_data, "view": o.view, "view_label": VIEW_LABELS[o.view],
        "mode": info.parallel_mode, "mode_source": text(info.parallel_mode_source), "n_stages": info.stages,
        "stage_source": text(info.stage_source), "stages": [{"index": s.index, "label": stage_label(s)} for s in o.stages],
        "sizes": info.parallel_sizes, "sources": [SOURCE_LABELS.get(s, s) for s in o.sources],
        "notes": [text(n) for n in o.notes], "without": o.ranks_without_data, "tolerance": CHECK_TOLERANCE,
        "checks": list(o.checks),
    }
    if not o.has_data:
        ctx["dp_rows"] = [{"rank": int(r), "href": urls.rank_page(int(r)), "total": num(v["total"]),
                           "communication_ms": num(v["communication_ms"]), "wait_ms": num(v["wait_ms"]),
                           "share": num(v["share"])} for r, v in o.comm_share.to_dict("index").items()]
        return ctx, [], []
    cols = _rank_columns(a)
    rows = rank_rows(a, hl)
    stage_rows, stage_cols = _stage_table(a)
    ctx.update({"columns": cols, "rows": rows, "stage_rows": stage_rows, "stage_columns": stage_cols,
                "rates": _rates(a), "slowest_stage": o.slowest_stage, "waiting_stage": o.waiting_stage,
                "multi_stage": len(o.stages) > 1,
                "averaging": (N_("the profiler's average row (MindInsight shows it)") if "stored" in set(o.per_rank["rule"])
                              else N_("mean over the recorded steps"))})
    return ctx, _charts(a, hl), _csv(a, cols, rows)


def _plan(inp: PlanInput) -> list[Page]:
    ctx, charts, csv = plan_overlap_context(inp.analysis, highlights.of(inp))
    return [Page(urls.OVERLAP, N_("Overlap and parallel layout"), PAGE.partial, OverlapContext(**inp.common, **ctx),
                 charts=charts,
                 downloads=csv)]


PAGE = PageKind("overlap", urls.OVERLAP, N_("Overlap & stages"), "_overlap.html", _plan)
