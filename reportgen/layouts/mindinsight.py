"""MindInsight's flat profiler folder (per-rank `*_{rank}` files: Ascend, GPU and CPU MindSpore runs), with the
PROF_* msprof folders beside it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from reportgen.discover.fs import Fs
from reportgen.discover.mindinsight import legacy_run
from reportgen.discover.names import mindinsight_file
from reportgen.discover.walk import Scan
from reportgen.i18n import N_
from reportgen.layouts.base import Layout
from reportgen.layouts.resources import load_resources, step_totals
from reportgen.loaders import gpu, safe
from reportgen.loaders.issuelog import IssueLog
from reportgen.model import RankData

if TYPE_CHECKING:
    from reportgen.discover import RankFiles, RunLayout


class MindInsight(Layout):
    name = "mindinsight"
    label = N_("MindInsight flat profiler folder (per-rank *_{rank} files)")
    looks_for = "a MindInsight profiler folder (step_trace_raw_{rank}_detail_time.csv, profiler_info_{rank}.json, ...)"
    holds_cluster_output = True

    def claim_files(self, d: Path, files: list[Path]) -> list[Path]:
        return [p for p in files if mindinsight_file(p.name)]

    def detect(self, fs: Fs, scan: Scan, runs: list["RunLayout"], layouts: Mapping[str, Layout]
               ) -> list["RunLayout"]:
        prof_dirs = scan.folders.get("msprof", [])  # PROF_* folders beside the flat files are read with them
        return [legacy_run(fs, d, files, prof_dirs) for d, files in scan.files.get(self.name, {}).items()]

    def load_rank(self, rf: "RankFiles", data: RankData, log: IssueLog) -> None:
        load_resources(rf, data, log)
        info = data.info
        info.framework = "MindSpore"
        p = rf.first("profiler_info.json")
        if p is not None:
            safe.load_profiler_info(p, info, log)
        st = rf.first("step_trace_raw_detail_time.csv")
        if st is not None:
            data.step_trace = safe.load_legacy_step_trace(st, log)
        dev = rf.first("msprof_device")
        if dev is not None:
            safe.load_msprof_info(dev, info, log)
            if data.step_trace is None:
                data.step_trace = safe.load_msprof_step_trace(dev, log)
        hccl = rf.first("hccl_raw.csv")
        if hccl is not None:
            data.communication = safe.load_hccl_raw(hccl, log, info.versions.get("MindSpore"))
        if data.communication is None and rf.files.get("hccl_trace"):
            data.communication = safe.load_hccl_traces(rf.files["hccl_trace"], data.step_trace, log)
        if data.communication is None and dev is not None:
            data.communication = safe.load_msprof_hccl(dev, log)
        if data.step_trace is None and st is None:
            log.add(rf.dir, f"no step_trace_raw_{rf.rank}_detail_time.csv for rank {rf.rank}", "info")
        _load_overlap(rf, data, log)
        if gpu.is_gpu(rf) and data.communication is None and rf.rank == min_rank(rf):
            log.add(rf.dir, "MindSpore GPU output: no per-operator communication file exists on GPU (hccl_raw is "
                    "Ascend-only), so the Communication page is empty; the step trace's reduce columns and "
                    "gpu_cluster_analyse_* give the communication time per step (Step trace and Overlap pages)",
                    "info")


def min_rank(rf: "RankFiles") -> int:
    """The lowest rank whose files sit in `rf.dir` (run-level notes are written once, by that rank)."""
    ids = [int(m.group(1)) for p in rf.dir.glob("step_trace_raw_*_detail_time.csv")
           if (m := re.match(r"^step_trace_raw_(\d+)_", p.name))]
    return min(ids) if ids else rf.rank


def _load_overlap(rf: "RankFiles", data: RankData, log: IssueLog) -> None:
    """The profiler's overlap file, and the recomputation from the timeline when its inputs are there."""
    ids, totals = step_totals(data.step_trace)
    ca = rf.first("cluster_analyse")
    summary = safe.load_cluster_analyse(ca, log, ids, totals) if ca is not None else None
    tl = rf.first("output_timeline_data.txt")
    recomputed = safe.load_timeline_overlap(tl, data.step_trace, log) if tl is not None else None
    if summary is not None:
        summary.check = recomputed
        data.overlap = summary
    else:
        data.overlap = recomputed
    dev = rf.first("msprof_device")
    if data.overlap is None and dev is not None:
        data.overlap = safe.load_msprof_overlap(dev, log, totals)
