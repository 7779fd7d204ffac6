"""Load a discovered run into the typed model. Only this package reads input files.

`load_rank` is a pure function of one rank's files, so ranks can be loaded in parallel processes.
"""

from __future__ import annotations

from reportgen.i18n import N_

import os
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional

import functools
import types

from reportgen.loaders import communication as _communication
from reportgen.loaders import cpu_usage as _cpu_usage
from reportgen.loaders import dataprep as _dataprep
from reportgen.loaders import db as _db
from reportgen.loaders import flops as _flops
from reportgen.loaders import gpu as _gpu
from reportgen.loaders import host_steps as _host_steps
from reportgen.loaders import kineto as _kineto
from reportgen.loaders import memory as _memory
from reportgen.loaders import metadata as _metadata
from reportgen.loaders import op_flops as _op_flops
from reportgen.loaders import operators as _operators
from reportgen.loaders import overlap as _overlap
from reportgen.loaders import step_ops as _step_ops
from reportgen.loaders import step_trace as _step_trace
from reportgen.loaders import strategy as _strategy
from reportgen.loaders import timeline as _timeline
from reportgen.loaders import trace_view as _trace_view
from reportgen.loaders.common import IssueLog
from reportgen.loaders.dispatch import map_ranks
from reportgen.loaders.run_info import build_run_info
from reportgen.loaders.schema import compare_shapes
from reportgen.model import DataIssue, ExecutionData, RankData, RankInfo, Run

if TYPE_CHECKING:
    from reportgen.discover import RankFiles, RunLayout

PARALLEL_MIN_RANKS = 64


class _Guarded:
    """A loader module whose functions never raise into the report: an unexpected exception while reading a file
    (a defect the loader's own checks missed) becomes an error entry naming the file, and the function returns
    its empty value, so the rank (and the run) go on. Classes and constants pass through unchanged."""

    _EMPTY: dict[str, Callable[[], object]] = {"load_aicpu": lambda: None, "read_step_ops": dict,
                                               "load_cluster_step_trace": dict, "cluster_stage_sets": list,
                                               "summarize_trace": lambda: None, "operator_parts": list,
                                               "load_execution": lambda: False}

    def __init__(self, module: types.ModuleType) -> None:
        self._m = module

    def __getattr__(self, name: str):
        v = getattr(self._m, name)
        if not isinstance(v, types.FunctionType) or name.startswith("_"):
            return v
        empty = self._EMPTY.get(name, lambda: None)

        @functools.wraps(v)
        def run(*args, **kw):
            try:
                return v(*args, **kw)
            except Exception as e:  # noqa: BLE001 - the safety net: named, never fatal
                log = next((a for a in (*args, *kw.values()) if isinstance(a, IssueLog)), None)
                if log is None:
                    raise
                path = next((a for a in (*args, *kw.values()) if isinstance(a, Path)), None)
                if path is None:
                    path = next((x for a in (*args, *kw.values()) if isinstance(a, dict)
                                 for x in a.values() if isinstance(x, Path)), log.root)
                log.add(path, f"could not be read ({type(e).__name__}: {str(e)[:160]}); skipped", "error")
                return empty()
        return run


communication = _Guarded(_communication)
cpu_usage = _Guarded(_cpu_usage)
dataprep = _Guarded(_dataprep)
db = _Guarded(_db)
flops = _Guarded(_flops)
gpu = _Guarded(_gpu)
host_steps = _Guarded(_host_steps)
kineto = _Guarded(_kineto)
memory = _Guarded(_memory)
metadata = _Guarded(_metadata)
op_flops = _Guarded(_op_flops)
operators = _Guarded(_operators)
overlap = _Guarded(_overlap)
step_ops = _Guarded(_step_ops)
step_trace = _Guarded(_step_trace)
strategy = _Guarded(_strategy)
timeline = _Guarded(_timeline)
trace_view = _Guarded(_trace_view)


