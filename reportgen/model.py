"""Typed in-memory model of a profiled run: what the loaders produce and the analysis reads.

Over 500 lines: dataclasses, one per area of the report, and how a rank's communication and its data pickle (their
frames packed, some fields sealed: `framepack`, `sealed`); no logic to split.

Units are normalised at load time: every duration is in milliseconds.
"""

from __future__ import annotations

from reportgen import framepack
from reportgen.sealed import Sealed, SealedField, held
from reportgen.i18n import N_, Msg

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np
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
    "iteration_interval": N_("Step interval"),
    "fp_and_bp": N_("Forward + backward"),
    "tail": N_("Tail"),
    "total": N_("Step total"),
    "computing": N_("Computing"),
    "communication_not_overlapped": N_("Communication (not overlapped)"),
    "overlapped": N_("Overlapped"),
    "communication": N_("Communication"),
    "free": N_("Free"),
    "stage": N_("Stage"),
    "bubble": N_("Bubble"),
    "communication_not_overlapped_exclude_receive": N_("Communication (not overlapped, excl. receive)"),
    "preparing": N_("Preparing"),
}

# Parallel modes as the run's facts show them (ids from the metadata / file names), marked for translation.
PARALLEL_MODE_LABELS = (N_("pipeline-parallel"), N_("model-parallel"), N_("data-parallel"), N_("stand-alone"),
                        N_("semi-auto-parallel"), N_("auto-parallel"))

STEP_TRACE_KIND_LABELS: dict[str, str] = {
    "legacy": N_("MindInsight step trace (iteration interval / forward+backward / tail)"),
    "modern": N_("Ascend step_trace_time.csv (computing / communication / free / bubble)"),
    "host": N_("host step markers (ProfilerStep events): total step time only"),
}


@dataclass(frozen=True)
class DataIssue:
    """One problem with an input file: goes to the data-quality box and `summary.json`."""

    file: str  # path relative to the run root ("" for the run as a whole)
    problem: str
    severity: str = "warning"  # "error" | "warning" | "info"
    ranks: tuple[int, ...] = ()  # the ranks the problem concerns, when it is about ranks (a missing rank)
    # what it does to the numbers (the data-quality rule's severity, `rules.data_quality`): "numbers" (a rank's
    # numbers change or go missing: a damaged row skipped, a file cut off), "cosmetic" (nothing shown changes),
    # "" (not said: the rule decides from the severity and the problem)
    consequence: str = ""
    # the problem class, for entries from the loaders' door (loaders.schema): "impossible value", "empty table",
    # "duplicate", "conflict", "schema drift", "encoding", "truncation" ("" : not classed)
    kind: str = ""
    # the problem as a code with parameters (`reportgen.dataquality`): give `problem` as `dq(code, **params)` and
    # `problem` keeps its English text while `code` and `params` are filled in; "" / {} for a problem given as text
    code: str = ""
    params: dict = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        code = getattr(self.problem, "code", None)
        if isinstance(self.problem, Msg) and code:
            object.__setattr__(self, "code", code)
            object.__setattr__(self, "params", dict(self.problem.params))
            object.__setattr__(self, "problem", self.problem.en)

    def to_dict(self) -> dict:
        d = {"file": self.file, "problem": self.problem, "severity": self.severity}
        if self.ranks:
            d["ranks"] = [int(r) for r in self.ranks]
        if self.consequence:
            d["consequence"] = self.consequence
        if self.kind:
            d["kind"] = self.kind
        if self.code:
            d["code"] = self.code
            d["params"] = dict(self.params)
        return d


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
    # What produced the phases when it is not the kind's usual file (Kineto traces: computed here); the site may
    # show it instead of STEP_TRACE_KIND_LABELS[kind].
    label: str = ""
    # Steps measured but left out of `steps` (and so of averages, spreads and the slowest step): their end is not
    # known (Kineto: the last step, which no next step ends on the device). Same columns as `steps`.
    partial_steps: Optional[pd.DataFrame] = None

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
    distributed_args_source: str = ""  # where distributed_args came from when not profiler_metadata.json (DB export)
    device_model: Optional[str] = None  # the accelerator's name (Kineto deviceProperties: "NVIDIA A100-SXM4-80GB")
    device_memory_mb: Optional[float] = None  # its memory, MB = 2^20 bytes (deviceProperties totalGlobalMem)
    # Ascend: what msprof's info.json says about the chip ("ai_core_num", "aic_frequency_mhz", "platform_version")
    device_compute: dict = field(default_factory=dict)

    def __setstate__(self, state: dict) -> None:  # a rank read back (from a worker, the rank cache): its groups'
        for g in (state.get("parallel_groups") or {}).values():  # rank lists shared with the other ranks' (`shared_ranks`)
            if isinstance(g, dict) and type(g.get("global_ranks")) is list:
                g["global_ranks"] = shared_ranks(g["global_ranks"])
        vars(self).update(state)


