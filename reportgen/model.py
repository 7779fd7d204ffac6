"""Typed in-memory model of a profiled run: what the loaders produce and the analysis reads.

Units are normalised at load time: every duration is in milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pandas as pd

# --- step-trace phases -------------------------------------------------------------------------
# Each step-trace "kind" has its own phase columns; `total_ms` is always present.

LEGACY_PHASES: tuple[str, ...] = ("iteration_interval", "fp_and_bp", "tail", "total")
MODERN_PHASES: tuple[str, ...] = (
    "computing",
    "communication_not_overlapped",
    "overlapped",
    "communication",
    "free",
    "stage",
    "bubble",
    "communication_not_overlapped_exclude_receive",
    "preparing",
    "total",
)
HOST_PHASES: tuple[str, ...] = ("total",)

PHASES_BY_KIND: dict[str, tuple[str, ...]] = {
    "legacy": LEGACY_PHASES,
    "modern": MODERN_PHASES,
    "host": HOST_PHASES,
}

# Phases that add up to the step's total, in stacking order (used by breakdown charts).
STACKED_PHASES: dict[str, tuple[str, ...]] = {
    "legacy": ("iteration_interval", "fp_and_bp", "tail"),
    "modern": ("computing", "communication_not_overlapped_exclude_receive", "bubble", "free"),
    "host": ("total",),
}

PHASE_LABELS: dict[str, str] = {
    "iteration_interval": "Step interval",
    "fp_and_bp": "Forward + backward",
    "tail": "Tail",
    "total": "Step total",
    "computing": "Computing",
    "communication_not_overlapped": "Communication (not overlapped)",
    "overlapped": "Overlapped",
    "communication": "Communication",
    "free": "Free",
    "stage": "Stage",
    "bubble": "Bubble",
    "communication_not_overlapped_exclude_receive": "Communication (not overlapped, excl. receive)",
    "preparing": "Preparing",
}

STEP_TRACE_KIND_LABELS: dict[str, str] = {
    "legacy": "MindInsight step trace (iteration interval / forward+backward / tail)",
    "modern": "Ascend step_trace_time.csv (computing / communication / free / bubble)",
    "host": "host step markers (ProfilerStep events): total step time only",
}


@dataclass(frozen=True)
class DataIssue:
    """One problem with an input file: goes to the data-quality box and `summary.json`."""

    file: str  # path relative to the run root ("" for the run as a whole)
    problem: str
    severity: str = "warning"  # "error" | "warning" | "info"

    def to_dict(self) -> dict:
        return {"file": self.file, "problem": self.problem, "severity": self.severity}


@dataclass
class StepTrace:
    """Per-step phase durations of one rank, in milliseconds.

    `steps` has a column `step` (int, or <NA> when the profiler recorded no step id) and one
    float column per phase of `PHASES_BY_KIND[kind]`. `stored_average` is the average the
    profiler itself wrote (MindInsight's `-` row), when there is one.
    """

    kind: str
    steps: pd.DataFrame
    source: str
    stored_average: Optional[dict[str, float]] = None
    stored_average_note: str = ""
    device: Optional[int] = None  # Device_id column of step_trace_time.csv, when written
    # Legacy step traces only, on the device clock in ms: each step's [start, end] window (step, start_ms,
    # end_ms) and the communication (reduce) events of its extra columns (step, name, start_ms, end_ms).
    windows: Optional[pd.DataFrame] = None
    comm_events: Optional[pd.DataFrame] = None

    @property
    def phases(self) -> tuple[str, ...]:
        return PHASES_BY_KIND[self.kind]


@dataclass
class RankInfo:
    """Facts about one rank, from file names and metadata files."""

    rank: int
    source_dir: str  # relative to the run root
    host: Optional[str] = None
    device: Optional[int] = None
    framework: Optional[str] = None  # "MindSpore" | "torch_npu" | "PyTorch"
    versions: dict[str, str] = field(default_factory=dict)
    profiler_level: Optional[str] = None
    export_type: Optional[str] = None
    parallel_mode: Optional[str] = None  # raw value from the rank's metadata
    stage_num: Optional[int] = None
    rank_size: Optional[int] = None
    distributed_args: dict = field(default_factory=dict)
    parallel_groups: dict = field(default_factory=dict)  # group id -> {group_name, global_ranks}


# --- communication -------------------------------------------------------------------------------
# Column sets of the frames in `Communication` (units: ms, MB = 1e6 bytes, GB/s = MB/ms).
COMM_TIME_COLUMNS: tuple[str, ...] = ("communication_ms", "transit_ms", "wait_ms", "sync_ms", "idle_ms")
COMM_OP_COLUMNS: tuple[str, ...] = ("step", "op", "group", "kind", *COMM_TIME_COLUMNS,
                                    "sdma_mb", "sdma_ms", "rdma_mb", "rdma_ms")
COMM_LINK_COLUMNS: tuple[str, ...] = ("step", "scope", "op", "group", "src", "dst", "transport", "time_ms", "size_mb",
                                      "bandwidth_gbps", "stored_bandwidth_gbps", "wait_ms")


@dataclass
class Communication:
    """One rank's collective-communication data, normalised to ms / MB / GB/s.

    `steps`: the producer's per-step totals (MindInsight's `communication_cost`/`wait_cost` columns, or the sum
    over operators). `ops`: one row per communication operator and step (`COMM_OP_COLUMNS`); `step` is <NA> on the rows of a
    stored average (MindInsight's `-` row). `communication_ms` is the producer's "communication time"
    (MindInsight: link time, wait excluded; CANN: the op's elapse, wait included).
    `links`: one row per (step, scope, op, group, src, dst, transport) (`COMM_LINK_COLUMNS`); `scope` is
    "step" (all ops of a step), "op" (one operator), "total" (CANN's per-op-type total) or "sample" (CANN's
    top/middle/bottom operators). `src`/`dst` are the ranks as the producer wrote them; `local_links` says
    whether they are group-local ranks that need mapping to global ranks.
    `self_local`: group -> this rank's group-local rank (from self links and parallel_group_info).
    """

    source: str
    producer: str  # "hccl_raw" | "hccl_trace" | "msprof_hccl" | "communication.json"
    steps: pd.DataFrame  # step + COMM_TIME_COLUMNS: the rank's totals per step (<NA> step: stored average)
    ops: pd.DataFrame
    links: pd.DataFrame
    stored_average: bool = False  # ops/links hold a trustworthy stored-average row (step <NA>)
    local_links: bool = True
    self_local: dict[str, int] = field(default_factory=dict)
    unit_note: str = ""


# --- communication/computation overlap (MindInsight's cluster-analyse columns) --------------------------
OVERLAP_COLUMNS: tuple[str, ...] = ("computation", "communication_alone", "stage", "receive_alone",
                                    "collective_alone", "free")


@dataclass
class Overlap:
    """One rank's communication/computation overlap per step, in ms (MindInsight's model/pipeline view).

    `steps` has `step` (Int64) and `OVERLAP_COLUMNS` (NaN where the source has no such column; `stage`,
    `receive_alone` and `collective_alone` exist only for pipeline runs, `free` only when recomputed from a
    timeline) plus `step_duration` when known. `producer` is "cluster_analyse" (the profiler's
    `ascend_cluster_analyse_*.csv`) or "timeline" (recomputed here from the operator timeline with the
    profiler's own algorithm). `check` is the timeline recomputation kept beside a cluster-analyse file,
    for the cross-check.
    """

    source: str
    producer: str
    steps: pd.DataFrame
    pipeline: bool = False
    stored_average: Optional[dict[str, float]] = None
    coverage_note: str = ""
    check: Optional["Overlap"] = None


@dataclass
class RankData:
    """Everything loaded for one rank. Produced by `loaders.load_rank`, a pure function of one rank's files."""

    info: RankInfo
    step_trace: Optional[StepTrace] = None
    communication: Optional[Communication] = None
    overlap: Optional[Overlap] = None
    files: list[str] = field(default_factory=list)  # relative paths that were read
    issues: list[DataIssue] = field(default_factory=list)


@dataclass
class RunInfo:
    """Run-wide facts."""

    path: str
    layout: str  # "mindinsight" | "ascend" | "msprof" | "kineto" | "cluster_analysis"
    layout_label: str
    parallel_mode: str = "stand-alone"
    parallel_mode_source: str = "default"
    stages: int = 1
    rank_size: Optional[int] = None
    stage_of_rank: dict[int, int] = field(default_factory=dict)  # 0-based
    stage_source: str = ""  # how stages were found
    parallel_index: dict[int, dict[str, int]] = field(default_factory=dict)  # rank -> {"dp","pp","tp"(,"cp")}
    parallel_sizes: dict[str, int] = field(default_factory=dict)  # "tp", "pp", "dp", "cp" when known
    notes: list[str] = field(default_factory=list)


@dataclass
class Run:
    """A loaded run: run-wide info, one `RankData` per rank, and run-level data issues."""

    root: Path
    info: RunInfo
    ranks: dict[int, RankData]
    issues: list[DataIssue] = field(default_factory=list)

    @property
    def rank_ids(self) -> list[int]:
        return sorted(self.ranks)

    def all_issues(self) -> list[DataIssue]:
        out = list(self.issues)
        for r in self.rank_ids:
            out.extend(self.ranks[r].issues)
        return out