def load_rank(rf: "RankFiles", root: Path, layout: str) -> RankData:
    """Load everything the report needs from one rank's files."""
    log = IssueLog(root, rf.rank)
    info = RankInfo(rank=rf.rank, source_dir=log.rel(rf.dir), host=rf.host, device=rf.device)
    data = RankData(info=info)
    seen: set[str] = set()
    for paths in rf.files.values():
        for p in paths:
            rel = log.rel(p)
            if rel not in seen:
                seen.add(rel)
                data.files.append(rel)
    if layout == "ascend":
        _load_ascend(rf, data, log)
    elif layout == "mindinsight":
        _load_mindinsight(rf, data, log)
    elif layout == "msprof":
        dev = rf.first("msprof_device")
        if dev is not None:
            metadata.load_msprof_info(dev, info, log)
            data.step_trace = step_trace.load_msprof_step_trace(dev, log)
            data.communication = communication.load_msprof_hccl(dev, log)
            data.overlap = overlap.load_msprof_overlap(dev, log, _step_totals(data.step_trace)[1])
        info.framework = "MindSpore"
    elif layout == "kineto":
        info.framework = "PyTorch"
        p = rf.first("kineto_trace")
        if p is not None:
            k = kineto.load_kineto(p, data, log)
            if k is not None:  # None: the guard named the file in data quality
                data.step_trace, data.communication, data.operators = k.step_trace, k.communication, k.operators
                data.memory, data.timeline = k.memory, k.timeline
                data.idle = getattr(k, "idle", None)
                data.op_flops = k.op_flops
    data.issues = log.issues
    data.json_shapes = log.shapes
    return data


def _load_ascend(rf: "RankFiles", data: RankData, log: IssueLog) -> None:
    _load_resources(rf, data, log)
    info = data.info
    info.framework = "torch_npu" if rf.dir.name.endswith("_ascend_pt") else (
        "MindSpore" if rf.dir.name.endswith("_ascend_ms") else None)
    for p in rf.files.get("profiler_info", []):
        metadata.load_profiler_info(p, info, log)
    p = rf.first("profiler_metadata")
    if p is not None:
        metadata.load_profiler_metadata(p, info, log)
    metadata.load_chip_info(rf.dir, info, log)  # the chip type, AI Core count and clock (efficiency)
    if rf.first("kernel_details.csv") is not None:  # GEMM FLOPs from the kernels' shapes (efficiency)
        data.op_flops = op_flops.load_kernel_gemms(rf.first("kernel_details.csv"), log)
    stt = rf.first("step_trace_time.csv")
    tv = rf.first("trace_view.json")
    if stt is not None:
        data.step_trace = step_trace.load_modern_step_trace(stt, log)
        if info.device is None and data.step_trace is not None:
            info.device = data.step_trace.device
    comm, matrix = rf.first("communication.json"), rf.first("communication_matrix.json")
    if comm is not None or matrix is not None:
        data.communication = communication.load_modern_communication(comm, matrix, log, info.parallel_groups,
                                                                     info.rank)
    # export_type=db: whatever the text files did not give comes from the DB files (and unread ones are named)
    db.load_db_rank(rf, data, log, text_step_trace=data.step_trace is not None)
    if data.step_trace is None and tv is not None:
        data.step_trace = trace_view.load_trace_view_step_trace(tv, log)
        if data.step_trace is not None:
            log.add(tv, "no step_trace_time.csv; computing/communication/free per step summed from the "
                    "trace's Overlap Analysis lanes, as torch_npu does", "info")
    if data.step_trace is None and tv is not None:
        data.step_trace = host_steps.load_host_steps(tv, log)
        if data.step_trace is not None:
            log.add(tv, "no step_trace_time.csv; step times are host ProfilerStep durations from "
                    "trace_view.json (no computing/communication split)", "info")
    if data.step_trace is None:
        if any(k.startswith("framework/cpu_") for k in rf.files):
            log.add(rf.dir, "MindSpore CPU profiler output: it writes no step trace, so no step times "
                    "for this rank", "info")
        elif rf.dir.name.startswith("PROF_"):
            log.add(rf.dir, "no step trace in the msprof database (it needs the STEP_TIME and OVERLAP_ANALYSIS "
                    "tables) for this rank", "warning")
        else:
            log.add(rf.dir, "no step trace (ASCEND_PROFILER_OUTPUT/step_trace_time.csv) for this rank", "warning")