_RANK_LISTS: dict[tuple, list] = {}


def shared_ranks(ranks: list) -> list:
    """One list object for equal lists of ranks in this process: every rank's profiler_metadata.json names the world
    group, so 4,096 ranks held 4,096 lists of 4,096 ranks (~600 MB of int objects); the readers never change them."""
    if len(ranks) < 64:
        return ranks
    key = tuple(ranks)
    got = _RANK_LISTS.get(key)
    if got is None:
        if len(_RANK_LISTS) > 4096:
            _RANK_LISTS.clear()
        got = _RANK_LISTS[key] = ranks
    return got


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
    # what the data was read from, for people, when the producer's name would mislead (the databases hold
    # communication.json's twin tables: producer "communication.json", label "CANN analysis.db ..."); "" otherwise
    label: str = ""
    # One row per collective instance (step, op, group, kind, key, start_ms, dur_ms, name) where the input records
    # each operator's start (Kineto traces; Ascend communication.json, analysis.db, COMMUNICATION_OP; msprof
    # timeline/hccl_*.json): `key` pairs the same instance across the ranks of a group (analysis.arrival).
    instances: Optional[pd.DataFrame] = None

    # pickled (to the main process, into the rank cache) with its frames packed (`framepack`): one text table for
    # all four, its chunks the texts of each group (operator names, instance labels and keys: the same chunk on
    # every rank of the group, decoded once), so that the ranks share their texts in memory and unpickle quickly.
    # The operators, links and instances (`_SEALED`: ~70 % of a rank's entry) are pickled sealed (`sealed.Sealed`,
    # with the table) and opened when one of them is first read (`sealed.SealedField`): a rebuild whose analysis
    # comes from the cache never reads them (`release_sealed`)
    def __getstate__(self) -> dict:
        own = self._opened()
        texts = framepack.Texts()
        columns, where = [], []
        for name, cols in (("ops", ("op",)), ("instances", ("op", "key", "name"))):
            frame = own.get(name)
            if frame is not None and "group" in frame.columns:
                groups = frame["group"].to_numpy(dtype=object)
                for c in cols:
                    if c in frame.columns:
                        columns.append((frame[c].to_numpy(dtype=object), groups))
                        where.append((name, c))
        chunks, codes = framepack.chunks_and_codes(columns)
        texts.add_chunks(chunks)
        known: dict = {}
        for (name, c), cc in zip(where, codes or ()):  # (the codes `pack` would look up, read off the chunks)
            known.setdefault(name, {})[c] = cc
        sealed = {k: framepack.pack(own[k], texts, known.get(k)) for k in _SEALED if k in own}
        state = {k: v for k, v in own.items() if k not in _SEALED}
        if "steps" in state:  # (its own table: the sealed frames' texts are not read with it)
            own_texts = framepack.Texts()
            state["steps"] = framepack.pack(state["steps"], own_texts)
            state["_framepack_texts"] = own_texts.payload()
        state["_sealed"] = (Sealed.of((sealed, texts.payload())),
                            {k: framepack.layout(v) for k, v in sealed.items()})
        return state

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        payload = state.pop("_framepack_texts", None)
        table = framepack.table(payload) if payload is not None else None
        for k in _COMM_FRAMES:
            if k in state:
                state[k] = framepack.unpack(state[k], table)
        vars(self).update(state)

    def _opened(self, name: Optional[str] = None) -> dict:
        """vars(self), the sealed frames opened (all of them, whichever `name` is read: they share their texts)."""
        return self._unseal()

    def open_alone(self, name: str) -> None:
        """Frame `name` opened, the others left sealed (they are opened without it when read): where only it is
        read (the analysis' waits in a forked copy of the build's process, `analysis._waits_beside`)."""
        self._unseal(only=name)

    def sealed_frames(self) -> tuple[dict, list]:
        """The frames this still holds sealed, packed (`framepack.pack`; `framepack.columns_of` reads their columns),
        and their texts' payload (`framepack.table`), opened without setting them on this (they stay sealed): where
        a few of their columns are read once (the cluster communication analysis, `analysis.comm_inputs`). ({}, [])
        where none is sealed."""
        own = vars(self)
        sealed = own.get("_sealed")
        if sealed is None:
            return {}, []
        frames, payload = sealed[0].open()
        return {k: v for k, v in frames.items() if k not in own}, payload

    def _unseal(self, only: Optional[str] = None) -> dict:
        """vars(self), the sealed frames (`only`: that one, the seal kept for the others) set on it, except a frame
        set since it was sealed, which is kept."""
        own = vars(self)
        sealed = own.get("_sealed")
        if sealed is None or (only is not None and (only in own or only not in sealed[1])):
            return own
        frames, payload = sealed[0].open()
        table = framepack.table(payload)
        for k, v in frames.items():
            if k not in own and only in (None, k):
                own[k] = framepack.unpack(v, table)
        if only is None:
            del own["_sealed"]
        return own

    def release_sealed(self, instances: bool) -> None:
        """What `analysis.communication.release_comm_inputs` (and `analysis.drop_instances` where `instances`) do to
        an analysed rank, without opening its sealed frames: the operators and links, still sealed, become their
        columns without rows (`framepack.empty`: one frame per layout), the instances None. A rank none of whose
        frames are sealed is left as it is (those functions do the same to it)."""
        own = vars(self)
        sealed = own.get("_sealed")
        if sealed is None:
            return
        for k, lay in sealed[1].items():
            if k in own or (k == "instances" and not instances):
                continue
            own[k] = None if k == "instances" else framepack.empty(lay)
        if all(k in own for k in sealed[1]):
            del own["_sealed"]


