"""The pages of a report, in nav order. Adding a page: its module (exporting a `PageKind`), its partial, one line here."""

from __future__ import annotations

from reportgen.site.pages import communication as comm_pages
from reportgen.site.pages import execution as execution_pages
from reportgen.site.pages import findings as finding_pages
from reportgen.site.pages import overlap as overlap_pages
from reportgen.site.pages import overview as overview_pages
from reportgen.site.pages import resources as resource_pages
from reportgen.site.pages import step_trace as step_pages
from reportgen.site.plan.page import PageKind

PAGES: tuple[PageKind, ...] = (
    overview_pages.PAGE,
    step_pages.PAGE,
    overlap_pages.PAGE,
    comm_pages.PAGE,
    execution_pages.EXECUTION_PAGE,
    execution_pages.STRATEGY_PAGE,
    resource_pages.PAGE,
    finding_pages.RULES_KIND,
)
