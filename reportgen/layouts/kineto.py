"""PyTorch profiler (Kineto) traces: one `*.pt.trace.json[.gz]` per rank (CUDA, ROCm, or the CPU with gloo)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Optional

from reportgen.discover.fs import Fs
from reportgen.discover.kineto import kineto_runs
from reportgen.discover.names import KINETO_RE
from reportgen.discover.walk import Scan
from reportgen.i18n import N_
from reportgen.layouts.base import Layout
from reportgen.loaders import safe
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.kineto.run import match_collectives, run_note
from reportgen.model import DataIssue, RankData

if TYPE_CHECKING:
    from reportgen.discover import RankFiles, RunLayout
    from reportgen.model import ExecutionData, Run


class Kineto(Layout):
    name = "kineto"
    label = N_("PyTorch profiler traces (*.pt.trace.json per rank)")
    cannot_show = frozenset({"links", "data_pipeline"})  # torch.profiler records neither links nor the input pipeline
    gpu = True
    looks_for = "*.pt.trace.json files"

    def claim_files(self, d: Path, files: list[Path]) -> list[Path]:
        return [p for p in files if KINETO_RE.search(p.name)]

    def detect(self, fs: Fs, scan: Scan, runs: list["RunLayout"], layouts: Mapping[str, Layout]
               ) -> list["RunLayout"]:
        return [run for d, files in scan.files.get(self.name, {}).items() for run in kineto_runs(fs, d, files)]

    def load_rank(self, rf: "RankFiles", data: RankData, log: IssueLog) -> None:
        data.info.framework = "PyTorch"
        p = rf.first("kineto_trace")
        if p is not None:
            k = safe.load_kineto(p, data, log)
            if k is not None:  # None: the guard named the file in data quality
                data.step_trace, data.communication, data.operators = k.step_trace, k.communication, k.operators
                data.memory, data.timeline = k.memory, k.timeline
                data.idle = getattr(k, "idle", None)
                data.op_flops = k.op_flops

    def run_pass(self, ranks: dict[int, RankData], issues: list[DataIssue]) -> None:
        match_collectives(ranks, issues)
        issues.append(DataIssue("", run_note(ranks), "info"))

    def timeline_ranks(self, layout: "RunLayout") -> list[int]:
        return sorted(r for r, rf in layout.ranks.items() if rf.first("kineto_trace") is not None)

    def load_execution(self, layout: "RunLayout", run: "Run", data: "ExecutionData", ranks: list[int],
                       log: IssueLog, jobs: int = 1) -> Optional[bool]:
        return bool(safe.kineto_execution(layout, run, data, ranks, log, jobs=jobs))