_COMM_FRAMES = ("steps", "ops", "links", "instances")
_SEALED = ("ops", "links", "instances")


for _name in _SEALED:  # (after the dataclass is made: its __init__ sets the fields on the rank as usual)
    setattr(Communication, _name, SealedField(_name, getattr(Communication, _name, SealedField.NONE)))

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


# --- operators -----------------------------------------------------------------------------------
# `side`: where the operator ran (a key of SIDE_LABELS). Totals are in ms; `share` is a fraction (0..1) of the side's total.
SIDE_LABELS: dict[str, str] = {"aicore": "AI Core", "aicpu": "AI CPU", "hostcpu": "Host CPU",
                               "communication": "Communication", "other": "Other", "gpu": "GPU"}
OP_TYPE_COLUMNS: tuple[str, ...] = ("side", "core", "op_type", "count", "total_ms", "avg_ms", "min_ms", "max_ms", "share")
OP_DETAIL_COLUMNS: tuple[str, ...] = ("side", "name", "op_type", "count", "total_ms", "avg_ms", "share")


@dataclass
class Operators:
    """One rank's operator statistics.

    `by_type`: one row per (side, core type, operator type) (`OP_TYPE_COLUMNS`; `core` is the profiler's core
    type, e.g. AI_CORE / MIX_AIC / AI_CPU / HOST_CPU); `detail`: one row per (side, operator)
    (`OP_DETAIL_COLUMNS`). `basis` says what the totals cover: "per step" (MindInsight's averaged files) or
    "profiled window" (every kernel the profiler recorded). `sources`: relative paths per side.
    """

    by_type: pd.DataFrame
    detail: pd.DataFrame
    basis: dict[str, str] = field(default_factory=dict)  # side -> "per step" | "profiled window"
    sources: dict[str, str] = field(default_factory=dict)  # side -> file


# --- FLOPs ---------------------------------------------------------------------------------------


