"""The overview (index.html): run facts, the verdict and findings, step time per rank, data quality."""

from __future__ import annotations

import dataclasses

from reportgen.i18n import N_, _

from reportgen import urls
from reportgen.analysis import Analysis
from reportgen.site import finding_pages, highlights
from reportgen.site.page import Page, PageKind, PlanInput
from reportgen.site.step_pages import cluster_charts, kind_label, stats_rows
from reportgen.site.values import compact_ranks, fmt_list


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
        facts.append((_("Hosts"), f"{len(hosts)} ({fmt_list(hosts, 8)})"))
    facts.append((_("Steps"), f"{len(st.steps)} ({compact_ranks(st.steps)})" if st.steps else _("no step ids")))
    facts.append((_("Parallel mode"), _("{mode} (from {source})").format(mode=_(run.info.parallel_mode),
                                                                        source=run.info.parallel_mode_source)))
    facts.append((_("Pipeline stages"), str(run.info.stages)))
    if frameworks:
        facts.append((_("Framework"), ", ".join(frameworks)))
    for k, vs in sorted(versions.items()):
        facts.append((_("{name} version").format(name=k), ", ".join(sorted(vs))))
    if levels:
        facts.append((_("Profiler level"), ", ".join(levels)))
    facts.append((_("Step trace"), _(kind_label(a)) if st.kind else _("none found")))
    return facts


def _plan(inp: PlanInput) -> list[Page]:
    a = inp.analysis
    run, st = a.run, a.steps
    hl = highlights.of(inp)
    ctx = {
        **inp.common,
        "facts": run_facts(a),
        **finding_pages.findings_context(inp.findings),
        "issues": [i.to_dict() for i in a.issues],
        "has_steps": st.kind is not None,
        "slow_ranks": sorted(hl.slow_ranks),
        "stats": stats_rows(a, hl),
        "n_ranks": len(run.rank_ids),
        "coverage": [a_.to_dict() | {"id": k} for k, a_ in a.coverage.areas.items()] if a.coverage else [],
        "gaps": a.coverage.gaps if a.coverage else [],
        "rank_links": [{"rank": r, "href": urls.rank_page(r), "slow": r in hl.slow_ranks} for r in run.rank_ids],
    }
    return [Page(urls.INDEX, N_("Overview"), PAGE.partial, ctx, charts=[dataclasses.replace(c, step_data=None) for c in cluster_charts(inp)])]  # no step selector here


PAGE = PageKind("overview", urls.INDEX, N_("Overview"), "_overview.html", _plan)