def _load_mindinsight(rf: "RankFiles", data: RankData, log: IssueLog) -> None:
    _load_resources(rf, data, log)
    info = data.info
    info.framework = "MindSpore"
    p = rf.first("profiler_info.json")
    if p is not None:
        metadata.load_profiler_info(p, info, log)
    st = rf.first("step_trace_raw_detail_time.csv")
    if st is not None:
        data.step_trace = step_trace.load_legacy_step_trace(st, log)
    dev = rf.first("msprof_device")
    if dev is not None:
        metadata.load_msprof_info(dev, info, log)
        if data.step_trace is None:
            data.step_trace = step_trace.load_msprof_step_trace(dev, log)
    hccl = rf.first("hccl_raw.csv")
    if hccl is not None:
        data.communication = communication.load_hccl_raw(hccl, log, info.versions.get("MindSpore"))
    if data.communication is None and rf.files.get("hccl_trace"):
        data.communication = communication.load_hccl_traces(rf.files["hccl_trace"], data.step_trace, log)
    if data.communication is None and dev is not None:
        data.communication = communication.load_msprof_hccl(dev, log)
    if data.step_trace is None and st is None:
        log.add(rf.dir, f"no step_trace_raw_{rf.rank}_detail_time.csv for rank {rf.rank}", "info")
    _load_legacy_overlap(rf, data, log)
    if gpu.is_gpu(rf) and data.communication is None and rf.rank == min_rank(rf):
        log.add(rf.dir, "MindSpore GPU output: no per-operator communication file exists on GPU (hccl_raw is "
                "Ascend-only), so the Communication page is empty; the step trace's reduce columns and "
                "gpu_cluster_analyse_* give the communication time per step (Step trace and Overlap pages)", "info")


def min_rank(rf: "RankFiles") -> int:
    """The lowest rank whose files sit in `rf.dir` (run-level notes are written once, by that rank)."""
    import re as _re

    ids = [int(m.group(1)) for p in rf.dir.glob("step_trace_raw_*_detail_time.csv")
           if (m := _re.match(r"^step_trace_raw_(\d+)_", p.name))]
    return min(ids) if ids else rf.rank


def _load_resources(rf: "RankFiles", data: RankData, log: IssueLog) -> None:
    """Operators, FLOPs, data preparation, CPU utilisation, memory and the timeline (rank pages)."""
    f = rf.first
    data.operators = _load_operators(rf, log)
    if f("flops_summary.json") or f("flops.txt"):
        data.flops = flops.load_flops(f("flops_summary.json"), f("flops.txt"), f("flops_scope.json"),
                                      f("flops_utilization_step.json") or f("flops_utilization_step.txt"), log)
    data.dataprep = dataprep.load_dataprep({
        "pipeline_raw": f("minddata_pipeline_raw.csv"), "pipeline_profiling": f("pipeline_profiling.json"),
        "summary": f("minddata_pipeline_summary.json") or f("minddata_pipeline_summary.csv"),
        "device_queue": f("device_queue_profiling.txt"), "dataset_iterator": f("dataset_iterator_profiling.txt"),
        "aicpu": f("minddata_aicpu.txt") or f("minddata_getnext_profiling.txt"), "dataset_csv": f("dataset.csv"),
    }, log)
    cpu = f("minddata_cpu_utilization.json")
    if cpu is not None:
        types = {}
        ops = data.dataprep.ops if data.dataprep is not None else None
        if ops is not None:
            types = {int(r.op_id): (r.op_type, r.num_workers) for r in ops.itertuples()}
        data.cpu = cpu_usage.load_cpu_usage(cpu, log, types)
    data.memory = (memory.load_mindinsight_memory(f("memory_usage_summary.json"), f("memory_usage_details.json"),
                                                  f("memory_usage.pb"), log)
                   or memory.load_modern_memory(f("memory_record.csv"), f("operator_memory.csv"),
                                                f("npu_module_mem.csv"), log))
    if data.memory is None and f("cpu_ms_memory_record.txt") is not None:
        data.memory = memory.load_cpu_memory(f("cpu_ms_memory_record.txt"), log)
    trace = timeline_file(rf)
    if trace is None and f("gpu_timeline_display.json") is not None:
        data.timeline = gpu.summarize_gpu_timeline(f("gpu_timeline_display.json"), log, f("gpu_timeline_summary.json"))
    if trace is not None:
        data.timeline = timeline.summarize_trace(
            trace, log, f("ascend_timeline_summary.json") or f("timeline_summary.json"))