@dataclass
class Flops:
    """One rank's floating-point work. MFLOPs = 1e6 operations, GFLOPS = 1e9 operations per second.

    `flops_m`/`flops_per_s_g` follow MindInsight: `FLOPs` (or cube + vector) and `FLOPS` (or cube + vector).
    `per_op`: name, mflops, gflops, util_pct (cube and vector columns when the file splits them).
    `per_step`: step, util_pct. `scopes`: Sankey links (source, target, value MFLOPs).
    """

    source: str
    flops_m: Optional[float] = None
    flops_per_s_g: Optional[float] = None
    utilization_pct: Optional[float] = None
    cube_m: Optional[float] = None
    vector_m: Optional[float] = None
    per_op: Optional[pd.DataFrame] = None
    per_step: Optional[pd.DataFrame] = None
    scopes: list[dict] = field(default_factory=list)


# --- operator FLOPs (efficiency) -------------------------------------------------------------------------------
OP_FLOPS_COLUMNS: tuple[str, ...] = ("step", "op", "shapes", "dtype", "basis", "count", "flops", "device_ms")


@dataclass
class OpFlops:
    """FLOPs of one rank's operators as the trace records them, per step.

    `ops`: one row per (step, op, shapes, dtype, basis) (`OP_FLOPS_COLUMNS`): `count` calls, `flops` in total
    (1 = one floating-point operation), `device_ms` the time of the device kernels they launched (NaN when no launch
    was found). `basis`: "shapes" (matrix multiplications, from their input shapes: loaders.op_flops) or "profiler"
    (the profiler's own count: Kineto `with_flops`). `step` is <NA> where no step holds the call. `dtype` is the
    peak table's data type ('bf16', 'fp32', ...; '' unknown). `with_flops`: the trace carries the profiler's counts.
    """

    source: str
    ops: pd.DataFrame
    with_flops: bool = False


# --- data preparation (MindData) -----------------------------------------------------------------


@dataclass
class DataPrep:
    """One rank's input pipeline.

    `ops`: op_id, op_type, num_workers, queue_avg, queue_length, usage_rate (0..1), parent_id, children (list),
    plus `empty_pct` and `cpu_pct` when the summary files give them. `host_queue`: step, size, capacity
    (the host-side "device queue" of `device_queue_profiling` / `dataset_iterator_profiling`);
    `host_times`: step, get_ms, push_ms, total_ms. `device_queue`: index, size, get_ms (the chip-side
    GetNext queue of `minddata_aicpu`). `mode`: "sink" (device_queue file) or "feed" (dataset_iterator file).
    `stage_times`: dataset.csv rows (operation, stage, occurrences, avg_ms).
    """

    sources: list[str] = field(default_factory=list)
    ops: Optional[pd.DataFrame] = None
    host_queue: Optional[pd.DataFrame] = None
    host_times: Optional[pd.DataFrame] = None
    device_queue: Optional[pd.DataFrame] = None
    mode: str = ""
    warnings: list[str] = field(default_factory=list)  # the profiler's own bottleneck_warning texts
    stage_times: Optional[pd.DataFrame] = None

    @property
    def has_data(self) -> bool:
        return any(x is not None and len(x) for x in (self.ops, self.host_queue, self.device_queue,
                                                         self.stage_times))


@dataclass
class CpuUsage:
    """Host CPU utilisation samples (`minddata_cpu_utilization_{rank}.json`), in % per sample.

    `machine`: sample, user, sys, io, idle (machine-wide); `process`: sample, user, sys; `ops`: op_id, op_type,
    num_workers, user, sys (averages). `cpu_count`: processors on the host.
    """

    source: str
    machine: pd.DataFrame
    process: pd.DataFrame
    ops: pd.DataFrame
    cpu_count: Optional[int] = None
    interval_ms: Optional[float] = None


# --- memory --------------------------------------------------------------------------------------


