"""Load a discovered run into the typed model. Only this package reads input files.

`load_rank` is a pure function of one rank's files, so ranks can be loaded in parallel processes.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional

from reportgen.loaders import communication, host_steps, metadata, overlap, step_trace
from reportgen.loaders.common import IssueLog
from reportgen.loaders.run_info import build_run_info
from reportgen.model import DataIssue, RankData, RankInfo, Run

if TYPE_CHECKING:
    from reportgen.discover import RankFiles, RunLayout

PARALLEL_MIN_RANKS = 64


def load_rank(rf: "RankFiles", root: Path, layout: str) -> RankData:
    """Load everything the report needs from one rank's files."""
    log = IssueLog(root)
    info = RankInfo(rank=rf.rank, source_dir=log.rel(rf.dir), host=rf.host, device=rf.device)
    data = RankData(info=info)
    for paths in rf.files.values():
        data.files.extend(log.rel(p) for p in paths)
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
            data.step_trace = host_steps.load_host_steps(p, log)
            if data.step_trace is None and not any(i.severity == "error" for i in log.issues):
                log.add(p, "no ProfilerStep#N markers in the trace (profiled without a schedule?); "
                        "no step times", "info")
    data.issues = log.issues
    return data


def _load_ascend(rf: "RankFiles", data: RankData, log: IssueLog) -> None:
    info = data.info
    info.framework = "torch_npu" if rf.dir.name.endswith("_ascend_pt") else (
        "MindSpore" if rf.dir.name.endswith("_ascend_ms") else None)
    for p in rf.files.get("profiler_info", []):
        metadata.load_profiler_info(p, info, log)
    p = rf.first("profiler_metadata")
    if p is not None:
        metadata.load_profiler_metadata(p, info, log)
    stt = rf.first("step_trace_time.csv")
    db = rf.first("analysis.db")
    tv = rf.first("trace_view.json")
    if stt is not None:
        data.step_trace = step_trace.load_modern_step_trace(stt, log)
        if info.device is None and data.step_trace is not None:
            info.device = data.step_trace.device
    if data.step_trace is None and db is not None:
        data.step_trace = step_trace.load_db_step_trace(db, log)
        if data.step_trace is not None:
            log.add(db, "no readable step_trace_time.csv; step times read from the DB export (analysis.db)", "info")
    if data.step_trace is None and tv is not None:
        data.step_trace = overlap.load_trace_view_step_trace(tv, log)
        if data.step_trace is not None:
            log.add(tv, "no step_trace_time.csv; computing/communication/free per step summed from the "
                    "trace's Overlap Analysis lanes, as torch_npu does", "info")
    if data.step_trace is None and tv is not None:
        data.step_trace = host_steps.load_host_steps(tv, log)
        if data.step_trace is not None:
            log.add(tv, "no step_trace_time.csv; step times are host ProfilerStep durations from "
                    "trace_view.json (no computing/communication split)", "info")
    comm, matrix = rf.first("communication.json"), rf.first("communication_matrix.json")
    if comm is not None or matrix is not None:
        data.communication = communication.load_modern_communication(comm, matrix, log, info.parallel_groups,
                                                                     info.rank)
    if data.step_trace is None:
        if any(k.startswith("framework/cpu_") for k in rf.files):
            log.add(rf.dir, "MindSpore CPU profiler output: it writes no step trace, so no step times "
                    "for this rank", "info")
        else:
            log.add(rf.dir, "no step trace (ASCEND_PROFILER_OUTPUT/step_trace_time.csv) for this rank", "warning")


def _load_mindinsight(rf: "RankFiles", data: RankData, log: IssueLog) -> None:
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
             progress: Optional[Callable[[int, int], None]] = None) -> Run:
    """Load every rank of `layout` (in `jobs` processes when the run is large) and the run-level files."""
    root = layout.root
    ranks: dict[int, RankData] = {}
    issues: list[DataIssue] = list(layout.issues)
    stage_sets: list[list[int]] = []
    items = sorted(layout.ranks.items())
    total = len(items)
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
    elif jobs > 1 and total >= PARALLEL_MIN_RANKS:
        with ProcessPoolExecutor(max_workers=jobs) as ex:
            futs = [ex.submit(load_rank, rf, root, layout.layout) for _, rf in items]
            for i, fut in enumerate(futs, 1):
                d = fut.result()
                ranks[d.info.rank] = d
                if progress:
                    progress(i, total)
    else:
        for i, (_, rf) in enumerate(items, 1):
            d = load_rank(rf, root, layout.layout)
            ranks[d.info.rank] = d
            if progress:
                progress(i, total)
    info = build_run_info(layout, ranks, stage_sets)
    return Run(root=root, info=info, ranks=ranks, issues=issues)


def default_jobs() -> int:
    return max(1, min(4, os.cpu_count() or 1))
