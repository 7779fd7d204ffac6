"""The overview (index.html): run facts, the verdict and findings, step time per rank, data quality."""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Optional

from reportgen.i18n import N_, _, text

from reportgen import urls
from reportgen.analysis import Analysis
from reportgen.site.views.idle import overview_idle
from reportgen.site.pages import findings as finding_pages
from reportgen.rules import highlights
from reportgen.site.pages.rank.resources import RankDetail
from reportgen.site.views.efficiency import efficiency_context
from reportgen.site.plan.page import Page, PageContext, PageKind, PlanInput, view
from reportgen.site.pages.step_trace import cluster_charts, kind_label, stats_rows
from reportgen.fmt import compact_ranks, joined, share as fmt_share


@view
class OverviewContext(PageContext):
    facts: list[tuple[str, str]]
    findings: list[dict]
    finding_counts: dict[str, int]
    findings_computed: bool
    rules_page: str
    issues: list[dict]
    has_steps: bool
    slow_ranks: list[int]
    stats: list[dict]
    n_ranks: int
    coverage: list[dict]
    gaps: list[str]
    rank_links: list[dict]
    single_device: bool = False  # a 1-rank run: MindSpore Insight's single-device layout
    device: list[dict] = field(default_factory=list)  # its sections (operators, data, memory, timeline, CPU)
    idle: list[dict] = field(default_factory=list)  # idle time by cause (site.idle_view.overview_idle)
    efficiency: Optional[dict] = None  # devices, peaks, MFU, GEMM headroom (site/views/efficiency.py)


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
        (_("Run folder"), run.info.path),
        (_("Layout"), _(run.info.layout_label)),
        (_("Ranks"), f"{len(run.rank_ids)} ({compact_ranks(run.rank_ids)})"),
    ]
    if run.info.rank_size and run.info.rank_size != len(run.rank_ids):
        facts.append((_("Ranks in the job"), _("{size} (only {n} profiled or collected)").format(
            size=run.info.rank_size, n=len(run.rank_ids))))
    if hosts:
        facts.append((_("Hosts"), f"{len(hosts)} ({joined(hosts, 8)})"))
    models = sorted({(i.device_model, i.device_memory_mb) for i in infos if i.device_model},
                    key=lambda m: (m[0], m[1] or 0.0))  # (a rank whose trace gives no memory: None)
    if models:  # the accelerator as the profiler describes it (Kineto deviceProperties)
        facts.append((_("Device"), "; ".join(
            _("{model} ({memory} MB of memory)").format(model=m, memory=f"{mem:,.0f}") if mem else m
            for m, mem in models[:4])))
    facts.append((_("Steps"), f"{len(st.steps)} ({compact_ranks(st.steps)})" if st.steps else _("no step ids")))
    facts.append((_("Parallel mode"), _("{mode} (from {source})").format(mode=_(run.info.parallel_mode),
                                                                        source=_(text(run.info.parallel_mode_source)))))
    facts.append((_("Pipeline stages"), str(run.info.stages)))
    if frameworks:
        facts.append((_("Framework"), ", ".join(frameworks)))
    for k, vs in sorted(versions.items()):
        facts.append((_("{name} version").format(name=_(k)), ", ".join(sorted(vs))))
    if levels:
        facts.append((_("Profiler level"), ", ".join(levels)))
    facts.append((_("Step trace"), _(kind_label(a)) if st.kind else _("none found")))
    return facts


DEVICE_SECTIONS = ("operators", "data", "memory", "timeline", "cpu")  # MindSpore Insight's single-device page


def device_dashboard(a: Analysis) -> list[dict]:
    """A single-device run's overview (MindSpore Insight's single-device page): operator statistics, data
    preparation, memory, timeline and CPU of the device, each with its charts and a link to its rank-page section."""
    r = a.run.rank_ids[0]
    secs = {part.section.id: part.section for part in RankDetail(a).sections(r)}
    out = []
    for sid in DEVICE_SECTIONS:
        sec = secs.get(sid)
        if sec is None:
            continue
        lines: list[str] = []
        if sid == "operators" and sec.types:
            lines = [_("{op} ({where}): {ms} ms, {share} of the time on {where}").format(
                op=t["op_type"], where=t["side"], ms=f"{t['total_ms']:,.3f}",
                share=fmt_share(t["share"])) for t in sec.types[:5]]
        elif sid == "data" and sec.has_data:
            if sec.empty_rate is not None:
                lines.append(_("Host queue empty in {rate} of the steps").format(rate=fmt_share(sec.empty_rate)))
            if sec.bottleneck:
                lines.append(_("Bottleneck: {text}").format(text=sec.bottleneck))
        elif sid == "memory" and sec.peak_mb is not None:
            lines.append(_("Peak {peak} MB").format(peak=f"{sec.peak_mb:,.0f}") + (
                _(" of {cap} MB ({ratio})").format(cap=f"{sec.capacity_mb:,.0f}", ratio=fmt_share(sec.ratio, 0))
                if sec.capacity_mb and sec.ratio is not None else ""))
        elif sid == "timeline" and sec.has_data and sec.span_ms is not None:
            lines.append(_("{ops} operators on {streams} streams/threads over {span} ms").format(
                ops=sec.n_ops, streams=sec.n_streams, span=f"{sec.span_ms:,.3f}"))
        out.append({"id": f"device-{sid}", "title": sec.title, "has_data": sec.has_data, "lines": lines,
                    "charts": list(sec.charts)[:2], "href": str(urls.rank(r, sid))})
    return out


def _plan(inp: PlanInput) -> list[Page]:
    a = inp.analysis
    run, st = a.run, a.steps
    hl = highlights.of(inp)
    ctx = OverviewContext(
        **inp.common,
        facts=run_facts(a),
        **finding_pages.findings_context(inp.findings),
        issues=[i.to_dict() for i in a.issues],
        has_steps=st.kind is not None,
        slow_ranks=sorted(hl.slow_ranks),
        stats=stats_rows(a, hl) if len(run.rank_ids) > 1 else [],
        single_device=len(run.rank_ids) == 1,
        device=device_dashboard(a) if len(run.rank_ids) == 1 else [],
        n_ranks=len(run.rank_ids),
        coverage=[a_.to_dict() | {"id": k} for k, a_ in a.coverage.areas.items()] if a.coverage else [],
        gaps=a.coverage.gaps if a.coverage else [],
        rank_links=[{"rank": r, "href": urls.rank_page(r), "slow": r in hl.slow_ranks} for r in run.rank_ids],
        idle=overview_idle(a),
        efficiency=_efficiency(a),
    )
    return [Page(urls.INDEX, N_("Overview"), PAGE.partial, ctx, charts=[dataclasses.replace(c, step_data=None) for c in cluster_charts(inp)])]  # no step selector here


def _efficiency(a: Analysis):
    try:  # an optional section: an input nobody foresaw must not cost the overview
        return efficiency_context(a)
    except Exception as e:  # noqa: BLE001
        import logging

        logging.getLogger("msreport").warning("efficiency section skipped: %s: %s", type(e).__name__, e)
        return None


PAGE = PageKind("overview", urls.INDEX, N_("Overview"), "_overview.html", _plan)
