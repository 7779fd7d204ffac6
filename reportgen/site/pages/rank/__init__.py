"""A rank's page: its facts, its findings, one typed section per aspect (`sections`: step trace, idle time by
cause, overlap, communication, then operators, FLOPs, data preparation, CPU, memory and timeline) and its data
quality; and the compact view of a rank that the single file carries instead of the page.

`RankPages` is built once per report with what every rank page shares (the step rows' maker, the section builders
of `communication`, `overlap` and `resources`, the step-lines chart template); `page(n)` plans the n-th rank's
page. On a large run the builder calls it in its forked writers (`SitePlan.lazy_ranks`).

Adding a section: its dataclass in `sections`, its builder (returning the section, or a `Part` with the CSVs it
links), its partial (`templates/_rank_<name>.html`), and one line in `RankPages.sections`.
"""

from __future__ import annotations

from typing import Optional

import pandas as pd

from reportgen import urls
from reportgen.analysis import Analysis
from reportgen.charts import Chart
from reportgen.charts import column_codec as columnar
from reportgen.charts import steps as step_charts
from reportgen.i18n import N_, _, text, translate
from reportgen.idle import run_idle
from reportgen.model import PHASE_LABELS
from reportgen.site.pages import findings as finding_pages
from reportgen.site.pages.rank.communication import RankComm
from reportgen.site.pages.rank.overlap import RankOverlap
from reportgen.site.pages.rank.resources import RankDetail
from reportgen.site.pages.rank.sections import (IdleSection, Part, RankSection, StepSection, in_folder,
                                                sources_in_folder)
from reportgen.site.pages.step_trace import rank_rows
from reportgen.site.plan.page import Download, Page, PageContext, PlanInput, view
from reportgen.site.views import idle as idle_view
from reportgen.site.views.problems import translate_problem
from reportgen.site.views.values import num, records

MAX_SINGLE_RANK_PAGES = 16  # the flagged ranks whose whole page the single file carries (the rest: a compact view)


@view
class RankContext(PageContext):
    """A rank page: its facts, its sections (each a `RankSection` naming its partial), findings, data quality."""

    rank: int
    facts: list[tuple[str, str]]
    sections: list[RankSection]
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
        # traces copied first: the ranks the findings name (the culprits, then the ends of slow links), then the drawn
        culprits = sorted(hl.slow_ranks | hl.waits_least)
        self.detail = RankDetail(a, priority=culprits + sorted(hl.flagged - set(culprits)) + drawn, flagged=hl.flagged)
        self.comm = RankComm(a, hl)
        self.overlap = RankOverlap(a)
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

    def sections(self, r: int) -> tuple[list[RankSection], list[Chart], list[Download]]:
        """Rank `r`'s sections in page order, the page's own charts (the step lines) and the CSVs they link."""
        steps, charts = step_section(self.analysis, r, self.maker, self.line_spec)
        idle = idle_section(self.analysis, r)
        parts = [Part(steps), *([Part(idle)] if idle is not None else []), Part(self.overlap.section(r, steps)),
                 self.comm.section(r), *self.detail.sections(r)]
        return [p.section for p in parts], charts, [dl for p in parts for dl in p.downloads]

    def page(self, n: int) -> Page:
        ids = self.ids
        r = ids[n]
        a = self.analysis
        data = a.run.ranks[r]
        sections, charts, downloads = self.sections(r)
        files = data.files[:200]
        if urls.large_run(len(ids)):  # files named relative to the rank's folder (the facts table names it)
            folder = data.info.source_dir
            sections = [sources_in_folder(s, folder) for s in sections]
            files = [in_folder(f, folder) for f in files]
        return Page(urls.rank_page(r), _("Rank {rank}").format(rank=r), "_rank.html", RankContext(
            **self.common, rank=r, facts=rank_facts(a, r), sections=sections, issues=[i.to_dict() for i in data.issues],
            slow=r in self.maker.hl.slow_ranks, files=files, n_files=len(data.files),
            cluster_link=str(urls.step_trace_row(r)), findings=self.by_rank.get(r, []),
            prev=urls.rank_page(ids[n - 1]) if n > 0 else None,
            next=urls.rank_page(ids[n + 1]) if n + 1 < len(ids) else None,
        ), charts=charts, nav="ranks", downloads=downloads)

    def single_view(self, rp: Page) -> dict:
        """The compact view of a rank in the single file: facts, its step table, its data quality. The step lines
        are drawn from the table, and the phase columns are the run's (`meta`) unless this rank's differ (a large
        run's single file carries a thousand of these)."""
        sec = rp.context.sections[0]
        assert isinstance(sec, StepSection)
        # the single file draws this view in the browser: texts are put in the report language here
        facts = [(translate(k), translate(v)) for k, v in rp.context.facts]
        issues = [{**{k: v for k, v in i.items() if k not in ("code", "params")},  # the view shows the text only
                   "severity": translate(i.get("severity")), "problem": translate_problem(i)}
                  if isinstance(i, dict) else i for i in rp.context.issues]
        own = [{**p, "label": translate(p.get("label"))} if isinstance(p, dict) else p for p in sec.phases or []]
        out = {"facts": facts, "issues": issues, "rows": sec.rows or []}
        if own != self.meta["phases"]:
            out["phases"] = own
        return out


