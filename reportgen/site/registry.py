"""The pages of a report, in nav order. Adding a page: its module (exporting a `PageKind`), its partial, one line here."""

from __future__ import annotations

from reportgen.site import (
                            comm_pages,
                            execution_pages,
                            finding_pages,
                            overlap_pages,
                            overview_pages,
                            resource_pages,
                            step_pages,
)
from reportgen.site.page import PageKind

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