@dataclass
class Memory:
    """One rank's device memory, in MB (2^20 bytes, as the profilers write it).

    `peak_mb`: the highest memory in use (MindInsight `peak_mem`; torch_npu: max reserved of the whole process
    (APP), else of the allocator); `capacity_mb` when the profiler records it. `curve`: x, used_mb (+ reserved_mb
    / allocated_mb), where x is the execution order (MindInsight) or ms since the first sample. `top`: the
    biggest allocations: name, size_mb, duration_ms. `components`: component, peak_mb (npu_module_mem).
    """

    source: str
    peak_mb: Optional[float] = None
    capacity_mb: Optional[float] = None
    capacity_source: str = ""
    static_mb: Optional[float] = None
    allocated_peak_mb: Optional[float] = None
    curve: Optional[pd.DataFrame] = None
    curve_x: str = "execution order"
    top: Optional[pd.DataFrame] = None
    components: Optional[pd.DataFrame] = None
    sources: list[str] = field(default_factory=list)


# --- timeline ------------------------------------------------------------------------------------


@dataclass
class TimelineSummary:
    """What a rank's timeline file holds: span, operator counts, merged compute / communication, free (ms).

    `source` is the Chrome-trace file (relative path) a viewer such as Perfetto can open; `trace_needs_numbers`:
    its timestamps are strings (torch_npu/MindSpore 2.3+) and must be converted for Perfetto.
    """

    source: str
    span_ms: Optional[float] = None
    n_ops: int = 0
    n_streams: int = 0
    compute_ms: Optional[float] = None
    communication_ms: Optional[float] = None
    pure_communication_ms: Optional[float] = None
    free_ms: Optional[float] = None
    trace_bytes: int = 0
    trace_needs_numbers: bool = False
    truncated: bool = False


@dataclass
class RankData:
    """Everything loaded for one rank. Produced by `layouts.load_rank`, a pure function of one rank's files."""

    info: RankInfo
    step_trace: Optional[StepTrace] = None
    communication: Optional[Communication] = None
    overlap: Optional[Overlap] = None
    operators: Optional[Operators] = None
    flops: Optional[Flops] = None
    op_flops: Optional[OpFlops] = None  # FLOPs of operators from shapes / the profiler's counts (efficiency)
    dataprep: Optional[DataPrep] = None
    cpu: Optional[CpuUsage] = None
    memory: Optional[Memory] = None
    timeline: Optional[TimelineSummary] = None
    idle: Optional[Any] = None  # reportgen.idle.IdleBreakdown: idle time by cause per step (Kineto)
    # the analyses' per-rank figures (`analysis.per_rank.RankFigures`), computed where the rank was loaded
    figures: Optional[Any] = None
    files: list[str] = field(default_factory=list)  # relative paths that were read
    issues: list[DataIssue] = field(default_factory=list)
    # the key paths of each small JSON file read whole (relative path -> paths such as "DeviceInfo[].id"), for the
    # cross-rank schema check (`loaders.schema.compare_shapes`): a key every other rank's copy has is named
    json_shapes: dict[str, frozenset] = field(default_factory=dict)

    # pickled (to the main process, into the rank cache) with the fields only the rank's page reads in a rebuild
    # (`_RANK_SEALED`) sealed (`sealed.Sealed`), each opened when first read (`sealed.SealedField`): the page
    # writers forked after the analysis open them, not the main process reading the rank cache (~0.2 s at 1,024 ranks)
    def __getstate__(self) -> dict:
        state = dict(vars(self))
        sealed = dict(state.pop("_sealed", None) or {})  # (still sealed: pickled as they came)
        for k in _RANK_SEALED:
            if k in state:  # (opened, or set since it was sealed: as it is now)
                sealed.pop(k, None)
                if state[k] is not None:
                    sealed[k] = Sealed.of(state.pop(k))
        if sealed:
            state["_sealed"] = sealed
        return state

    def holds(self, name: str) -> bool:
        """Whether field `name` is set (not None), without opening it where it is still sealed (the coverage counts
        the ranks with operators: opening every rank's to see it cost ~2 s at 4,096 ranks)."""
        own = vars(self)
        if name in own:
            return own[name] is not None
        return held(self, name) is not None or getattr(self, name, None) is not None

    def _opened(self, name: str) -> dict:
        """vars(self), field `name` opened if it is sealed."""
        own = vars(self)
        sealed = own.get("_sealed")
        if sealed and name in sealed:
            if name not in own:  # (a value set since it was sealed is kept)
                own[name] = sealed[name].open()
            del sealed[name]
            if not sealed:
                del own["_sealed"]
        return own