def _load_operators(rf: "RankFiles", log: IssueLog):
    f = rf.first
    if f("kernel_details.csv") is not None or f("op_statistic.csv") is not None:
        return operators.load_modern(f("kernel_details.csv"), f("op_statistic.csv"), log)
    parts: list = []
    t = f("aicore_intermediate_type.csv")
    d = f("aicore_intermediate_detail.csv")
    at = operators.load_aicore_type(t, log) if t is not None else None
    ad = operators.load_aicore_detail(d, log, f("framework_raw.csv")) if d is not None else None
    src = t or d
    if at is None and f("output_op_compute_time_detail.txt") is not None:
        at = operators.load_compute_time_detail(f("output_op_compute_time_detail.txt"), log)
        src = src or f("output_op_compute_time_detail.txt")
    if ad is None and f("output_op_compute_time.txt") is not None:
        ad = operators.load_compute_time(f("output_op_compute_time.txt"), log)
        src = src or f("output_op_compute_time.txt")
    if at is not None or ad is not None:
        parts.append(("aicore", log.rel(src), at, ad, "per step"))
    ac = f("aicpu_intermediate.csv")
    if ac is not None:
        res = operators.load_aicpu(ac, log)
        if res is not None:
            parts.append(("aicpu", log.rel(ac), res[0], res[1], "profiled window"))
    if gpu.is_gpu(rf):
        parts.extend(gpu.operator_parts(rf, log))
    ct, cd = f("cpu_op_type_info.csv"), f("cpu_op_detail_info.csv")
    if ct is not None or cd is not None:
        parts.append(("hostcpu", log.rel(ct or cd), operators.load_cpu_type(ct, log) if ct is not None else None,
                      operators.load_cpu_detail(cd, log) if cd is not None else None, "profiled window"))
    return operators.assemble(parts)


def _step_totals(t) -> tuple[Optional[list[int]], Optional[dict]]:
    """Step ids of a step trace and {step: total ms, "average": the stored or mean total}."""
    if t is None or not len(t.steps):
        return None, None
    ids = [int(x) for x in t.steps["step"].dropna()]
    totals: dict = dict(zip(ids, t.steps.dropna(subset=["step"])["total"].astype(float)))
    avg = (t.stored_average or {}).get("total")
    totals["average"] = float(avg) if avg else float(t.steps["total"].mean())
    return ids, totals


def _load_legacy_overlap(rf: "RankFiles", data: RankData, log: IssueLog) -> None:
    """The profiler's overlap file, and the recomputation from the timeline when its inputs are there."""
    ids, totals = _step_totals(data.step_trace)
    ca = rf.first("cluster_analyse")
    summary = overlap.load_cluster_analyse(ca, log, ids, totals) if ca is not None else None
    tl = rf.first("output_timeline_data.txt")
    recomputed = overlap.load_timeline_overlap(tl, data.step_trace, log) if tl is not None else None
    if summary is not None:
        summary.check = recomputed
        data.overlap = summary
    else:
        data.overlap = recomputed
    dev = rf.first("msprof_device")
    if data.overlap is None and dev is not None:
        data.overlap = overlap.load_msprof_overlap(dev, log, totals)


def load_run(layout: "RunLayout", jobs: int = 1,
             progress: Optional[Callable[[int, int], None]] = None, scheduler: Optional[str] = None) -> Run:
    """Load every rank of `layout` and the run-level files. The ranks are loaded by `load_rank` (one pure function
    per rank, a picklable summary back): in `jobs` processes when the run is large, or on the Dask cluster at
    `scheduler` (`loaders.dispatch`)."""
    root = layout.root
    ranks: dict[int, RankData] = {}
    issues: list[DataIssue] = list(layout.issues)
    stage_sets: list[list[int]] = []
    items = sorted(layout.ranks.items())
    if layout.layout == "cluster_analysis":
        log = IssueLog(root)
        traces = step_trace.load_cluster_step_trace(layout.run_files["cluster_step_trace_time"][0], log)
        for rank, rf in items:
            info = RankInfo(rank=rank, source_dir=log.rel(rf.dir))
            ranks[rank] = RankData(info=info, step_trace=traces.get(rank))
        meta = layout.run_files.get("profiler_metadata")
        if meta and ranks:
            first = ranks[min(ranks)].info
            metadata.load_profiler_metadata(meta[0], first, log)
        stage_sets = step_trace.cluster_stage_sets(layout.run_files["cluster_step_trace_time"][0], log)
        issues.extend(log.issues)
        issues.append(DataIssue(log.rel(layout.run_files["cluster_step_trace_time"][0]),
                                "only msprof-analyze's cluster-level output is present; per-rank pages show "
                                "what that file holds", "info"))
    else:
        for d in map_ranks(load_rank, [rf for _, rf in items], (root, layout.layout), jobs=jobs,
                           scheduler=scheduler, min_parallel=PARALLEL_MIN_RANKS, progress=progress):
            ranks[d.info.rank] = d
    compare_shapes(ranks, issues)
    if layout.layout == "kineto":
        kineto.match_collectives(ranks, issues)
        issues.append(DataIssue("", kineto.run_note(ranks), "info"))
    strat = _load_strategy(layout, ranks, issues)
    if strat is not None and not stage_sets and len(strat.stage_devices) > 1:
        stage_sets = [sorted(s) for s in strat.stage_devices]
    info = build_run_info(layout, ranks, stage_sets)
    dsrc = next((d.info.distributed_args_source for _, d in sorted(ranks.items()) if d.info.distributed_args), "")
    if dsrc and info.parallel_mode_source == "profiler_metadata.json distributed_args":
        info.parallel_mode_source = dsrc  # the DB export's META_DATA, or the layout inferred from its HCCL group
    if strat is not None:
        info.parallel_mode_raw = info.parallel_mode_raw or strat.parallel_type
        if len(strat.stage_devices) > 1 and stage_sets == [sorted(s) for s in strat.stage_devices]:
            info.stage_source = N_("the stage layout of the parallel_strategy files (stageDevices)")
    return Run(root=root, info=info, ranks=ranks, issues=issues, strategy=strat)


