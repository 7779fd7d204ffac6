"""msprof-analyze's `cluster_analysis_output` on its own: cluster-level files only, no per-rank folders."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

from reportgen.discover.cluster import cluster_output_run
from reportgen.discover.fs import Fs, inside, relpath
from reportgen.discover.walk import Scan
from reportgen.i18n import N_
from reportgen.layouts.base import Layout
from reportgen.loaders import safe
from reportgen.loaders.issuelog import IssueLog
from reportgen.model import DataIssue, RankData, RankInfo

if TYPE_CHECKING:
    from reportgen.discover import RankFiles, RunLayout


class ClusterAnalysis(Layout):
    name = "cluster_analysis"
    label = N_("msprof-analyze cluster_analysis_output (cluster-level files only)")
    cannot_show = frozenset({"operators", "memory", "data_pipeline", "timeline", "overlap"})
    looks_for = "a msprof-analyze cluster_analysis_output folder"

    def claim_folder(self, d: Path, names: set[str], dirnames: list[str]) -> bool:
        return d.name == "cluster_analysis_output" and "cluster_step_trace_time.csv" in names

    def claim_files(self, d: Path, files: list[Path]) -> list[Path]:
        return [p for p in files if p.name == "profiler_metadata.json"]  # the job's metadata, if one is near

    def detect(self, fs: Fs, scan: Scan, runs: list["RunLayout"], layouts: Mapping[str, Layout]
               ) -> list["RunLayout"]:
        metadata_files = [p for files in scan.files.get(self.name, {}).values() for p in files]
        out = []
        for d in scan.folders.get(self.name, []):
            owner = next((r for r in runs if layouts[r.layout].holds_cluster_output and inside(d, r.base)), None)
            if owner is not None:
                # msprof-analyze writes its output into the run folder; the per-rank files are the source.
                owner.issues.append(DataIssue(relpath(d, fs.root), "msprof-analyze output found beside the per-rank "
                                              "data; the per-rank files were used instead", "info"))
                continue
            out.append(cluster_output_run(fs, d, metadata_files))
        return out

    def load_rank(self, rf: "RankFiles", data: RankData, log: IssueLog) -> None:
        """Nothing per rank: `load_ranks` reads the cluster-level step trace for every rank at once."""

    def load_ranks(self, layout: "RunLayout", issues: list[DataIssue], load: Callable[[], dict[int, RankData]]
                   ) -> tuple[dict[int, RankData], list[list[int]]]:
        log = IssueLog(layout.root)
        ranks: dict[int, RankData] = {}
        step_file = layout.run_files["cluster_step_trace_time"][0]
        traces = safe.load_cluster_step_trace(step_file, log)
        for rank, rf in sorted(layout.ranks.items()):
            info = RankInfo(rank=rank, source_dir=log.rel(rf.dir))
            ranks[rank] = RankData(info=info, step_trace=traces.get(rank))
        meta = layout.run_files.get("profiler_metadata")
        if meta and ranks:
            first = ranks[min(ranks)].info
            safe.load_profiler_metadata(meta[0], first, log)
        stage_sets = safe.cluster_stage_sets(step_file, log)
        issues.extend(log.issues)
        issues.append(DataIssue(log.rel(step_file), "only msprof-analyze's cluster-level output is present; "
                                "per-rank pages show what that file holds", "info"))
        return ranks, stage_sets
