"""Phase 1 of the site build: plan every page (paths, titles, plain-data contexts, chart specs). No I/O."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any, Optional

import pandas as pd

from reportgen import __version__
from reportgen.analysis import Analysis
from reportgen.analysis.steps import heatmap_cells, step_values
from reportgen.charts import Chart, steps as step_charts
from reportgen.model import PHASE_LABELS, STEP_TRACE_KIND_LABELS
from reportgen.site import comm_pages, execution_pages, finding_pages, overlap_pages, resource_pages
from reportgen.site.values import compact_ranks, fmt_list, num, stacked_bar_rows

INDEX = "index.html"
STEP_TRACE = "cluster/step-trace.html"
COMMUNICATION = comm_pages.COMMUNICATION
OVERLAP = overlap_pages.OVERLAP
RESOURCES = resource_pages.RESOURCES
RULES = finding_pages.RULES_PAGE
STRATEGY = execution_pages.STRATEGY
EXECUTION = execution_pages.EXECUTION
MAX_STEP_JSON_CELLS = 400_000  # per-step selection data embedded in the step-trace page


def rank_page(rank: int) -> str:
    return f"ranks/rank-{rank}.html"


@dataclass
class Page:
    path: str
    title: str
    template: str
    context: dict[str, Any]
    charts: list[Chart] = field(default_factory=list)
    nav: str = ""
    downloads: list[tuple[str, list[dict], list[dict]]] = field(default_factory=list)  # CSV files: path, cols, rows


@dataclass
class SitePlan:
    pages: list[Page]
    title: str
    nav: list[tuple[str, str]]  # (path, label)
    rank_sections: list[dict]  # for the single-file compact rank section
    exports: list = field(default_factory=list)  # resource_pages.TraceExport: trace files copied into the site



def run_facts(a: Analysis) -> list[tuple[str, str]]:
    run, st = a.run, a.steps
    infos = [run.ranks[r].info for r in run.rank_ids]
    hosts = sorted({i.host for i in infos if i.host})
    versions: dict[str, set[str]] = {}
    for i in infos:
        for k, v in i.versions.items():
            versions.setdefault(k, set()).add(v)
    frameworks = sorted({i.framework for i in infos if i.framework})
    levels = sorted({i.profiler_level for i in infos if i.profiler_level})
    facts = [
        ("Run folder", run.info.path),
        ("Layout", run.info.layout_label),
        ("Ranks", f"{len(run.rank_ids)} ({compact_ranks(run.rank_ids)})"),
    ]
    if run.info.rank_size and run.info.rank_size != len(run.rank_ids):
        facts.append(("Ranks in the job", f"{run.info.rank_size} (only {len(run.rank_ids)} profiled or collected)"))
    if hosts:
        facts.append(("Hosts", f"{len(hosts)} ({fmt_list(hosts, 8)})"))
    facts.append(("Steps", f"{len(st.steps)} ({compact_ranks(st.steps)})" if st.steps else "no step ids"))
    facts.append(("Parallel mode", f"{run.info.parallel_mode} (from {run.info.parallel_mode_source})"))
    facts.append(("Pipeline stages", str(run.info.stages)))
    if frameworks:
        facts.append(("Framework", ", ".join(frameworks)))
    for k, vs in sorted(versions.items()):
        facts.append((f"{k} version", ", ".join(sorted(vs))))
    if levels:
        facts.append(("Profiler level", ", ".join(levels)))
    facts.append(("Step trace", STEP_TRACE_KIND_LABELS[st.kind] if st.kind else "none found"))
    return facts


class _Rows:
    """Builds table rows for ranks; the per-analysis lookups are prepared once (runs have thousands of ranks)."""

    def __init__(self, a: Analysis) -> None:
        self.a = a
        self.avg = a.steps.average.to_dict("index") if a.steps.kind else {}
        self.outliers = {p: set(rs) for p, rs in a.steps.outliers.items()}
        self.slow = set(a.steps.slow_ranks)
        self._base: dict[int, dict] = {}

    def base(self, r: int) -> dict:
        if r not in self._base:
            info = self.a.run.ranks[r].info
            self._base[r] = {
                "rank": r, "host": info.host or "", "device": "" if info.device is None else info.device,
                "pp_stage": self.a.run.info.stage_of_rank.get(r, ""), "href": rank_page(r),
                "slow_phases": [PHASE_LABELS[p] for p, rs in self.outliers.items() if r in rs],
                "slow": r in self.slow,
            }
        return self._base[r]

    def average(self, r: int) -> dict:
        row = dict(self.base(r))
        avg = self.avg.get(r)
        if avg is not None:
            for p in self.a.steps.phases:
                row[p] = num(avg[p])
            row["n_steps"] = int(avg["n_steps"])
            row["rule"] = avg["rule"]
        return row



def _columns(a: Analysis) -> list[dict]:
    cols = [{"key": "rank", "label": "Rank", "fmt": "rank"}, {"key": "host", "label": "Host", "fmt": "text"},
            {"key": "device", "label": "Device", "fmt": "int"}]
    if a.run.info.stages > 1:
        cols.append({"key": "pp_stage", "label": "PP stage", "fmt": "int"})
    for p in a.steps.phases:
        cols.append({"key": p, "label": f"{PHASE_LABELS[p]} (ms)", "fmt": "ms"})
    return cols


def _cluster_charts(a: Analysis) -> list[Chart]:
    st = a.steps
    if st.kind is None or "total" not in st.stats:
        return []
    median = st.stats["total"].median
    rows = [{"rank": int(r), "total": round(float(v), 4), "status": "slow" if r in st.slow_ranks else "normal",
             "stage": a.run.info.stage_of_rank.get(int(r), "-"), "href": "../" + rank_page(int(r))}
            for r, v in st.average["total"].dropna().items()]
    charts = []
    if len(rows) <= step_charts.MAX_BARS:
        charts.append(Chart("step-total", step_charts.step_total_by_rank(rows, median),
                            "Average step time per rank; dashed line: cluster median; red: ranks far above it. "
                            "Click a bar to open the rank's page."))
    else:
        charts.append(Chart("step-total", step_charts.step_total_histogram(rows, median),
                            f"Distribution of the average step time over {len(rows)} ranks; dashed line: median; "
                            "red: ranks far above it (listed in the table)."))
    brows, x_title = stacked_bar_rows(st.average, st.stacked, [PHASE_LABELS[p] for p in st.stacked],
                                      step_charts.MAX_BARS)
    if brows and st.kind != "host":
        charts.append(Chart("breakdown", step_charts.breakdown_by_rank(
            brows, [PHASE_LABELS[p] for p in st.stacked], x_title),
            "Where each rank's step time goes (average per step)."))
    return charts


def _heatmap_chart(a: Analysis) -> Optional[Chart]:
    st = a.steps
    if len(st.steps) < 2:
        return None
    hm = heatmap_cells(st.per_step)
    if not hm["cells"]:
        return None
    return Chart("heatmap", step_charts.rank_step_heatmap(hm["cells"], hm["rank_bin"], hm["step_bin"]),
                 "Step time of every rank in every step: a slow rank is a horizontal band, a slow step a vertical "
                 "one.", renderer="canvas" if len(hm["cells"]) > 4000 else "svg")


def _step_json(a: Analysis, cols: list[dict], maker: _Rows) -> Optional[dict]:
    st = a.steps
    if not st.steps or len(st.steps) * max(1, len(st.ranks_with_data)) * len(st.phases) > MAX_STEP_JSON_CELLS:
        return None
    keep = [c["key"] for c in cols] + ["slow"]
    data: dict[str, list] = {}
    for s in st.steps:
        vals = step_values(st.per_step, s, st.phases)
        rows = []
        for r, rec in zip(vals.index, vals.to_dict("records")):
            base = {k: v for k, v in maker.base(int(r)).items() if k in keep or k == "href"}
            base.update({p: num(rec[p]) for p in st.phases})
            rows.append(base)
        data[str(s)] = rows
    return {"columns": cols, "steps": data}


def _stats_rows(a: Analysis) -> list[dict]:
    out = []
    for p in a.steps.phases:
        s = a.steps.stats.get(p)
        if not s:
            continue
        spread = (s.max - s.min) / s.median * 100 if s.median else None
        out.append({"phase": PHASE_LABELS[p], "median": s.median, "min": s.min, "min_rank": s.min_rank,
                    "max": s.max, "max_rank": s.max_rank, "spread_pct": spread,
                    "outliers": a.steps.outliers.get(p, [])})
    return out


def plan_pages(a: Analysis, findings: list[dict], *, thresholds: Optional[dict] = None,
               title: Optional[str] = None) -> SitePlan:
    run, st = a.run, a.steps
    title = title or f"msreport: {posixpath.basename(run.info.path.rstrip('/')) or run.info.path}"
    cols = _columns(a)
    maker = _Rows(a)
    rows = [maker.average(r) for r in run.rank_ids]
    issues = [i.to_dict() for i in a.issues]
    common = {"run_title": title, "version": __version__}
    cluster_charts = _cluster_charts(a)
    hm = _heatmap_chart(a)

    index = Page(INDEX, "Overview", "index.html", {
        **common,
        "facts": run_facts(a),
        **finding_pages.findings_context(findings),
        "issues": issues,
        "has_steps": st.kind is not None,
        "slow_ranks": st.slow_ranks,
        "stats": _stats_rows(a),
        "n_ranks": len(run.rank_ids),
        "rank_links": [{"rank": r, "href": rank_page(r), "slow": r in st.slow_ranks} for r in run.rank_ids],
    }, charts=cluster_charts, nav="overview")

    step_page = Page(STEP_TRACE, "Cluster step trace", "step_trace.html", {
        **common,
        "has_steps": st.kind is not None,
        "kind_label": STEP_TRACE_KIND_LABELS.get(st.kind or "", ""),
        "columns": cols,
        "rows": rows,
        "rules_used": st.rules_used,
        "steps": st.steps,
        "step_json": _step_json(a, cols, maker),
        "stats": _stats_rows(a),
        "hosts": st.host_summary,
        "without": st.ranks_without_data,
    }, charts=[*cluster_charts, *([hm] if hm else [])], nav="step-trace")

    comm_ctx, comm_charts, comm_csv = comm_pages.plan_comm_context(a)
    comm_page = Page(COMMUNICATION, "Cluster communication", "communication.html", {**common, **comm_ctx},
                     charts=comm_charts, nav="communication", downloads=comm_csv)
    ovl_ctx, ovl_charts, ovl_csv = overlap_pages.plan_overlap_context(a)
    ovl_page = Page(OVERLAP, "Overlap and parallel layout", "overlap.html", {**common, **ovl_ctx},
                    charts=ovl_charts, nav="overlap", downloads=ovl_csv)
    res_ctx, res_charts, res_csv = resource_pages.plan_resources_context(a)
    res_page = Page(RESOURCES, "Resource utilisation", "resources.html", {**common, **res_ctx},
                    charts=res_charts, nav="resources", downloads=res_csv)
    rules_page = Page(RULES, "Performance helper rules", "rules.html",
                      {**common, **finding_pages.rules_context(findings, thresholds or {})}, nav="rules")
    st_ctx, st_charts, st_csv = execution_pages.plan_strategy_context(a)
    strategy_page = Page(STRATEGY, "Parallel strategy", "strategy.html", {**common, **st_ctx}, charts=st_charts,
                         nav="strategy", downloads=st_csv)
    exec_pages = [Page(path, title, "execution.html", {**common, **ctx}, charts=charts, nav="execution",
                       downloads=csv) for path, title, ctx, charts, csv in execution_pages.plan_execution_pages(a)]
    pages = [index, step_page, ovl_page, comm_page, *exec_pages, strategy_page, res_page, rules_page]
    by_rank = finding_pages.rank_findings(findings, len(run.rank_ids))
    detail = resource_pages.RankDetail(a)
    by_reporter = comm_pages.links_by_reporter(a)
    overlap_sections = overlap_pages.RankSections(a)
    line_spec = step_charts.rank_step_lines([PHASE_LABELS[p] for p in (*st.stacked, "total")
                                             if st.kind and p in st.phases and (p != "total" or st.kind != "host")]
                                            or ["Step total"]) if st.kind else None
    rank_sections = []
    ids = run.rank_ids
    for n, r in enumerate(ids):
        rp = _plan_rank(a, r, maker, line_spec, common, by_reporter, overlap_sections, detail)
        rp.context["findings"] = by_rank.get(r, [])
        rp.context["prev"] = rank_page(ids[n - 1]) if n > 0 else None
        rp.context["next"] = rank_page(ids[n + 1]) if n + 1 < len(ids) else None
        pages.append(rp)
        rank_sections.append(rp.context)
    nav = [(INDEX, "Overview"), (STEP_TRACE, "Step trace"), (OVERLAP, "Overlap & stages"),
           (COMMUNICATION, "Communication"), (EXECUTION, "Execution"), (STRATEGY, "Strategy"),
           (RESOURCES, "Resources"), (RULES, "Rules")]
    return SitePlan(pages=pages, title=title, nav=nav, rank_sections=rank_sections, exports=detail.exports)


def _plan_rank(a: Analysis, r: int, maker: _Rows, line_spec: Optional[dict], common: dict,
               by_reporter: dict[int, list[int]], overlap_sections: overlap_pages.RankSections,
               detail: resource_pages.RankDetail) -> Page:
    run, st = a.run, a.steps
    data = run.ranks[r]
    info = data.info
    facts = [("Rank", str(r)), ("Source folder", info.source_dir or ".")]
    if info.host:
        facts.append(("Host", info.host))
    if info.device is not None:
        facts.append(("Device", str(info.device)))
    if r in run.info.stage_of_rank:
        facts.append(("Pipeline stage", str(run.info.stage_of_rank[r])))
    if r in run.info.parallel_index:
        facts.append(("Parallel index", ", ".join(f"{k.upper()} {v}" for k, v in run.info.parallel_index[r].items())))
    if info.framework:
        facts.append(("Framework", info.framework))
    for k, v in sorted(info.versions.items()):
        facts.append((f"{k} version", v))
    if info.profiler_level:
        facts.append(("Profiler level", info.profiler_level))
    sections: list[dict] = []
    charts: list[Chart] = []
    trace = data.step_trace
    step_section: dict[str, Any] = {"id": "step-trace", "title": "Step trace", "template": "_rank_steps.html",
                                    "has_data": trace is not None}
    if trace is not None:
        phases = st.phases if trace.kind == st.kind else trace.phases
        step_rows = []
        for rec in trace.steps.to_dict("records"):
            step_rows.append({"step": None if pd.isna(rec["step"]) else int(rec["step"]),
                              **{p: num(rec.get(p)) for p in phases}})
        avg_row = maker.average(r) if r in maker.avg else None
        step_section.update({
            "phases": [{"key": p, "label": f"{PHASE_LABELS[p]} (ms)"} for p in phases],
            "rows": step_rows,
            "average": avg_row,
            "rule": st.rules_used.get(avg_row["rule"], "") if avg_row else "",
            "source": trace.source,
            "cluster_median": {p: st.stats[p].median for p in phases if p in st.stats},
        })
        if line_spec is not None and len(step_rows) >= 1:
            labels = set(line_spec["encoding"]["color"]["scale"]["domain"])
            lines = [{"step": row["step"], "phase": PHASE_LABELS[p], "value": row[p]}
                     for row in step_rows for p in phases
                     if PHASE_LABELS[p] in labels and row["step"] is not None and row[p] is not None]
            if lines:
                spec = dict(line_spec)
                spec["datasets"] = {"steps": lines}
                charts.append(Chart(f"rank-{r}-steps", spec, "This rank's step phases over the recorded steps."))
    sections.append(step_section)
    sections.append(overlap_sections.section(r))
    sections.append(comm_pages.rank_section(a, r, by_reporter))
    sections.extend(detail.sections(r))
    issues = [i.to_dict() for i in data.issues]
    return Page(rank_page(r), f"Rank {r}", "rank.html", {
        **common, "rank": r, "facts": facts, "sections": sections, "issues": issues,
        "slow": r in st.slow_ranks, "files": data.files[:200], "n_files": len(data.files),
        "cluster_link": f"{STEP_TRACE}#rank-{r}",
    }, charts=charts, nav="ranks")

