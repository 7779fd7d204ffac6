"""A rank's page: its facts, one section per aspect (step trace, idle time, overlap, communication, then the
resources' operators, memory, FLOPs, CPU, data pipeline and timeline), its findings and its data quality; and the
compact view of a rank that the single file carries instead of the page.

`RankPages` is built once per report with what every rank page shares (the step rows' maker, the communication,
overlap and resource section builders, the step-lines chart template); `page(n)` plans the n-th rank's page. On a
large run the builder calls it in its forked writers (`SitePlan.lazy_ranks`).
"""

from __future__ import annotations

from typing import Any, Optional

import pandas as pd

from reportgen import urls
from reportgen.analysis import Analysis
from reportgen.charts import Chart
from reportgen.charts import steps as step_charts
from reportgen.i18n import N_, _, text, translate
from reportgen.model import PHASE_LABELS
from reportgen.site.pages import communication as comm_pages
from reportgen.site.pages import findings as finding_pages
from reportgen.site.pages import overlap as overlap_pages
from reportgen.site.pages import resources as resource_pages
from reportgen.site.pages.step_trace import rank_rows
from reportgen.site.plan.page import Page, PageContext, PlanInput, view
from reportgen.site.views.idle import idle_section
from reportgen.site.views.problems import translate_problem
from reportgen.site.views.values import num, records

MAX_SINGLE_RANK_PAGES = 16  # the flagged ranks whose whole page the single file carries (the rest: a compact view)


@view
class RankContext(PageContext):
    """A rank page: its facts, one section per page module (plain-data dicts naming their partial), findings."""

    rank: int
    facts: list[tuple[str, str]]
    sections: list[dict]
    issues: list[dict]
    slow: bool
    files: list[str]
    n_files: int
    cluster_link: str
    findings: list[dict]
    prev: Optional[str]
    next: Optional[str]


class RankPages:
    """The rank pages of one report: `page(n)` plans the n-th rank's page, `single_view(page)` its compact view."""

    def __init__(self, inp: PlanInput) -> None:
        a = inp.analysis
        run, st = a.run, a.steps
        self.analysis, self.common, self.ids = a, inp.common, run.rank_ids
        self.maker = rank_rows(inp)
        self.by_rank = finding_pages.rank_findings(inp.findings, len(run.rank_ids))
        hl = self.maker.hl
        drawn = [d.rank for m in (a.execution.marey if a.execution else []) for d in m.devices]
        self.detail = resource_pages.RankDetail(a, priority=sorted(hl.slow_ranks | hl.waits_least) + drawn,
                                                flagged=hl.flagged)
        self.rank_comm = comm_pages.RankComm(a, hl)
        self.overlap_sections = overlap_pages.RankSections(a)
        self.line_spec = step_charts.rank_step_lines(
            [_(PHASE_LABELS[p]) for p in (*st.stacked, "total")
             if st.kind and p in st.phases and (p != "total" or st.kind != "host")]
            or [_("Step total")], single_step=len(st.steps) <= 1) if st.kind else None
        line_spec = self.line_spec
        self.meta = {"phases": [{"key": p, "label": translate(f"{PHASE_LABELS[p]} (ms)")} for p in st.phases]
                     if st.kind else [],
                     "line_labels": {p: PHASE_LABELS[p] for p in PHASE_LABELS
                                     if line_spec and PHASE_LABELS[p] in line_spec["encoding"]["color"]["scale"]["domain"]}}
        self.flagged = hl.flagged
        self.exports = self.detail.exports

    @property
    def line_template(self) -> Optional[dict]:
        """The step-lines chart without its data: the single file draws each rank's lines from its step table."""
        return {k: v for k, v in self.line_spec.items() if k != "datasets"} if self.line_spec else None

    def page(self, n: int) -> Page:
        ids = self.ids
        r = ids[n]
        return _plan_rank(self.analysis, r, self.maker, self.line_spec, self.common, self.rank_comm,
                          self.overlap_sections, self.detail, findings=self.by_rank.get(r, []),
                          prev=urls.rank_page(ids[n - 1]) if n > 0 else None,
                          next=urls.rank_page(ids[n + 1]) if n + 1 < len(ids) else None)

    def single_view(self, rp: Page) -> dict:
        return _single_rank(rp, self.meta["phases"])


