"""Find the profiled runs under a folder: which layout, which ranks, which files belong to each rank.

Discovery only lists folders (plus tiny metadata peeks through `loaders.peek`); it never parses data.
It never follows a symbolic link that leads outside the run folder.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from reportgen.errors import NoProfilingData
from reportgen.loaders import peek
from reportgen.model import DataIssue

MAX_DEPTH = 6

ASCEND_DIR_RE = re.compile(r"_ascend_(pt|ms)$")
ASCEND_DIR_NAME_RE = re.compile(r"^(?P<host>.+?)_(?P<pid>\d+)_(?P<ts>\d{14,17})_ascend_(pt|ms)$")
ASCEND_TS_RE = re.compile(r"_(\d{14,17})_ascend_(pt|ms)$")

# MindInsight flat-folder files: <family>_<rank>[<suffix>].<ext>
LEGACY_FAMILIES = (
    "step_trace_raw", "hccl_raw", "flops_summary", "flops_scope", "flops_utilization_step", "flops",
    "memory_usage_summary", "memory_usage_details", "memory_usage", "minddata_pipeline_raw",
    "minddata_pipeline_summary", "aicore_intermediate", "aicpu_intermediate", "profiler_info",
    "parallel_strategy", "framework_raw", "output_timeline_data", "ascend_timeline_display",
    "ascend_timeline_summary", "timeline_display", "timeline_summary", "pipeline_profiling",
    "device_queue_profiling", "dataset_iterator_profiling", "minddata_aicpu", "minddata_cpu_utilization",
    "output_op_compute_time_detail", "output_op_compute_time", "cpu_op_type_info", "cpu_op_detail_info",
    "dynamic_shape_info", "gpu_op_type_info", "gpu_op_detail_info", "gpu_activity_data",
    "gpu_timeline_display", "gpu_timeline_summary", "output_format_data_hwts", "output_data_preprocess_aicpu",
    "min_cycle_counter", "dataset", "cpu_ms_memory_record", "minddata_getnext_profiling",
)
LEGACY_FILE_RE = re.compile(
    r"^(?P<family>" + "|".join(sorted(LEGACY_FAMILIES, key=len, reverse=True)) + r")_(?P<rank>\d+)"
    r"(?P<suffix>_detail_time|_type|_detail)?\.(?P<ext>csv|json|txt|pb)$"
)
CLUSTER_ANALYSE_RE = re.compile(
    r"^(?:ascend|gpu)_cluster_analyse_(?P<mode>[a-z-]+)_(?P<stages>\d+)_(?P<size>\d+)_(?P<rank>\d+)\.csv$"
)
FRAMEWORK_RANK_RE = re.compile(r"_(\d+)\.(csv|txt)$")
KINETO_RE = re.compile(r"\.pt\.trace\.json(\.gz)?$")
MODERN_FILES = (
    "step_trace_time.csv", "kernel_details.csv", "op_statistic.csv", "trace_view.json",
    "communication.json", "communication_matrix.json", "api_statistic.csv", "operator_details.csv",
    "memory_record.csv", "operator_memory.csv", "npu_module_mem.csv", "l2_cache.csv", "dataset.csv",
    "analysis.db", "data_preprocess.csv", "static_op_mem.csv",
)

LAYOUT_LABELS = {
    "mindinsight": "MindInsight flat profiler folder (per-rank *_{rank} files)",
    "ascend": "Ascend profiler output (*_ascend_pt / *_ascend_ms per rank)",
    "msprof": "CANN msprof raw output (PROF_*/device_*/timeline)",
    "kineto": "PyTorch profiler traces (*.pt.trace.json per rank)",
    "cluster_analysis": "msprof-analyze cluster_analysis_output (cluster-level files only)",
}

WHAT_WE_LOOK_FOR = (
    "a MindInsight profiler folder (step_trace_raw_{rank}_detail_time.csv, profiler_info_{rank}.json, ...), "
    "*_ascend_pt / *_ascend_ms rank folders, PROF_* msprof folders, *.pt.trace.json files, "
    "or a msprof-analyze cluster_analysis_output folder"
)


@dataclass
class RankFiles:
    """The files of one rank. `files` maps a file family to its paths."""

    rank: int
    dir: Path
    files: dict[str, list[Path]] = field(default_factory=dict)
    host: Optional[str] = None
    device: Optional[int] = None

    def first(self, family: str) -> Optional[Path]:
        paths = self.files.get(family)
        return paths[0] if paths else None

    def add(self, family: str, path: Path) -> None:
        self.files.setdefault(family, []).append(path)


@dataclass
class RunLayout:
    """One run found under the user's folder."""

    root: Path  # the folder the user named; every reported path is relative to it
    base: Path  # the folder of this run (equal to root unless several runs were found)
    layout: str
    ranks: dict[int, RankFiles] = field(default_factory=dict)
    run_files: dict[str, list[Path]] = field(default_factory=dict)
    parallel_hint: dict = field(default_factory=dict)
    issues: list[DataIssue] = field(default_factory=list)

    def rel(self, path: Path) -> str:
        return relpath(path, self.root)

    @property
    def slug(self) -> str:
        rel = self.rel(self.base)
        return "run" if rel in ("", ".") else re.sub(r"[^A-Za-z0-9_.-]+", "_", rel)


