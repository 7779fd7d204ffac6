"""Ascend profiler output: `*_ascend_pt` (torch_npu) / `*_ascend_ms` (MindSpore) rank folders with
ASCEND_PROFILER_OUTPUT (text export), their SQLite DB export, or msprof's unified DB in a PROF_* folder."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from reportgen.discover.ascend import ascend_runs, bare_modern_run
from reportgen.discover.fs import Fs
from reportgen.discover.names import ASCEND_DIR_RE, MODERN_FILES, MSPROF_DB_RE, mindinsight_file
from reportgen.discover.walk import Scan
from reportgen.i18n import N_
from reportgen.layouts.base import Layout
from reportgen.layouts.resources import load_resources
from reportgen.loaders import safe
from reportgen.loaders.issuelog import IssueLog
from reportgen.model import RankData

if TYPE_CHECKING:
    from reportgen.discover import RankFiles, RunLayout


class Ascend(Layout):
    name = "ascend"
    label = N_("Ascend profiler output (*_ascend_pt / *_ascend_ms per rank)")
    looks_for = "*_ascend_pt / *_ascend_ms rank folders"
    holds_cluster_output = True

    def claim_folder(self, d: Path, names: set[str], dirnames: list[str]) -> bool:
        if ASCEND_DIR_RE.search(d.name) or "ASCEND_PROFILER_OUTPUT" in dirnames:
            return True  # the rank folder is read as a whole by discover.ascend.ascend_rank
        # msprof's unified DB on its own (no *_ascend_* folder around it): one rank. With device_* folders beside
        # it, the folder is msprof's raw output (layouts.msprof)
        return (d.name.startswith("PROF_") and not any(n.startswith("device_") for n in dirnames)
                and any(MSPROF_DB_RE.match(n) for n in names))

    def claim_files(self, d: Path, files: list[Path]) -> list[Path]:
        """ASCEND_PROFILER_OUTPUT files without their rank folder (not beside MindInsight files)."""
        if any(mindinsight_file(p.name) for p in files):
            return []
        return [p for p in files if p.name in MODERN_FILES]

    def detect(self, fs: Fs, scan: Scan, runs: list["RunLayout"], layouts: Mapping[str, Layout]
               ) -> list["RunLayout"]:
        return (ascend_runs(fs, sorted(scan.folders.get(self.name, [])))
                + [bare_modern_run(fs, d) for d in scan.files.get(self.name, {})])

    def load_rank(self, rf: "RankFiles", data: RankData, log: IssueLog) -> None:
        load_resources(rf, data, log)
        info = data.info
        info.framework = "torch_npu" if rf.dir.name.endswith("_ascend_pt") else (
            "MindSpore" if rf.dir.name.endswith("_ascend_ms") else None)
        for p in rf.files.get("profiler_info", []):
            safe.load_profiler_info(p, info, log)
        p = rf.first("profiler_metadata")
        if p is not None:
            safe.load_profiler_metadata(p, info, log)
        safe.load_chip_info(rf.dir, info, log)  # the chip type, AI Core count and clock (efficiency)
        if rf.first("kernel_details.csv") is not None:  # GEMM FLOPs from the kernels' shapes (efficiency)
            data.op_flops = safe.load_kernel_gemms(rf.first("kernel_details.csv"), log)
        stt = rf.first("step_trace_time.csv")
        tv = rf.first("trace_view.json")
        if stt is not None:
            data.step_trace = safe.load_modern_step_trace(stt, log)
            if info.device is None and data.step_trace is not None:
                info.device = data.step_trace.device
        comm, matrix = rf.first("communication.json"), rf.first("communication_matrix.json")
        if comm is not None or matrix is not None:
            data.communication = safe.load_modern_communication(comm, matrix, log, info.parallel_groups,
                                                                info.rank)
        # export_type=db: whatever the text files did not give comes from the DB files (and unread ones are named)
        safe.load_db_rank(rf, data, log, text_step_trace=data.step_trace is not None)
        if data.step_trace is None and tv is not None:
            data.step_trace = safe.load_trace_view_step_trace(tv, log)
            if data.step_trace is not None:
                log.add(tv, "no step_trace_time.csv; computing/communication/free per step summed from the "
                        "trace's Overlap Analysis lanes, as torch_npu does", "info")
        if data.step_trace is None and tv is not None:
            data.step_trace = safe.load_host_steps(tv, log)
            if data.step_trace is not None:
                log.add(tv, "no step_trace_time.csv; step times are host ProfilerStep durations from "
                        "trace_view.json (no computing/communication split)", "info")
        if data.step_trace is None:
            if any(k.startswith("framework/cpu_") for k in rf.files):
                log.add(rf.dir, "MindSpore CPU profiler output: it writes no step trace, so no step times "
                        "for this rank", "info")
            elif rf.dir.name.startswith("PROF_"):
                log.add(rf.dir, "no step trace in the msprof database (it needs the STEP_TIME and "
                        "OVERLAP_ANALYSIS tables) for this rank", "warning")
            else:
                log.add(rf.dir, "no step trace (ASCEND_PROFILER_OUTPUT/step_trace_time.csv) for this rank",
                        "warning")
