"""msprof-analyze's `cluster_analysis_output` on its own: the ranks are the rows of its cluster step trace."""

from __future__ import annotations

from pathlib import Path

from reportgen.discover import peek
from reportgen.discover.fs import Fs
from reportgen.discover.names import CLUSTER_FILES
from reportgen.discover.runs import RankFiles, RunLayout, under
from reportgen.model import DataIssue


def cluster_output_run(fs: Fs, d: Path, metadata_files: list[Path]) -> RunLayout:
    run = RunLayout(root=fs.root, base=d.parent, layout="cluster_analysis")
    csv_path = fs.file(d, "cluster_step_trace_time.csv")
    assert csv_path is not None
    run.run_files["cluster_step_trace_time"] = [csv_path]
    for name in CLUSTER_FILES:
        p = fs.file(d, name)
        if p is not None:
            run.run_files[name] = [p]
    meta = sorted(p for p in metadata_files if under(p, d.parent))
    if meta:
        run.run_files["profiler_metadata"] = meta[:1]
    for rank in peek.cluster_step_trace_ranks(csv_path):
        rf = RankFiles(rank=rank, dir=d)
        run.ranks[rank] = rf
    if not run.ranks:
        run.issues.append(DataIssue(run.rel(csv_path), "no rank rows could be read"))
    return run