def _load_strategy(layout: "RunLayout", ranks: dict[int, RankData], issues: list[DataIssue]):
    files = {r: rf.files["parallel_strategy.json"][0] for r, rf in layout.ranks.items()
             if rf.files.get("parallel_strategy.json")}
    if not files:
        return None
    log = IssueLog(layout.root)
    size = next((d.info.rank_size for d in ranks.values() if d.info.rank_size), None)
    out = strategy.load_parallel_strategy(files, log, size)
    issues.extend(log.issues)
    return out


def default_jobs() -> int:
    """All cores (the per-rank loading is CPU-bound and each worker holds one rank's files at a time)."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def timeline_file(rf: "RankFiles") -> Optional[Path]:
    f = rf.first
    return f("ascend_timeline_display.json") or f("timeline_display.json") or f("trace_view.json")


def timeline_ranks(layout: "RunLayout") -> list[int]:
    """Ranks that have an operator timeline."""
    if layout.layout == "kineto":
        return sorted(r for r, rf in layout.ranks.items() if rf.first("kineto_trace") is not None)
    return sorted(r for r, rf in layout.ranks.items() if _exec_trace(rf) is not None)


def _exec_trace(rf: "RankFiles") -> Optional[Path]:
    """The operator timeline the execution view reads (MindSpore GPU: gpu_timeline_display)."""
    return timeline_file(rf) or rf.first("gpu_timeline_display.json")


def load_execution(layout: "RunLayout", run: Run, steps: list[int], reasons: dict[int, str], ranks: list[int],
                   skipped: list[int]) -> Optional[ExecutionData]:
    """The device operators of `steps` on `ranks` (two streamed passes per rank; only those steps are kept).
    Chosen steps a rank's timeline does not have fall back to the timeline's own steps (see the notes)."""
    if not ranks:
        return None
    log = IssueLog(layout.root)
    data = ExecutionData(steps=list(steps), reasons=dict(reasons), ops={}, ranks=list(ranks),
                         skipped_ranks=list(skipped))
    if layout.layout == "kineto":
        found = kineto.load_execution(layout, run, data, ranks, log)
        run.issues.extend(log.issues)
        return data if found else None
    lays = {}
    for r in ranks:
        path = _exec_trace(layout.ranks[r])
        lay = step_ops.trace_layout(path, log, run.ranks[r].step_trace if r in run.ranks else None,
                                    layout.ranks[r].first("output_timeline_data.txt"))
        if lay is not None:
            lays[r] = lay
    if not lays:
        return None
    wanted = [s for s in data.steps if any(s in lay.windows for lay in lays.values())]
    if not wanted:  # the timeline numbers its steps differently (or has none): use the middle one it has
        common = sorted(set.intersection(*(set(lay.windows) for lay in lays.values())))
        pool = common or sorted(next(iter(lays.values())).windows)
        pick = pool[len(pool) // 2]
        if data.steps:
            data.notes.append(f"steps {', '.join(map(str, data.steps))} are not in the timelines; step {pick} "
                              "of the timelines is shown")
        wanted = [pick]
        data.reasons[pick] = ("the whole profiled window (the timelines mark no steps)" if pick == step_ops.WHOLE
                              else "the middle step of the timelines")
    data.steps = wanted
    for r, lay in lays.items():
        path = _exec_trace(layout.ranks[r])
        got = step_ops.read_step_ops(path, r, lay, wanted, log)
        if path is not None and path.name.startswith("gpu_timeline_display"):
            got = gpu.operator_lane(got)
        for s, o in got.items():
            data.ops.setdefault(s, {})[r] = o
        missing = [s for s in wanted if s not in got]
        if missing:
            data.notes.append(f"rank {r}: no operators in step(s) {', '.join(map(str, missing))} of its timeline")
    run.issues.extend(log.issues)
    return data