_RANK_SEALED = ("operators", "memory")
for _name in _RANK_SEALED:
    setattr(RankData, _name, SealedField(_name, getattr(RankData, _name, SealedField.NONE)))


@dataclass
class RunInfo:
    """Run-wide facts."""

    path: str
    layout: str  # "mindinsight" | "ascend" | "msprof" | "kineto" | "cluster_analysis"
    layout_label: str
    parallel_mode: str = "stand-alone"
    parallel_mode_source: str = "default"
    parallel_mode_raw: str = ""  # the profiler's own name (auto_parallel, semi_auto_parallel, ...)
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
    strategy: Optional["ParallelStrategy"] = None
    execution: Optional["ExecutionData"] = None

    @property
    def rank_ids(self) -> list[int]:
        return sorted(self.ranks)

    def all_issues(self) -> list[DataIssue]:
        out = list(self.issues)
        for r in self.rank_ids:
            out.extend(self.ranks[r].issues)
        return out


# --- strategy perception (parallel_strategy_{rank}.json) ------------------------------------------------------


@dataclass
class StrategyOp:
    """One operator of a stage's computational graph (MindSpore `parallel_strategy_{rank}.json`)."""

    id: str  # node id in the file
    name: str  # full name (scope/Type-opN)
    op_type: str
    scope: str
    order: int  # position in the file = execution order
    instance: str = ""  # "" | "GradientAggregation" | "Redistribution"
    strategy: list[list[int]] = field(default_factory=list)  # per input: split count of each dimension
    groups: list[str] = field(default_factory=list)  # communication groups, unioned over the stage's ranks
    group_ranks: str = ""
    inputs: list[str] = field(default_factory=list)  # node ids, parameter names or constant keys
    attrs: dict[str, str] = field(default_factory=dict)  # small attributes (sr_tag, dest_rank, micro, ...)
    output: str = ""  # output type text


@dataclass
class StageStrategy:
    stage: int  # 0-based
    ranks: list[int]  # ranks whose files were merged (the first one's graph is kept)
    ops: list[StrategyOp]
    parameters: list[str] = field(default_factory=list)
    expected_ranks: list[int] = field(default_factory=list)  # from the files' stage layout
    source: str = ""  # the file whose graph is kept


@dataclass
class ParallelStrategy:
    parallel_type: str
    stages: list[StageStrategy]
    stage_devices: list[list[int]] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)


# --- execution overview (operators of chosen steps) -----------------------------------------------------------



@dataclass
class StepOps:
    """The device operators of one rank in one step, times in ms from the rank's own step start."""

    rank: int
    step: int
    source: str
    step_ms: float  # the step window's length
    names: list[str]
    classes: list[str]  # one of collectives.OP_CLASSES
    start: "np.ndarray"
    dur: "np.ndarray"
    window: str = ""  # how the step window was found
    # The timeline's lanes: the trace's process / thread of each operator ("Ascend Hardware · Stream 3") and its
    # input shapes when the trace records them; empty when the loader does not know them (lanes by class then).
    lanes: list[str] = field(default_factory=list)
    shapes: list[str] = field(default_factory=list)
    # Host dispatch of the step (torch_npu's CANN AscendCL calls and task-queue enqueue / dequeue): names, lanes
    # ("CANN · Thread 123"), starts and durations (ms from the same step start, so usually before the device's
    # operators) and the index of the device operator each one launched (-1: none found). Not operators of the
    # device: the execution analysis never reads them; the timeline draws them on their own lanes.
    host_names: list[str] = field(default_factory=list)
    host_lanes: list[str] = field(default_factory=list)
    host_start: list[float] = field(default_factory=list)
    host_dur: list[float] = field(default_factory=list)
    host_launch: list[int] = field(default_factory=list)


@dataclass
class ExecutionData:
    """Operators of the steps chosen for the Marey view, per step and rank (only those steps are kept)."""

    steps: list[int]  # chosen steps, the representative one first
    reasons: dict[int, str]  # step -> why it was chosen
    ops: dict[int, dict[int, StepOps]]  # step -> rank -> operators
    ranks: list[int]  # ranks whose timelines were read
    skipped_ranks: list[int] = field(default_factory=list)  # ranks with a timeline not read (device cap)
    notes: list[str] = field(default_factory=list)
