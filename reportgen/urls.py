"""Every page address of the report (paths and anchors), and the one place where a link is resolved.

Rules, analyses and page planners name a link's *subject* with a `Target` (or its canonical string form, the
site-root-relative path `"ranks/rank-5.html#memory"`); they never write a relative URL. `Resolver.href` turns a
target into the link that works from the page being rendered, in the mode being written:

* site mode: a path relative to the page's folder (`../ranks/rank-5.html#memory` from `cluster/...`);
* single-file mode: an anchor inside the one file (`#rank-page-5`, `#comm-links`), or `None` for targets the
  single file does not carry (CSV downloads, trace copies).

Templates call `url(...)`, chart datasets are resolved before they are written (`resolve_hrefs`), and the
JavaScript only ever receives resolved links.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any, Optional, Union

INDEX = "index.html"
STEP_TRACE = "cluster/step-trace.html"
OVERLAP = "cluster/overlap.html"
COMMUNICATION = "cluster/communication.html"
EXECUTION = "cluster/execution.html"
STRATEGY = "cluster/strategy.html"
RESOURCES = "cluster/resources.html"
RULES = "rules.html"
FINDINGS_MD = "findings.md"  # the findings as Markdown, in each language tree

# The section id each cluster page carries (the single file stacks the pages as these sections).
SECTION_OF_PAGE = {
    INDEX: "overview", STEP_TRACE: "step-trace", OVERLAP: "overlap", COMMUNICATION: "communication",
    EXECUTION: "execution", STRATEGY: "strategy", RESOURCES: "resources", RULES: "rules",
}

# A site in two languages (`--lang zh,en`): the first language's pages at the output's root, the other one's under
# `<lang>/` (a language tree). Both trees share the files under these folders (the bundled scripts and styles, the
# copied traces); everything else (pages, CSV downloads) lives in each tree.
TRACE_DIR = "traces"
SHARED_DIRS = ("assets/", TRACE_DIR + "/")

_RANK_PAGE_RE = re.compile(r"^ranks/rank-(\d+)\.html$")
_EXEC_STEP_RE = re.compile(r"^cluster/execution-step-(-?\d+)\.html$")


# A rank number no run has: embedded data carries `rank_page(RANK_SLOT)` once, resolved for the page like any
# href, and the browser puts each row's rank in its place (charts/column_codec.py; a thousand hrefs cost 25 KB each).
RANK_SLOT = 987654321


def rank_page(rank: int) -> str:
    return f"ranks/rank-{int(rank)}.html"


# ranks: from here on a run is large: the rank pages' and the cluster pages' full tables are written as `.csv.gz`
# and a rank page lists fewer rows of its long tables (`site/pages/rank/sections.RANK_ROWS_LARGE`), the rest in its CSV
LARGE_RUN_RANKS = 64


def large_run(n_ranks: int) -> bool:
    """A run of LARGE_RUN_RANKS ranks or more (the one threshold of the site's size-driven choices)."""
    return n_ranks >= LARGE_RUN_RANKS


def rank_csv(rank: int, table: str, n_ranks: int) -> str:
    """Site path of a rank page's full table (`ranks/rank-N-<table>.csv`). A large run has a thousand or more of
    each, 20 KB apiece as text: they are gzip-compressed there (5x to 20x smaller; pandas, DuckDB and every archive
    tool read them), which keeps the site within its size goal (issue 17)."""
    return large_csv(f"ranks/rank-{int(rank)}-{table}.csv", large_run(n_ranks))


def csv_path(name: str) -> str:
    """A CSV download of a cluster page (`cluster/<name>.csv`; written as `large_csv` names it)."""
    return f"cluster/{name}.csv"


def large_csv(path: str, large: bool) -> str:
    """Where a CSV download `path` is written: gzip-compressed (`.csv.gz`) on a large run (`large_run`), the
    cluster pages' as the rank pages' tables (`rank_csv`). The planner renames the downloads with it, the
    links (`csv_file` in _macros.html) name the same file with it."""
    return path + ".gz" if large and path.endswith(".csv") else path


# the cluster pages' CSV downloads
STEP_TRACE_CSV = csv_path("step-trace")
OVERLAP_RANKS_CSV = csv_path("overlap-ranks")
OVERLAP_STAGES_CSV = csv_path("overlap-stages")
COMM_LINKS_CSV = csv_path("communication-links")
COMM_RANKS_CSV = csv_path("communication-ranks")
MEMORY_CSV = csv_path("memory")
FLOPS_CSV = csv_path("flops")
OPTYPES_CSV = csv_path("operator-types")
EXECUTION_OPS_CSV = csv_path("execution-operators")


def execution_step_page(step: int) -> str:
    """The execution page of one more drawn step (the first drawn step is on `EXECUTION`)."""
    return f"cluster/execution-step-{step}.html"


def strategy_csv(stage: int) -> str:
    """A pipeline stage's operators on the strategy page, every one."""
    return csv_path(f"strategy-stage-{stage}")


def trace_copy(rank: int) -> str:
    """A rank's trace copied into the report (shared by the language trees), gzip-compressed: Perfetto,
    trace_processor and chrome://tracing open .json.gz as it is, and a trace shrinks ~13x."""
    return f"{TRACE_DIR}/rank-{int(rank)}.trace.json.gz"


@dataclass(frozen=True)
class Target:
    """What a link points at: a page of the report and an anchor on it."""

    page: str
    anchor: str = ""

    def __str__(self) -> str:
        return self.page + ("#" + self.anchor if self.anchor else "")

    @property
    def rank(self) -> Optional[int]:
        m = _RANK_PAGE_RE.match(self.page)
        return int(m.group(1)) if m else None

    @classmethod
    def parse(cls, text: Union[str, "Target"]) -> "Target":
        if isinstance(text, Target):
            return text
        path, _, frag = str(text).partition("#")
        return cls(path, frag)


# ---- constructors: the only places that know a page's anchors ------------------------------------------------

def rank(r: int, section: str = "") -> Target:
    """A rank's page, optionally one of its sections (`step-trace`, `operators`, `memory`, `data`, `cpu`, ...)."""
    return Target(rank_page(r), section)


def page(path: str, anchor: str = "") -> Target:
    return Target(path, anchor)


def step_trace_row(r: int) -> Target:
    return Target(STEP_TRACE, f"rank-{int(r)}")


def overlap_row(r: int) -> Target:
    return Target(OVERLAP, f"overlap-rank-{int(r)}")


def comm_rank_row(r: int) -> Target:
    return Target(COMMUNICATION, f"comm-rank-{int(r)}")


def marey_rank(r: int) -> Target:
    return Target(EXECUTION, f"marey-rank-{int(r)}")


COMM_LINKS = Target(COMMUNICATION, "comm-links")
OVERLAP_STAGES = Target(OVERLAP, "overlap-stages")
OVERLAP_RATES = Target(OVERLAP, "overlap-rates")
FLOPS = Target(RESOURCES, "flops")
MAREY_TYPES = Target(EXECUTION, "marey-types")
DATA_QUALITY = Target(INDEX, "data-quality")
FINDINGS = Target(INDEX, "findings")


# ---- resolution ----------------------------------------------------------------------------------------------

def tree_root(lang: str, primary: bool) -> str:
    """The folder of a language's tree in the output: "" for the primary language, "en/" for another."""
    return "" if primary else f"{lang}/"


def in_tree(root: str, path: str) -> str:
    """The output path of a site path in the language tree at `root` (shared files stay where they are)."""
    return path if not root or path.startswith(SHARED_DIRS) else root + path


def language_href(current: str, root: str, other_root: str, anchor: str = "") -> str:
    """The link from page `current` of the tree at `root` to the same page in the tree at `other_root`."""
    return posixpath.relpath(other_root + current, posixpath.dirname(root + current) or ".") + (
        "#" + anchor if anchor else "")


class Resolver:
    """Resolves targets from one page in one mode. Site mode: relative paths. Single file: in-file anchors.
    `root`: the page's language tree ("" or "en/", see `tree_root`)."""

    def __init__(self, current: str, single: bool, root: str = "") -> None:
        self.current = current
        self.single = single
        self.root = root
        self._dir = posixpath.dirname(in_tree(root, current)) or "."

    def href(self, target: Union[str, Target, None]) -> Optional[str]:
        if target is None or target == "":
            return None
        t = Target.parse(target)
        if self.single:
            return self._single(t)
        if not t.page:
            return "#" + t.anchor if t.anchor else None
        rel = posixpath.relpath(in_tree(self.root, t.page), self._dir)
        return rel + ("#" + t.anchor if t.anchor else "")

    __call__ = href

    @staticmethod
    def _single(t: Target) -> Optional[str]:
        r = t.rank
        if r is not None:
            return f"#rank-page-{r}"  # rank pages are one compact, switchable section in the single file
        if _EXEC_STEP_RE.match(t.page):
            return "#" + SECTION_OF_PAGE[EXECUTION]
        if t.page and t.page not in SECTION_OF_PAGE:
            return None  # downloads and other files the single file does not carry
        if t.anchor:
            return "#" + t.anchor
        return "#" + SECTION_OF_PAGE.get(t.page, "overview")


def url_function(current: str, single: bool, root: str = ""):
    """The `url` callable templates use: never returns None (an unavailable target becomes '')."""
    res = Resolver(current, single, root)

    def url(target: Union[str, Target, None]) -> str:
        return res.href(target) or ""

    url.resolver = res  # type: ignore[attr-defined]
    return url


def resolve_hrefs(value: Any, resolver: Resolver) -> Any:
    """A copy of plain JSON data with every string under an `href` key (or `*_href`) resolved.

    Only the containers on the way to an `href` are copied; everything else is shared with the input, so chart
    specs built once per shape stay untouched.
    """
    if isinstance(value, list):
        out = None
        for i, v in enumerate(value):
            nv = resolve_hrefs(v, resolver)
            if nv is not v:
                if out is None:
                    out = list(value)
                out[i] = nv
        return value if out is None else out
    if isinstance(value, dict):
        out_d = None
        for k, v in value.items():
            if isinstance(v, str) and (k == "href" or k.endswith("_href")):
                nv = resolver.href(v) or ""
            elif isinstance(v, (list, dict)):
                nv = resolve_hrefs(v, resolver)
            else:
                continue
            if nv is not v:
                if out_d is None:
                    out_d = dict(value)
                out_d[k] = nv
        return value if out_d is None else out_d
    return value