def rank_facts(a: Analysis, r: int) -> list[tuple[str, str]]:
    """The rank's facts table: where its files are, its host and device, its place in the parallel layout, the
    framework and profiler."""
    run = a.run
    info = run.ranks[r].info
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
    return facts


def step_section(a: Analysis, r: int, maker, line_spec: Optional[dict]) -> tuple[StepSection, list[Chart]]:
    """The rank's step table (beside its average row and the cluster median) and its step-lines chart."""
    run, st = a.run, a.steps
    trace = run.ranks[r].step_trace
    if trace is None:
        return StepSection(has_data=False), []
    charts: list[Chart] = []
    phases = st.phases if trace.kind == st.kind else trace.phases
    step_rows = []
    for rec in records(trace.steps):
        step_rows.append({"step": None if pd.isna(rec["step"]) else int(rec["step"]),
                          **{p: num(rec.get(p)) for p in phases}})
    avg_row = maker.average(r) if r in maker.avg else None
    section = StepSection(
        phases=[{"key": p, "label": f"{PHASE_LABELS[p]} (ms)"} for p in phases],
        rows=step_rows,
        average=avg_row,
        rule=text(st.rules_used.get(avg_row["rule"], "")) if avg_row else "",
        source=trace.source,
        cluster_median=({p: st.stats[p].median for p in phases if p in st.stats}
                        if len(run.ranks) > 1 else {}),  # no "cluster median" of one device
    )
    if line_spec is not None and len(step_rows) >= 1:
        labels = set(line_spec["encoding"]["color"]["scale"]["domain"])
        drawn = [(p, label) for p, label in ((p, _(PHASE_LABELS[p])) for p in phases) if label in labels]
        large = urls.large_run(len(run.ranks))
        # the points (a large run's chart draws them from the step table: only whether there is one is asked)
        points = ({"step": row["step"], "phase": label, "value": row[p]}
                  for row in step_rows for p, label in drawn if row["step"] is not None and row[p] is not None)
        lines = [] if large else list(points)
        if lines or (large and next(points, None) is not None):
            spec = dict(line_spec)
            spec["datasets"] = {"steps": []}
            chart = Chart(f"rank-{r}-steps", spec, N_("This rank's step phases over the recorded steps."))
            if large:
                # drawn from the step table beside it (the same numbers, to the 0.001 ms the tooltip prints):
                # for each label of the chart, its table column (after the step column)
                at = {_(PHASE_LABELS[p]): 1 + i for i, p in enumerate(phases)}
                chart.table = {"dataset": "steps", "id": "rank-steps",
                               "cols": [at.get(label, -1) for label in line_spec["encoding"]["color"]["scale"]["domain"]]}
            else:  # columnar (an object per point repeated its keys: 1.5 of a rank page's 30 KB; report.js expands it)
                chart.columns = {"steps": columnar.encode(lines, ["step", "phase", "value"], labels=("step",),
                                                          dicts=("phase",), plain=("value",))}
            charts.append(chart)
    return section, charts


def idle_section(a: Analysis, r: int) -> Optional[IdleSection]:
    """The rank's idle time by cause (`reportgen.idle`), a row per step; None when it has no known cause (no
    launches read)."""
    b = run_idle(a.run).get(r)
    if b is None or not len(b.steps):
        return None
    cols = idle_view.COLUMNS
    rows = [{"step": int(rec["step"]) if rec["step"] is not None and rec["step"] == rec["step"] else None,
             **{k: num(rec[k]) for k, _ in cols}} for rec in b.steps.to_dict("records")]
    m = b.mean()
    return IdleSection(columns=[{"key": k, "label": label} for k, label in cols], rows=rows,
                       average={k: num(m.get(k)) for k, _ in cols} if len(rows) > 1 else None,
                       basis=idle_view.BASIS.get(b.basis, b.basis), launch=dict(b.launch) or None)