def relpath(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.name


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
        return True
    except (ValueError, OSError):
        return False


@dataclass
class _Scan:
    ascend_dirs: list[Path] = field(default_factory=list)
    legacy_dirs: dict[Path, list[Path]] = field(default_factory=dict)
    prof_dirs: list[Path] = field(default_factory=list)
    kineto: dict[Path, list[Path]] = field(default_factory=dict)
    bare_modern: list[Path] = field(default_factory=list)
    cluster_outputs: list[Path] = field(default_factory=list)
    outside_links: list[Path] = field(default_factory=list)


def _walk(root: Path) -> _Scan:
    scan = _Scan()
    root_depth = len(root.parts)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        d = Path(dirpath)
        depth = len(d.parts) - root_depth
        if (d / ".msreport").exists() and d != root:
            dirnames[:] = []  # our own earlier output
            continue
        for name in list(dirnames):
            p = d / name
            if p.is_symlink() and not _inside(p, root):
                scan.outside_links.append(p)
        dirnames[:] = sorted(n for n in dirnames if not n.startswith(".") and not (d / n).is_symlink())
        if ASCEND_DIR_RE.search(d.name) or "ASCEND_PROFILER_OUTPUT" in dirnames:
            scan.ascend_dirs.append(d)
            dirnames[:] = []  # the rank folder is read as a whole by _ascend_rank
            continue
        if d.name.startswith("PROF_") and (any(n.startswith("device_") for n in dirnames)):
            scan.prof_dirs.append(d)
            dirnames[:] = []
            continue
        if d.name == "cluster_analysis_output" and "cluster_step_trace_time.csv" in filenames:
            scan.cluster_outputs.append(d)
            dirnames[:] = []
            continue
        files = []
        for f in sorted(filenames):
            p = d / f
            if p.is_symlink() and not _inside(p, root):
                scan.outside_links.append(p)
                continue
            files.append(p)
        legacy = [p for p in files if LEGACY_FILE_RE.match(p.name) or CLUSTER_ANALYSE_RE.match(p.name)]
        if legacy:
            scan.legacy_dirs[d] = legacy
        kin = [p for p in files if KINETO_RE.search(p.name)]
        if kin:
            scan.kineto[d] = kin
        if not legacy and any(p.name in MODERN_FILES for p in files):
            scan.bare_modern.append(d)
        if depth >= MAX_DEPTH:
            dirnames[:] = []
    return scan


def discover(root: Path) -> list[RunLayout]:
    """Return the runs found under `root` (usually one). Raise `NoProfilingData` when there is none."""
    root = Path(root)
    if not root.exists():
        raise NoProfilingData(f"run folder {root} does not exist")
    if not root.is_dir():
        raise NoProfilingData(f"{root} is not a folder; give the folder that holds the profiler output")
    scan = _walk(root)
    link_issues = [
        DataIssue(relpath(p, root), "symbolic link leads outside the run folder; not followed", "warning")
        for p in scan.outside_links
    ]
    runs: list[RunLayout] = []

    if scan.ascend_dirs:
        runs.append(_ascend_run(root, scan.ascend_dirs))
    for d, files in scan.legacy_dirs.items():
        runs.append(_legacy_run(root, d, files, scan.prof_dirs))
    covered_prof = {p for r in runs if r.layout == "mindinsight" for p in r.run_files.get("prof_dirs", [])}
    prof_by_parent: dict[Path, list[Path]] = {}
    for p in scan.prof_dirs:
        if p not in covered_prof:
            prof_by_parent.setdefault(p.parent, []).append(p)
    for parent, profs in prof_by_parent.items():
        runs.append(_msprof_run(root, parent, profs))
    for d, files in scan.kineto.items():
        runs.append(_kineto_run(root, d, files))
    for d in scan.bare_modern:
        runs.append(_bare_modern_run(root, d))
    for d in scan.cluster_outputs:
        if any(r.layout in ("ascend", "mindinsight") and _inside(d, r.base) for r in runs):
            # msprof-analyze writes its output into the run folder; the per-rank files are the source.
            for r in runs:
                if _inside(d, r.base):
                    r.issues.append(DataIssue(relpath(d, root), "msprof-analyze output found beside the "
                                              "per-rank data; the per-rank files were used instead", "info"))
                    break
            continue
        runs.append(_cluster_output_run(root, d))

    runs = [r for r in runs if r.ranks]
    if not runs:
        raise NoProfilingData(f"no profiler output found under {root}: looked for {WHAT_WE_LOOK_FOR}")
    runs.sort(key=lambda r: r.rel(r.base))
    runs[0].issues[:0] = link_issues
    return runs


# --- Ascend (*_ascend_pt / *_ascend_ms) ------------------------------------------------------------


def _ascend_rank(d: Path) -> tuple[Optional[int], RankFiles, str]:
    """Identify the rank of one *_ascend_* folder and list its files. Returns (rank, files, how)."""
    rf = RankFiles(rank=-1, dir=d)
    m = ASCEND_DIR_NAME_RE.match(d.name)
    if m:
        rf.host = m.group("host")
    rank: Optional[int] = None
    how = ""
    for p in sorted(d.glob("profiler_info_*.json")):
        mm = re.match(r"^profiler_info_(\d+)\.json$", p.name)
        if mm:
            rank, how = int(mm.group(1)), "profiler_info file name"
            rf.add("profiler_info", p)
    if (d / "profiler_info.json").is_file():
        rf.add("profiler_info", d / "profiler_info.json")
        if rank is None:
            rid = peek.profiler_info_rank(d / "profiler_info.json")
            if rid is not None:
                rank, how = rid, "profiler_info.json rank_id"
    if (d / "profiler_metadata.json").is_file():
        rf.add("profiler_metadata", d / "profiler_metadata.json")
    out = d / "ASCEND_PROFILER_OUTPUT"
    if out.is_dir():
        for p in sorted(out.iterdir()):
            if p.is_file() and not p.is_symlink():
                rf.add(p.name, p)
                _add_legacy_family(rf, p)
                mm = re.match(r"^ascend_(pytorch|mindspore)_profiler(?:_(\d+))?\.db$", p.name)
                if mm:
                    rf.add("profiler_db", p)
                if mm and mm.group(2) and rank is None:
                    rank, how = int(mm.group(2)), "profiler database file name"
    for p in sorted(d.glob("PROF_*/msprof_*.db")):  # msprof's own unified DB (kept without data simplification)
        if p.is_file() and not p.is_symlink():
            rf.add("profiler_db", p)
    fw = d / "FRAMEWORK"
    if fw.is_dir():
        suffixes = set()
        for p in sorted(fw.iterdir()):
            if p.is_file() and not p.is_symlink():
                rf.add("framework/" + p.name, p)
                _add_legacy_family(rf, p)
                mm = FRAMEWORK_RANK_RE.search(p.name)
                if mm and p.name.startswith("cpu_"):
                    suffixes.add(int(mm.group(1)))
        if rank is None and len(suffixes) == 1:
            rank, how = suffixes.pop(), "FRAMEWORK file suffix"
    return rank, rf, how


def legacy_family(name: str) -> Optional[str]:
    """`minddata_pipeline_raw_0.csv` -> `minddata_pipeline_raw.csv` (the key MindInsight-style files are listed under)."""
    m = LEGACY_FILE_RE.match(name)
    return m.group("family") + (m.group("suffix") or "") + "." + m.group("ext") if m else None


def _add_legacy_family(rf: RankFiles, p: Path) -> None:
    """MindSpore 2.3+ also writes MindInsight-style `*_{rank}` files (MindData, CPU operators, memory)."""
    fam = legacy_family(p.name)
    if fam is not None:
        rf.add(fam, p)


def _ascend_run(root: Path, dirs: list[Path]) -> RunLayout:
    run = RunLayout(root=root, base=root, layout="ascend")
    found: dict[int, list[tuple[Path, RankFiles]]] = {}
    unknown: list[tuple[Path, RankFiles]] = []
    for d in dirs:
        rank, rf, _how = _ascend_rank(d)
        if not rf.files:
            run.issues.append(DataIssue(run.rel(d), "rank folder is empty; skipped", "warning"))
            continue
        if rank is None:
            unknown.append((d, rf))
        else:
            found.setdefault(rank, []).append((d, rf))
    if unknown:
        if not found and len(unknown) == 1:
            d, rf = unknown[0]
            found[0] = [(d, rf)]
            run.issues.append(DataIssue(run.rel(d), "no rank id in the folder (no profiler_info_{rank}.json); "
                                        "treated as rank 0", "info"))
        else:
            for d, _ in unknown:
                run.issues.append(DataIssue(run.rel(d), "cannot tell which rank this folder belongs to "
                                            "(no profiler_info_{rank}.json or rank-suffixed files); skipped",
                                            "warning"))
    for rank, cands in sorted(found.items()):
        cands.sort(key=lambda c: _dir_age_key(c[0]))
        keep_dir, keep = cands[-1]
        keep.rank = rank
        run.ranks[rank] = keep
        for d, _ in cands[:-1]:
            run.issues.append(DataIssue(run.rel(d), f"a newer folder ({run.rel(keep_dir)}) also holds rank {rank}; "
                                        "this older one was ignored", "warning"))
    return run


def _dir_age_key(d: Path) -> tuple:
    m = ASCEND_TS_RE.search(d.name)
    ts = m.group(1).ljust(17, "0") if m else ""
    try:
        mtime = d.stat().st_mtime
    except OSError:
        mtime = 0.0
    return (ts, mtime, d.name)


def _bare_modern_run(root: Path, d: Path) -> RunLayout:
    run = RunLayout(root=root, base=d, layout="ascend")
    rf = RankFiles(rank=0, dir=d)
    for p in sorted(d.iterdir()):
        if p.is_file() and not p.is_symlink():
            rf.add(p.name, p)
    for p in sorted(d.parent.glob("profiler_info*.json")):
        rf.add("profiler_info", p)
    run.ranks[0] = rf
    run.issues.append(DataIssue(run.rel(d), "profiler output files without their *_ascend_pt/ms rank folder; "
                                "treated as a single rank (rank 0)", "info"))
    return run


# --- MindInsight flat folder ---------------------------------------------------------------------


def _legacy_run(root: Path, d: Path, files: list[Path], prof_dirs: list[Path]) -> RunLayout:
    run = RunLayout(root=root, base=d, layout="mindinsight")
    for p in files:
        m = CLUSTER_ANALYSE_RE.match(p.name)
        if m:
            rank = int(m.group("rank"))
            run.parallel_hint = {"mode": m.group("mode"), "stages": int(m.group("stages")),
                                 "size": int(m.group("size")), "source": p.name}
            family = "cluster_analyse"
        else:
            m = LEGACY_FILE_RE.match(p.name)
            assert m is not None
            rank = int(m.group("rank"))
            family = legacy_family(p.name)
        rf = run.ranks.setdefault(rank, RankFiles(rank=rank, dir=d))
        rf.add(family, p)
    # msprof PROF_* folders in the same profiler folder: a fallback source of step traces
    mine = [p for p in prof_dirs if p.parent == d]
    if mine:
        run.run_files["prof_dirs"] = mine
        for rank, devdir in _prof_devices(mine):
            rf = run.ranks.setdefault(rank, RankFiles(rank=rank, dir=d))
            rf.add("msprof_device", devdir)
    # raw HCCL task traces (MindInsight's input for hccl_raw): hccl_info/<op>_<a>_<b>_dev<N>/iter<k>.trace
    hinfo = d / "hccl_info"
    if hinfo.is_dir() and _inside(hinfo, root):
        for opdir in sorted(hinfo.iterdir()):
            m = re.search(r"_dev(\d+)$", opdir.name)
            if not m or not opdir.is_dir() or not _inside(opdir, root):
                continue
            rf = run.ranks.setdefault(int(m.group(1)), RankFiles(rank=int(m.group(1)), dir=d))
            for t in sorted(opdir.glob("iter*.trace")):
                if _inside(t, root):
                    rf.add("hccl_trace", t)
    if (d / "step_trace_point_info.json").is_file():
        run.run_files["step_trace_point_info"] = [d / "step_trace_point_info.json"]
    return run


def _prof_devices(profs: list[Path]) -> list[tuple[int, Path]]:
    out = []
    for prof in profs:
        for dev in sorted(prof.glob("device_*")):
            m = re.match(r"^device_(\d+)$", dev.name)
            if m and dev.is_dir():
                rank = peek.msprof_rank(dev)
                out.append((rank if rank is not None else int(m.group(1)), dev))
    return out


def _msprof_run(root: Path, parent: Path, profs: list[Path]) -> RunLayout:
    run = RunLayout(root=root, base=parent, layout="msprof")
    for rank, dev in _prof_devices(profs):
        if rank in run.ranks:
            run.issues.append(DataIssue(run.rel(dev), f"a second msprof folder for rank {rank}; ignored", "warning"))
            continue
        rf = RankFiles(rank=rank, dir=dev)
        rf.add("msprof_device", dev)
        run.ranks[rank] = rf
    return run


# --- PyTorch (Kineto) traces ---------------------------------------------------------------------


def _kineto_run(root: Path, d: Path, files: list[Path]) -> RunLayout:
    run = RunLayout(root=root, base=d, layout="kineto")
    unknown = []
    for p in files:
        info = peek.kineto_header(p)
        rank = info.get("rank")
        if rank is None:
            m = re.search(r"rank[_-]?(\d+)", p.name)
            rank = int(m.group(1)) if m else None
        if rank is None:
            unknown.append(p)
            continue
        if rank in run.ranks:
            run.issues.append(DataIssue(run.rel(p), f"a second trace for rank {rank}; ignored", "warning"))
            continue
        rf = RankFiles(rank=rank, dir=d, host=info.get("host"))
        rf.add("kineto_trace", p)
        run.ranks[rank] = rf
    if unknown and not run.ranks and len(unknown) == 1:
        rf = RankFiles(rank=0, dir=d)
        rf.add("kineto_trace", unknown[0])
        run.ranks[0] = rf
    else:
        for p in unknown:
            run.issues.append(DataIssue(run.rel(p), "no rank in the trace (distributedInfo) or file name; skipped"))
    return run


# --- msprof-analyze output only ------------------------------------------------------------------


def _cluster_output_run(root: Path, d: Path) -> RunLayout:
    run = RunLayout(root=root, base=d.parent, layout="cluster_analysis")
    run.run_files["cluster_step_trace_time"] = [d / "cluster_step_trace_time.csv"]
    for name in ("cluster_communication.json", "cluster_communication_matrix.json", "communication_group.json"):
        if (d / name).is_file():
            run.run_files[name] = [d / name]
    meta = sorted(d.parent.glob("**/profiler_metadata.json"))
    if meta:
        run.run_files["profiler_metadata"] = meta[:1]
    for rank in peek.cluster_step_trace_ranks(d / "cluster_step_trace_time.csv"):
        rf = RankFiles(rank=rank, dir=d)
        run.ranks[rank] = rf
    if not run.ranks:
        run.issues.append(DataIssue(run.rel(d / "cluster_step_trace_time.csv"), "no rank rows could be read"))
    return run
