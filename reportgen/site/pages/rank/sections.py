"""The sections of a rank page, one frozen dataclass each (the view model its partial reads as `s.field`).

Every section names its partial (`template`), its anchor (`id`) and its title; `has_data` False makes the partial
say what is missing. The fields hold plain data and chart specs only, as page contexts do
(`tests/test_page_contexts.py`). A section builder returns the section and the CSV downloads it links (`Part`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple, Optional, Sequence

from reportgen import urls
from reportgen.i18n import N_
from reportgen.site.plan.page import Download, view

RANK_ROWS_LARGE = 10  # rows of a rank page's long tables on a large run (`urls.large_run`; every row is in the CSV)


def shown_rows(usual: int, n_ranks: int) -> int:
    """How many rows of a long table a rank page lists: `usual`, or on a large run at most RANK_ROWS_LARGE (a
    thousand pages: the site's size goal, issue 33)."""
    return min(usual, RANK_ROWS_LARGE) if urls.large_run(n_ranks) else usual


def in_folder(path: Any, folder: str) -> Any:
    """A file of a rank named relative to the rank's folder (`folder`, relative to the run root, which the page's
    facts table names) when it lies inside it; anything else as it is."""
    if isinstance(path, str) and folder not in ("", ".") and path.startswith(folder + "/"):
        return path[len(folder) + 1:]
    return path


def sources_in_folder(section: "RankSection", folder: str) -> "RankSection":
    """`section` with its `source` / `sources` named relative to the rank's folder (`in_folder`). A large run's
    rank page does so: the folder's name (44 characters for torch_npu) was on every one of its ~20 file names,
    0.75 MB of a 1,024-rank site (issue 33)."""
    change = {}
    for name in ("source", "sources"):
        v = getattr(section, name, None)
        if isinstance(v, str):
            change[name] = in_folder(v, folder)
        elif isinstance(v, (list, tuple)):
            change[name] = [in_folder(x, folder) for x in v]
    return dataclasses.replace(section, **change) if change else section


@view
class RankSection:
    id: str
    title: str
    template: str
    has_data: bool = True


@view
class StepSection(RankSection):
    id: str = "step-trace"
    title: str = N_("Step trace")
    template: str = "_rank_steps.html"
    phases: Optional[list[dict]] = None  # {"key", "label"} of the phase columns
    rows: Optional[list[dict]] = None  # a row per recorded step
    average: Optional[dict] = None  # the rank's average row (the cluster table's)
    rule: str = ""  # how the average was taken
    source: Optional[str] = None
    cluster_median: Optional[dict] = None  # phase -> the cluster's median (none for one device)


@view
class IdleSection(RankSection):
    id: str = "idle"
    title: str = N_("Idle time by cause")
    template: str = "_rank_idle.html"
    columns: list[dict]
    rows: list[dict]
    average: Optional[dict]
    basis: str
    launch: Optional[dict]


@view
class OverlapSection(RankSection):
    id: str = "overlap"
    title: str = N_("Communication / computation overlap")
    template: str = "_rank_overlap.html"
    reason: Optional[str] = None  # why there is no data
    stage: Optional[int] = None
    compare: Optional[list[dict]] = None  # this rank vs its stage's mean and the median
    columns: Optional[list[str]] = None
    steps: Optional[list[dict]] = None
    steps_in_step_table: bool = False  # every per-step value is the step table's (the same file): not repeated
    source: Optional[str] = None
    share: Optional[float] = None
    check: Optional[dict] = None
    coverage: Optional[str] = None


@view
class CommSection(RankSection):
    id: str = "communication"
    title: str = N_("Communication")
    template: str = "_rank_comm.html"
    summary: Optional[dict] = None
    low_wait: bool = False  # a rank the others wait for
    cluster_median_wait: Optional[float] = None
    steps: Optional[list[dict]] = None
    ops: Optional[list[dict]] = None  # the longest operators
    n_ops: int = 0
    csv: Optional[str] = None  # every operator (more than the page shows)
    links: Optional[list[dict]] = None
    n_links: int = 0  # the links this rank reports (the page lists `links`: on a large run the slow, then the longest)
    source: Optional[str] = None


@view
class _WithCharts(RankSection):
    charts: list = ()  # Chart


@view
class OperatorsSection(_WithCharts):
    id: str = "operators"
    title: str = N_("Operators")
    template: str = "_rank_ops.html"
    sides: Optional[list[dict]] = None
    types: Optional[list[dict]] = None
    n_detail: int = 0
    detail: Optional[list[dict]] = None  # the longest operators
    csv: Optional[str] = None  # every operator
    sources: Optional[list[str]] = None
    slow_types: Optional[list[str]] = None


@view
class FlopsSection(_WithCharts):
    id: str = "flops"
    title: str = N_("FLOPs")
    template: str = "_rank_flops.html"
    source: Optional[str] = None
    flops_m: Optional[float] = None
    flops_per_s_g: Optional[float] = None
    util_pct: Optional[float] = None
    cube_m: Optional[float] = None
    vector_m: Optional[float] = None
    norm: Optional[float] = None
    split: Optional[bool] = None  # cube / vector columns
    ops: Optional[list[dict]] = None
    n_ops: Optional[int] = None
    per_step: Optional[list[dict]] = None
    scopes: Optional[list[dict]] = None


@view
class DataSection(_WithCharts):
    id: str = "data"
    title: str = N_("Data preparation")
    template: str = "_rank_data.html"
    sources: Optional[Any] = None
    mode: Optional[str] = None
    queue: Optional[dict] = None
    empty_rate: Optional[float] = None
    warn: bool = False
    bottleneck: Optional[str] = None
    bottleneck_ids: Optional[list[int]] = None
    bottleneck_kind: Optional[str] = None
    warnings: Optional[list[str]] = None
    high: Optional[float] = None
    low: Optional[float] = None
    ops: Optional[list[dict]] = None
    has_empty: Optional[bool] = None
    stage_times: Optional[list[dict]] = None


@view
class CpuSection(_WithCharts):
    id: str = "cpu"
    title: str = N_("CPU utilisation")
    template: str = "_rank_cpu.html"
    source: Optional[str] = None
    machine: Optional[Any] = None
    busy: Optional[Any] = None
    process: Optional[Any] = None
    selection: Optional[str] = None
    cpu_count: Optional[int] = None
    ops: Optional[list[dict]] = None


@view
class MemorySection(_WithCharts):
    id: str = "memory"
    title: str = N_("Memory")
    template: str = "_rank_memory.html"
    sources: Optional[Any] = None
    peak_mb: Optional[float] = None
    capacity_mb: Optional[float] = None
    ratio: Optional[float] = None
    static_mb: Optional[float] = None
    allocated_peak_mb: Optional[float] = None
    cluster_median_mb: Optional[float] = None
    capacity_source: Optional[str] = None
    top: Optional[list[dict]] = None
    components: Optional[list[dict]] = None


@view
class TimelineSection(_WithCharts):
    id: str = "timeline"
    title: str = N_("Timeline")
    template: str = "_rank_timeline.html"
    source: Optional[str] = None
    span_ms: Optional[float] = None
    n_ops: Optional[int] = None
    n_streams: Optional[int] = None
    compute_ms: Optional[float] = None
    communication_ms: Optional[float] = None
    pure_communication_ms: Optional[float] = None
    free_ms: Optional[float] = None
    download: Optional[str] = None  # the copied trace
    converted: Optional[bool] = None
    not_copied: bool = False
    trace_mb: Optional[float] = None
    text_mb: Optional[float] = None  # a gzipped trace: the JSON it holds (what the copies' bounds count)
    n_copied: int = 0
    max_copies: int = 0
    copies_mb: int = 0  # the copies' bounds in MB of trace text (`resources.MAX_TRACE_EXPORT_BYTES`), all and one
    copy_mb: int = 0
    truncated: Optional[Any] = None
    brief: bool = False  # a large run: neither drawn nor copied said in one sentence (on a thousand pages)


class Part(NamedTuple):
    """A built section and the CSV downloads it links (written beside the rank page)."""

    section: RankSection
    downloads: Sequence[Download] = ()
