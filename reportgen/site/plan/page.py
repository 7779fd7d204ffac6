"""The page protocol: what a page module declares (`PageKind`) and what planning produces (`Page`, `SitePlan`).

A page module exports one `PageKind`: its path, nav label, partial template and a plan function that turns the
`PlanInput` into one or more `Page`s (plain data and chart specs, no I/O). `registry.PAGES` lists them in nav order;
`pages.plan_pages` loops over the registry, and the builder renders the same partials with the same contexts in
one loop for the site and for the single file. Adding a page: its module, its partial, one line in the registry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Collection, Optional

if TYPE_CHECKING:
    from reportgen.analysis import Analysis
    from reportgen.charts import Chart



def column_rows(columns: dict[str, list]) -> list[dict]:
    """A table given column by column (key -> one value per row) as a dict per row."""
    return [dict(zip(columns, row)) for row in zip(*columns.values())]


class LazyRows:
    """A download's rows, built only when its CSV is written (`fn()` returns the list of row dicts): a large run's
    rank pages would otherwise hold every operator of every rank as dicts from planning to writing. `columns`:
    `fn()` returns the table column by column instead (key -> one value per row), which the CSV writer reads
    without a dict per row; iterating still yields the rows."""

    def __init__(self, fn: Callable[[], Any], columns: bool = False) -> None:
        self.fn = fn
        self.columns = columns

    def __iter__(self):
        if not self.columns:
            return iter(self.fn())
        return iter(column_rows(self.fn()))


Download = tuple[str, list[dict], "list[dict] | LazyRows"]  # CSV file: site path, columns, rows (`.csv.gz`: gzip)

# Page contexts are small frozen dataclasses (the view model a page module hands to its partial), as coverage.py's
# `IndexItem` / `FileData`: each page module defines its own, with the fields its partial reads as `ctx.field`.
# Their fields hold plain data (str, numbers, bool, None, lists and dicts of those) and chart specs, never an
# analysis or model object (`tests/test_page_contexts.py`).
view = dataclass(frozen=True, slots=True, kw_only=True)


@view
class PageContext:
    """What every page context carries (the `common` of `PlanInput`)."""

    run_title: str
    version: str


@dataclass
class Page:
    path: str
    title: str
    partial: str  # the content template, rendered inside base.html (site) or stacked in the single file
    context: PageContext
    charts: list["Chart"] = field(default_factory=list)
    nav: str = ""  # the nav entry (a PageKind id) this page belongs to
    downloads: list[Download] = field(default_factory=list)
    single: bool = False  # stacked into the single file


@dataclass
class PlanInput:
    """Everything a page's plan function may read. Built once per report."""

    analysis: "Analysis"
    findings: list[dict]
    thresholds: dict
    common: dict[str, Any]  # run_title, version: in every page context
    shared: dict[str, Any] = field(default_factory=dict)  # per-report caches shared by page modules


def always(a: "Analysis") -> bool:
    return True


def multi_rank(a: "Analysis") -> bool:
    """Cluster-only pages (communication between ranks, parallel strategy) cannot have data on a single device."""
    return len(a.run.rank_ids) > 1


@dataclass(frozen=True)
class PageKind:
    id: str
    path: str  # the page's path (the first page, when the kind plans several)
    nav_label: str
    partial: str
    plan: Callable[[PlanInput], list[Page]]
    in_single: bool = True  # the first planned page is stacked into the single file
    applies: Callable[["Analysis"], bool] = always  # False: the page cannot have data for this run; not planned


@dataclass
class SingleRanks:
    """The single file's compact rank view: per-rank step tables and one line-chart template; and the pages of the
    flagged ranks, carried whole."""

    rank_ids: list[int]
    data: dict[str, dict]
    line_template: Optional[dict]
    meta: dict[str, Any] = field(default_factory=dict)  # phases shared by the ranks; phase key -> step-line label
    pages: list[Page] = field(default_factory=list)  # the flagged ranks' pages (slow, waits least, slow links)


@dataclass
class LazyRanks:
    """Rank pages planned when they are written (`plan_pages(..., lazy_ranks=True)`): `page(n)` plans the n-th
    rank's page. On a large run the site builder calls it in its forked writers, so a thousand rank pages are
    planned in parallel and never held in memory at once."""

    paths: list[str]
    page: Callable[[int], Page]


@dataclass
class SitePlan:
    pages: list[Page]
    title: str
    nav: list[tuple[str, str]]  # (path, label)
    single_ranks: SingleRanks
    exports: list = field(default_factory=list)  # resource_pages.TraceExport: trace files copied into the site
    lazy_ranks: Optional[LazyRanks] = None  # rank pages not in `pages`: planned by the builder as it writes them
    # the other pages, when their planning waits for `realize` (`later(only)`: the pages of the kinds `only` takes)
    later: Optional[Callable[..., list[Page]]] = None
    large: bool = False  # a large run (`urls.large_run`): the cluster pages' CSVs are `.csv.gz` (`urls.large_csv`)

    def realize(self, elsewhere: Collection[str] = ()) -> None:
        """Plan the pages whose planning was left for the builder (it forks the rank pages' writers first, then
        plans the cluster pages while they work). `elsewhere`: kinds (ids) a forked writer plans and writes
        (`plan_elsewhere`, before this call): not planned here."""
        if self.later is not None:
            later, self.later = self.later, None
            self.pages = (later(lambda k: k not in elsewhere) if elsewhere else later()) + self.pages

    def plan_elsewhere(self, kinds: Collection[str]) -> list[Page]:
        """In a forked writer (before `realize` in the builder): the pages of `kinds` alone."""
        return self.later(lambda k: k in kinds) if self.later is not None else []

    def page_count(self) -> int:
        return len(self.pages) + (len(self.lazy_ranks.paths) if self.lazy_ranks else 0)

    def rank_page_ids(self) -> list[int]:
        """The ids (`page_at`) of the rank pages: planned ones by position, lazy ones as -1, -2, ..."""
        lazy = len(self.lazy_ranks.paths) if self.lazy_ranks else 0
        return [i for i, p in enumerate(self.pages) if p.nav == "ranks"] + [-n - 1 for n in range(lazy)]

    def page_at(self, i: int) -> Page:
        """A planned page by position (i >= 0), or lazy rank page -i-1 (planned now)."""
        if i >= 0:
            return self.pages[i]
        assert self.lazy_ranks is not None
        return self.lazy_ranks.page(-i - 1)