def _single_rank(rp: Page, phases: list[dict]) -> dict:
    """The compact view of a rank in the single file: facts, its step table, its data quality. The step lines are
    drawn from the table, and the phase columns are the run's (`meta`) unless this rank's differ (a large run's
    single file carries a thousand of these)."""
    sec = rp.context.sections[0]
    # the single file draws this view in the browser: texts are put in the report language here
    facts = [(translate(k), translate(v)) for k, v in rp.context.facts]
    issues = [{**i, "severity": translate(i.get("severity")), "problem": translate_problem(i.get("problem"))}
              if isinstance(i, dict) else i for i in rp.context.issues]
    own = [{**p, "label": translate(p.get("label"))} if isinstance(p, dict) else p for p in sec.get("phases", [])]
    out = {"facts": facts, "issues": issues, "rows": sec.get("rows", [])}
    if own != phases:
        out["phases"] = own
    return out


def _plan_rank(a: Analysis, r: int, maker, line_spec: Optional[dict], common: dict,
               rank_comm: comm_pages.RankComm, overlap_sections: overlap_pages.RankSections,
               detail: resource_pages.RankDetail, *, findings: list[dict], prev: Optional[str],
               next: Optional[str]) -> Page:
    run, st = a.run, a.steps
    data = run.ranks[r]
    info = data.info
    facts = [(N_("Rank"), str(r)), (N_("Source folder"), info.source_dir or ".")]
    if info.host:
        facts.append((N_("Host"), info.host))
    if info.device is not None:
        facts.append((N_("Device"), str(info.device)))
    if r in run.info.stage_of_rank:
        facts.append((N_("Pipeline stage"), str(run.info.stage_of_rank[r])))
    if r in run.info.parallel_index:
        facts.append((N_("Parallel index"), ", ".join(f"{k.upper()} {v}" for k, v in run.info.parallel_index[r].items())))
    if info.framework:
        facts.append((N_("Framework"), info.framework))
    for k, v in sorted(info.versions.items()):
        facts.append((_("{name} version").format(name=_(k)), v))
    if info.profiler_level:
        facts.append((N_("Profiler level"), info.profiler_level))
    sections: list[dict] = []
    charts: list[Chart] = []
    trace = data.step_trace
    step_section: dict[str, Any] = {"id": "step-trace", "title": N_("Step trace"), "template": "_rank_steps.html",
                                    "has_data": trace is not None}
    if trace is not None:
        phases = st.phases if trace.kind == st.kind else trace.phases
        step_rows = []
        for rec in records(trace.steps):
            step_rows.append({"step": None if pd.isna(rec["step"]) else int(rec["step"]),
                              **{p: num(rec.get(p)) for p in phases}})
        avg_row = maker.average(r) if r in maker.avg else None
        step_section.update({
            "phases": [{"key": p, "label": f"{PHASE_LABELS[p]} (ms)"} for p in phases],
            "rows": step_rows,
            "average": avg_row,
            "rule": text(st.rules_used.get(avg_row["rule"], "")) if avg_row else "",
            "source": trace.source,
            "cluster_median": ({p: st.stats[p].median for p in phases if p in st.stats}
                               if len(run.rank_ids) > 1 else {}),  # no "cluster median" of one device
        })
        if line_spec is not None and len(step_rows) >= 1:
            labels = set(line_spec["encoding"]["color"]["scale"]["domain"])
            lines = [{"step": row["step"], "phase": _(PHASE_LABELS[p]), "value": row[p]}
                     for row in step_rows for p in phases
                     if _(PHASE_LABELS[p]) in labels and row["step"] is not None and row[p] is not None]
            if lines:
                spec = dict(line_spec)
                spec["datasets"] = {"steps": lines}
                charts.append(Chart(f"rank-{r}-steps", spec, N_("This rank's step phases over the recorded steps.")))
    sections.append(step_section)
    idle = idle_section(a, r)
    if idle is not None:
        sections.append(idle)
    sections.append(overlap_sections.section(r))
    sections.append(rank_comm.section(r))
    sections.extend(detail.sections(r))
    issues = [i.to_dict() for i in data.issues]
    downloads = [dl for sec in sections for dl in sec.pop("downloads", [])]
    return Page(urls.rank_page(r), _("Rank {rank}").format(rank=r), "_rank.html", RankContext(
        **common, rank=r, facts=facts, sections=sections, issues=issues,
        slow=r in maker.hl.slow_ranks, files=data.files[:200], n_files=len(data.files),
        cluster_link=str(urls.step_trace_row(r)), findings=findings, prev=prev, next=next,
    ), charts=charts, nav="ranks", downloads=downloads)

