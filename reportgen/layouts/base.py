"""What a layout is: one profiler family's way of laying out its files, and everything the report does
differently for it: how its folders are recognised and grouped into runs (detect), how it is named (label), what
is read per rank (load_rank) and per run (run_pass), and which areas it can never show (cannot_show).

A new family is its loaders (`reportgen.loaders.<family>`), one `Layout` subclass here (`layouts/<family>.py`,
listed in `registry.py`) and its synthetic writer (`reportgen.synth`); `reportgen.discover` has the pieces its
`detect` builds runs from (a family with an unusual grouping adds `discover/<family>.py`).

A layout calls its loaders through `loaders.guard.guarded` (the shared ones are listed in `loaders/safe.py`), so an
unexpected exception in one reader becomes a data-quality entry naming the file, never a failed report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable, ClassVar, Mapping, Optional

from reportgen.discover.fs import Fs
from reportgen.discover.walk import Scan
from reportgen.loaders.issuelog import IssueLog
from reportgen.model import DataIssue, RankData

if TYPE_CHECKING:
    from reportgen.discover import RankFiles, RunLayout
    from reportgen.model import ExecutionData, Run


class Layout:
    """One layout. Subclasses set `name` and `label` and implement `load_rank`; the other hooks have defaults."""

    name: ClassVar[str]  # the id in RunLayout.layout, RunInfo.layout and summary.json
    label: ClassVar[str]  # what the overview calls it (an N_ text)
    cannot_show: ClassVar[frozenset[str]] = frozenset()  # coverage areas the family never records
    gpu: ClassVar[bool] = False  # advice names PyTorch's and the GPU's levers, not Ascend's
    looks_for: ClassVar[str] = ""  # what discovery looks for, in the "no profiler output found" message
    holds_cluster_output: ClassVar[bool] = False  # msprof-analyze writes its cluster_analysis_output into its runs

    # --- discovery: the walk offers every folder to every layout (discover.walk), then each builds its runs ---

    def claim_folder(self, d: Path, names: set[str], dirnames: list[str]) -> bool:
        """True when `d` (file `names`, sub-folder `dirnames`) is one of this layout's folders, read as a whole."""
        return False

    def claim_files(self, d: Path, files: list[Path]) -> list[Path]:
        """This layout's files in `d`, a folder no layout claimed as a whole."""
        return []

    def detect(self, fs: Fs, scan: Scan, runs: list["RunLayout"], layouts: Mapping[str, "Layout"]
               ) -> list["RunLayout"]:
        """The runs built from what this layout claimed (`scan.folders[name]`, `scan.files[name]`); `runs`: those
        the layouts before it in the registry found."""
        return []

    # --- loading ---

    def load_rank(self, rf: "RankFiles", data: RankData, log: IssueLog) -> None:
        """Fill `data` from one rank's files (a pure function of them: ranks load in parallel processes)."""
        raise NotImplementedError

    def load_ranks(self, layout: "RunLayout", issues: list[DataIssue], load: Callable[[], dict[int, RankData]]
                   ) -> tuple[dict[int, RankData], list[list[int]]]:
        """The run's ranks and the stage sets the run-level files give: by default every rank through `load`
        (`run.load_rank` on each, in parallel when the run is large)."""
        return load(), []

    def run_pass(self, ranks: dict[int, RankData], issues: list[DataIssue]) -> None:
        """Run-level work once every rank is loaded (matching collectives across ranks, a note on the run)."""

    def timeline_ranks(self, layout: "RunLayout") -> list[int]:
        """Ranks that have an operator timeline (the execution view)."""
        return sorted(r for r, rf in layout.ranks.items() if exec_trace(rf) is not None)

    def load_execution(self, layout: "RunLayout", run: "Run", data: "ExecutionData", ranks: list[int],
                       log: IssueLog, jobs: int = 1) -> Optional[bool]:
        """The execution view's operators into `data`: True / False when this layout reads them itself (in `jobs`
        local processes where that pays), None for the shared reading of operator timelines (`run.load_execution`)."""
        return None


def timeline_file(rf: "RankFiles") -> Optional[Path]:
    f = rf.first
    return f("ascend_timeline_display.json") or f("timeline_display.json") or f("trace_view.json")


def exec_trace(rf: "RankFiles") -> Optional[Path]:
    """The operator timeline the execution view reads (MindSpore GPU: gpu_timeline_display)."""
    return timeline_file(rf) or rf.first("gpu_timeline_display.json")
