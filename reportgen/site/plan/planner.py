"""Phase 1 of the site build: plan every page (paths, titles, plain-data contexts, chart specs). No I/O.

The cluster pages come from the registry (`registry.PAGES`), one `PageKind` per page module; the rank pages from
`pages.rank`. The builder renders the result in one loop.
"""

from __future__ import annotations

import posixpath
from typing import Callable, Optional

from reportgen import __version__, urls
from reportgen.analysis import Analysis
from reportgen.i18n import _
from reportgen.site.pages.rank import MAX_SINGLE_RANK_PAGES, RankPages
from reportgen.site.plan.page import LazyRanks, Page, PlanInput, SingleRanks, SitePlan
from reportgen.site.plan.registry import PAGES


def plan_pages(a: Analysis, findings: list[dict], *, thresholds: Optional[dict] = None,
               title: Optional[str] = None, lazy_ranks: bool = False) -> SitePlan:
    """Every page of the report. `lazy_ranks` (the multi-page site): the rank pages are not planned here but by
    the builder as it writes them (`SitePlan.lazy_ranks`), the other pages when it calls `SitePlan.realize`, and
    the single file's compact rank view is left empty (only `--single-file` shows it)."""
    run = a.run
    title = title or f"msreport: {posixpath.basename(run.info.path.rstrip('/')) or run.info.path}"
    inp = PlanInput(analysis=a, findings=findings, thresholds=thresholds or {},
                    common={"run_title": title, "version": __version__})
    kinds = [k for k in PAGES if k.applies(a)]
    large = urls.large_run(len(run.rank_ids))  # the cluster pages' CSVs gzip-compressed, as the rank pages' are

    def plan_kinds(only: Optional[Callable[[str], bool]] = None) -> list[Page]:
        out: list[Page] = []
        for kind in kinds:
            if only is not None and not only(kind.id):
                continue
            planned = kind.plan(inp)
            for n, p in enumerate(planned):
                p.nav = kind.id
                p.single = kind.in_single and n == 0
                p.downloads = [(urls.large_csv(path, large), *rest) for path, *rest in p.downloads]
            out.extend(planned)
        return out
    nav = [(k.path, _(k.nav_label)) for k in kinds]
    # lazy: the cluster pages too are planned when the builder asks (`SitePlan.realize`), after it has forked the
    # rank pages' writers with what they need (set up below): the two run side by side
    pages: list[Page] = [] if lazy_ranks else plan_kinds()

    ranks = RankPages(inp)
    ids = run.rank_ids
    single_data: dict[str, dict] = {}
    single_pages = []
    if not lazy_ranks:
        for n, r in enumerate(ids):
            rp = ranks.page(n)
            pages.append(rp)
            single_data[str(r)] = ranks.single_view(rp)
            if r in ranks.flagged and len(single_pages) < MAX_SINGLE_RANK_PAGES:
                single_pages.append(rp)
    return SitePlan(pages=pages, title=title, nav=nav, exports=ranks.exports, large=large,
                    single_ranks=SingleRanks(rank_ids=list(ids), data=single_data, line_template=ranks.line_template,
                                             meta=ranks.meta, pages=single_pages),
                    lazy_ranks=LazyRanks([urls.rank_page(r) for r in ids], ranks.page) if lazy_ranks else None,
                    later=plan_kinds if lazy_ranks else None)
