"""CANN msprof's raw output on its own: PROF_*/device_*/ folders (timeline and summary files per device)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from reportgen.discover.fs import Fs
from reportgen.discover.msprof import msprof_run
from reportgen.discover.walk import Scan
from reportgen.i18n import N_
from reportgen.layouts.base import Layout
from reportgen.layouts.resources import step_totals
from reportgen.loaders import safe
from reportgen.loaders.issuelog import IssueLog
from reportgen.model import RankData

if TYPE_CHECKING:
    from reportgen.discover import RankFiles, RunLayout


class Msprof(Layout):
    name = "msprof"
    label = N_("CANN msprof raw output (PROF_*/device_*/timeline)")
    looks_for = "PROF_* msprof folders"

    def claim_folder(self, d: Path, names: set[str], dirnames: list[str]) -> bool:
        return d.name.startswith("PROF_") and any(n.startswith("device_") for n in dirnames)

    def detect(self, fs: Fs, scan: Scan, runs: list["RunLayout"], layouts: Mapping[str, Layout]
               ) -> list["RunLayout"]:
        """One run per folder holding PROF_* folders, except those a run found before reads already (MindInsight
        reads the PROF_* folders beside its flat files: run_files["prof_dirs"])."""
        covered = {p for r in runs for p in r.run_files.get("prof_dirs", [])}
        by_parent: dict[Path, list[Path]] = {}
        for p in scan.folders.get(self.name, []):
            if p not in covered:
                by_parent.setdefault(p.parent, []).append(p)
        return [msprof_run(fs, parent, profs) for parent, profs in by_parent.items()]

    def load_rank(self, rf: "RankFiles", data: RankData, log: IssueLog) -> None:
        info = data.info
        dev = rf.first("msprof_device")
        if dev is not None:
            safe.load_msprof_info(dev, info, log)
            data.step_trace = safe.load_msprof_step_trace(dev, log)
            data.communication = safe.load_msprof_hccl(dev, log)
            data.overlap = safe.load_msprof_overlap(dev, log, step_totals(data.step_trace)[1])
        info.framework = "MindSpore"
