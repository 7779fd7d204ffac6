"""Find the profiled runs under a folder: which layout, which ranks, which files belong to each rank.

Discovery only lists folders (plus tiny metadata peeks through `reportgen.discover.peek`); it never parses data,
and it imports nothing from the loaders.

What it promises the loaders:
* only regular files are handed on: FIFOs, sockets, device files and folders standing where a file is expected are
  named in data quality and left alone (a named pipe never blocks the report);
* nothing outside the run folder is read: a symbolic link is followed only when it leads to a regular file inside
  the run, every other link (outside, broken, looping, to a folder) is named and not followed;
* listing is bounded (`MAX_ENTRIES`, `MAX_DIR_ENTRIES`, `MAX_DEPTH`), files with holes (sparse, never written) are
  named and skipped.

Rank folders are grouped into runs by what ties them (see `_ascend_runs`): the folder that holds them, the
launch (process id and start time in the folder name), world size; never across sibling experiment folders.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Iterable, Optional

from reportgen.discover import peek
from reportgen.errors import NoProfilingData
from reportgen.model import LAYOUT_LABELS, DataIssue  # noqa: F401 - LAYOUT_LABELS re-exported for callers

MAX_DEPTH = 6
MAX_ENTRIES = 400_000  # folder entries looked at in all; beyond this the walk stops (and says so)
MAX_DIR_ENTRIES = 100_000  # entries looked at in one folder
MANY_ENTRIES = 10_000  # a folder with more entries than this gets a note
SPARSE_CHECK_BYTES = 64 * 1024 * 1024  # files at least this large are checked for holes
JOB_GAP_S = 120.0  # rank folders of one launch start within this of each other (consecutive start times)

ASCEND_DIR_RE = re.compile(r"_ascend_(pt|ms)$")
ASCEND_DIR_NAME_RE = re.compile(r"^(?P<host>.+?)_(?P<pid>\d+)_(?P<ts>\d{14,17})_ascend_(pt|ms)$")

# File families. Loaders for new inputs add their names here (one entry each).
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
LEGACY_SUFFIXES = ("_detail_time", "_type", "_detail")
LEGACY_EXTS = ("csv", "json", "txt", "pb")
LEGACY_FILE_RE = re.compile(
    r"^(?P<family>" + "|".join(sorted(LEGACY_FAMILIES, key=len, reverse=True)) + r")_(?P<rank>\d+)"
    r"(?P<suffix>" + "|".join(LEGACY_SUFFIXES) + r")?\.(?P<ext>" + "|".join(LEGACY_EXTS) + r")$"
)
CLUSTER_ANALYSE_RE = re.compile(
    r"^(?:ascend|gpu)_cluster_analyse_(?P<mode>[a-z-]+)_(?P<stages>\d+)_(?P<size>\d+)_(?P<rank>\d+)\.csv$"
)
FRAMEWORK_RANK_RE = re.compile(r"_(\d+)\.(csv|txt)$")
KINETO_RE = re.compile(r"\.pt\.trace\.json(\.gz)?$")
# Files of ASCEND_PROFILER_OUTPUT (every file there is listed under its own name; these mark a bare folder).
MODERN_FILES = (
    "step_trace_time.csv", "kernel_details.csv", "op_statistic.csv", "trace_view.json",
    "communication.json", "communication_matrix.json", "api_statistic.csv", "operator_details.csv",
    "memory_record.csv", "operator_memory.csv", "npu_module_mem.csv", "l2_cache.csv", "dataset.csv",
    "analysis.db", "data_preprocess.csv", "static_op_mem.csv",
)
RANK_META_FILES = ("profiler_info.json", "profiler_metadata.json")
CLUSTER_FILES = ("cluster_communication.json", "cluster_communication_matrix.json", "communication_group.json")

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
    name: str = ""  # set when several runs share one folder (profiling cycles, relaunches): tells them apart
    key: str = ""  # the short form of `name` for file names ("cycle1", "launch2-cycle1")
    world_size: Optional[int] = None  # from the ranks' metadata, when it says
    group_ranks: set[int] = field(default_factory=set)  # ranks named by the parallel groups of the metadata

    def rel(self, path: Path) -> str:
        return relpath(path, self.root)

    @property
    def label(self) -> str:
        """How the run is named to the user: its folder (never "."), and `name` when the folder holds several."""
        rel = self.rel(self.base)
        if rel in ("", "."):
            rel = self.root.resolve().name or "run"
        return f"{rel} ({self.name})" if self.name else rel

    @property
    def slug(self) -> str:
        rel = self.rel(self.base)
        rel = "run" if rel in ("", ".") else rel
        if self.key or self.name:
            rel += "-" + (self.key or self.name)
        return re.sub(r"[^A-Za-z0-9_.-]+", "_", rel).strip("_") or "run"


def relpath(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.name


def _inside(path: Path, root: Path) -> bool:
    """Whether `path`, links resolved, is inside `root`. Never raises (loops and broken links are outside)."""
    try:
        real, base = os.path.realpath(path), os.path.realpath(root)
    except (OSError, RuntimeError, ValueError):
        return False
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def _size(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


PROFILER_DB_RE = re.compile(r"^ascend_(pytorch|mindspore)_profiler(?:_(\d+))?\.db$")
MSPROF_DB_RE = re.compile(r"^msprof_.*\.db$")
# Any name a profiler gives a data file: a data-file extension, or msprof's `info.json.N` / `start_info.N`. A folder
# named like this stands where a file was (fuzz sweep: a folder in place of `ascend_pytorch_profiler_0.db`,
# `cpu_framework_0.txt` or a PROF_* `hccl_0_2_2.json` was skipped with nothing in data quality).
FILE_LIKE_RE = re.compile(r"\.(csv|json|db|db-wal|db-shm|db-journal|txt|trace|gz)$|"
                          r"^(info\.json|start_info|end_info|sample\.json)\.\d+$", re.I)


def _expected_name(name: str) -> bool:
    """A name profiler output uses for a file (so a folder or pipe by that name is a damaged file)."""
    return bool(name in MODERN_FILES or name in RANK_META_FILES or name in CLUSTER_FILES
                or name == "cluster_step_trace_time.csv" or LEGACY_FILE_RE.match(name)
                or CLUSTER_ANALYSE_RE.match(name) or KINETO_RE.search(name)
                or re.match(r"^profiler_info_\d+\.json$", name) or PROFILER_DB_RE.match(name)
                or MSPROF_DB_RE.match(name) or FILE_LIKE_RE.search(name))


_KIND = {stat.S_IFIFO: "a named pipe (FIFO)", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a character device",
         stat.S_IFBLK: "a block device"}


class _Fs:
    """Lists the run's folders once each: regular files and real sub-folders, everything else named."""

    def __init__(self, root: Path):
        self.root = root
        self.issues: dict[tuple[str, str], DataIssue] = {}
        self._cache: dict[Path, tuple[list[Path], list[Path]]] = {}
        self.entries = 0
        self.stopped = False

    def note(self, p: Path, problem: str, severity: str = "warning") -> None:
        rel = relpath(p, self.root)
        self.issues.setdefault((rel, problem), DataIssue(rel, problem, severity))

    def listdir(self, d: Path) -> tuple[list[Path], list[Path]]:
        """(regular files, folders) of `d`, sorted by name; links and special files are named, not returned."""
        got = self._cache.get(d)
        if got is not None:
            return got
        files: list[Path] = []
        dirs: list[Path] = []
        try:
            with os.scandir(d) as it:
                entries = []
                for n, e in enumerate(it):
                    if n >= MAX_DIR_ENTRIES or self.entries >= MAX_ENTRIES:
                        self.stopped = True
                        self.note(d, f"folder has more entries than msreport looks at ({n:,} listed); "
                                     "the rest were not examined", "warning")
                        break
                    self.entries += 1
                    entries.append(e)
        except OSError as e:
            self.note(d, f"folder cannot be listed ({e.strerror or e}); skipped")
            self._cache[d] = (files, dirs)
            return files, dirs
        if len(entries) > MANY_ENTRIES:
            self.note(d, f"folder holds {len(entries):,} entries; only files with profiler output names "
                         "were used", "info")
        for e in sorted(entries, key=lambda e: e.name):
            p = Path(e.path)
            try:
                if e.is_symlink():
                    self._link(p, files, dirs)
                elif e.is_dir(follow_symlinks=False):
                    if _expected_name(e.name):
                        self.note(p, "a folder stands where this profiler file is expected; not read")
                    dirs.append(p)
                elif e.is_file(follow_symlinks=False):
                    if self._regular_ok(p, e.stat(follow_symlinks=False)):
                        files.append(p)
                else:
                    kind = _KIND.get(stat.S_IFMT(e.stat(follow_symlinks=False).st_mode), "not a regular file")
                    self.note(p, f"{kind}, not a regular file; not read",
                              "warning" if _expected_name(e.name) else "info")
            except OSError as err:
                self.note(p, f"cannot be examined ({err.strerror or err}); skipped")
        self._cache[d] = (files, dirs)
        return files, dirs

    def _link(self, p: Path, files: list[Path], dirs: list[Path]) -> None:
        if not _inside(p, self.root):
            self.note(p, "symbolic link leads outside the run folder; not followed")
            return
        try:
            st = os.stat(p)
        except (OSError, RuntimeError) as err:
            why = "loops" if getattr(err, "errno", None) == errno.ELOOP else "is broken"
            self.note(p, f"symbolic link {why}; not followed")
            return
        if stat.S_ISREG(st.st_mode):
            if self._regular_ok(p, st):
                files.append(p)  # a file inside the run: reading it reads the run
        elif stat.S_ISDIR(st.st_mode):
            self.note(p, f"symbolic link to a folder inside the run ({relpath(Path(os.path.realpath(p)), self.root.resolve())}); "
                         "not followed (the folder is read where it is)", "info")
        else:
            self.note(p, "symbolic link to something that is not a regular file; not followed")

    def _regular_ok(self, p: Path, st: os.stat_result) -> bool:
        """False (and a note) for a large file that is mostly holes: its content was never written."""
        if st.st_size < SPARSE_CHECK_BYTES:
            return True
        on_disk = getattr(st, "st_blocks", None)
        if on_disk is None or on_disk * 512 >= st.st_size // 2:
            return True
        data = _data_bytes(p, st.st_size)
        if data is None or data >= st.st_size // 2:
            return True
        self.note(p, f"file is {_size(st.st_size)} long but only {_size(data)} of it was ever written (a sparse "
                     "file, most of it holes: an interrupted copy or a pre-allocated file); not read")
        return False

    def files(self, d: Path) -> list[Path]:
        return self.listdir(d)[0]

    def dirs(self, d: Path) -> list[Path]:
        return self.listdir(d)[1]

    def file(self, d: Path, name: str) -> Optional[Path]:
        return next((p for p in self.files(d) if p.name == name), None)

    def subdir(self, d: Path, name: str) -> Optional[Path]:
        return next((p for p in self.dirs(d) if p.name == name), None)


def _data_bytes(p: Path, size: int) -> Optional[int]:
    """Bytes of `p` that hold data (SEEK_DATA / SEEK_HOLE), or None where the file system cannot tell."""
    if not hasattr(os, "SEEK_DATA"):
        return None
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        total, pos = 0, 0
        for _ in range(10_000):
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:  # ENXIO: no data after pos
                break
            end = os.lseek(fd, start, os.SEEK_HOLE)
            total += end - start
            pos = end
            if pos >= size:
                break
        else:
            return None
        return total
    except OSError:
        return None
    finally:
        os.close(fd)


@dataclass
class _Scan:
    ascend_dirs: list[Path] = field(default_factory=list)
    legacy_dirs: dict[Path, list[Path]] = field(default_factory=dict)
    prof_dirs: list[Path] = field(default_factory=list)
    kineto: dict[Path, list[Path]] = field(default_factory=dict)
    bare_modern: list[Path] = field(default_factory=list)
    cluster_outputs: list[Path] = field(default_factory=list)
    metadata_files: list[Path] = field(default_factory=list)


def _walk(fs: _Fs) -> _Scan:
    scan = _Scan()
    seen: set[tuple[int, int]] = set()
    stack: list[tuple[Path, int]] = [(fs.root, 0)]
    while stack:
        d, depth = stack.pop()
        try:
            st = os.stat(d)
            key = (st.st_dev, st.st_ino)
        except OSError:
            continue
        if key in seen:  # a bind mount looping back; symbolic links are never followed
            fs.note(d, "folder seen twice (a mount looping back into the run); read once", "info")
            continue
        seen.add(key)
        files, dirs = fs.listdir(d)
        names = {p.name for p in files}
        if d != fs.root and ".msreport" in names:
            continue  # our own earlier output
        dirnames = [p.name for p in dirs]
        if ASCEND_DIR_RE.search(d.name) or "ASCEND_PROFILER_OUTPUT" in dirnames:
            scan.ascend_dirs.append(d)
            continue  # the rank folder is read as a whole by _ascend_rank
        if d.name.startswith("PROF_") and any(n.startswith("device_") for n in dirnames):
            scan.prof_dirs.append(d)
            continue
        if d.name.startswith("PROF_") and any(MSPROF_DB_RE.match(n) for n in names):
            scan.ascend_dirs.append(d)  # msprof's unified DB on its own (no *_ascend_* folder around it): one rank
            continue
        if d.name == "cluster_analysis_output" and "cluster_step_trace_time.csv" in names:
            scan.cluster_outputs.append(d)
            continue
        scan.metadata_files.extend(p for p in files if p.name == "profiler_metadata.json")
        legacy = [p for p in files if LEGACY_FILE_RE.match(p.name) or CLUSTER_ANALYSE_RE.match(p.name)]
        if legacy:
            scan.legacy_dirs[d] = legacy
        kin = [p for p in files if KINETO_RE.search(p.name)]
        if kin:
            scan.kineto[d] = kin
        if not legacy and any(p.name in MODERN_FILES for p in files):
            scan.bare_modern.append(d)
        if depth < MAX_DEPTH:
            stack.extend((p, depth + 1) for p in reversed(dirs) if not p.name.startswith("."))
    scan.ascend_dirs.sort()
    return scan


def discover(root: Path) -> list[RunLayout]:
    """Return the runs found under `root` (usually one). Raise `NoProfilingData` when there is none."""
    root = Path(root)
    if not root.exists():
        raise NoProfilingData(f"run folder {root} does not exist")
    if not root.is_dir():
        raise NoProfilingData(f"{root} is not a folder; give the folder that holds the profiler output")
    fs = _Fs(root)
    scan = _walk(fs)
    runs: list[RunLayout] = []

    runs.extend(_ascend_runs(fs, scan.ascend_dirs))
    for d, files in scan.legacy_dirs.items():
        runs.append(_legacy_run(fs, d, files, scan.prof_dirs))
    covered_prof = {p for r in runs if r.layout == "mindinsight" for p in r.run_files.get("prof_dirs", [])}
    prof_by_parent: dict[Path, list[Path]] = {}
    for p in scan.prof_dirs:
        if p not in covered_prof:
            prof_by_parent.setdefault(p.parent, []).append(p)
    for parent, profs in prof_by_parent.items():
        runs.append(_msprof_run(fs, parent, profs))
    for d, files in scan.kineto.items():
        runs.extend(_kineto_runs(fs, d, files))
    for d in scan.bare_modern:
        runs.append(_bare_modern_run(fs, d))
    for d in scan.cluster_outputs:
        owner = next((r for r in runs if r.layout in ("ascend", "mindinsight") and _inside(d, r.base)), None)
        if owner is not None:
            # msprof-analyze writes its output into the run folder; the per-rank files are the source.
            owner.issues.append(DataIssue(relpath(d, root), "msprof-analyze output found beside the per-rank "
                                          "data; the per-rank files were used instead", "info"))
            continue
        runs.append(_cluster_output_run(fs, d, scan.metadata_files))

    runs = [r for r in runs if r.ranks]
    for r in runs:
        _missing_ranks(r)
    if not runs:
        raise NoProfilingData(f"no profiler output found under {root}: looked for {WHAT_WE_LOOK_FOR}")
    runs.sort(key=lambda r: (r.rel(r.base), r.name))
    _attach(runs, list(fs.issues.values()))
    return runs


def _attach(runs: list[RunLayout], issues: list[DataIssue]) -> None:
    """Each walk note goes to the run whose folder holds the path (the deepest), else to the first run."""
    for i in issues:
        p = runs[0].root / i.file
        owners = [r for r in runs if _under(p, r.base)]
        if owners:
            max(owners, key=lambda r: len(r.base.parts)).issues.append(i)
        else:
            runs[0].issues.insert(0, i)


def _under(p: Path, base: Path) -> bool:
    try:
        p.relative_to(base)
        return True
    except ValueError:
        return False


def _compact(ranks: Iterable[int]) -> str:
    rs = sorted(set(ranks))
    parts: list[str] = []
    i = 0
    while i < len(rs):
        j = i
        while j + 1 < len(rs) and rs[j + 1] == rs[j] + 1:
            j += 1
        parts.append(str(rs[i]) if i == j else f"{rs[i]}-{rs[j]}")
        i = j + 1
    return ", ".join(parts)


def _missing_ranks(run: RunLayout) -> None:
    """A rank the run's own metadata says existed, with no files: a warning naming it (never invented)."""
    expected: set[int] = set()
    sources: list[str] = []
    ws = run.world_size
    if ws is None and run.parallel_hint.get("size"):
        ws = int(run.parallel_hint["size"])
        sources.append(f"{run.parallel_hint['source']} (cluster size {ws})")
    elif ws is not None:
        sources.append(f"world size {ws} in the ranks' metadata")
    if ws is not None and 0 < ws <= 1_000_000 and max(run.ranks, default=0) < ws:
        expected.update(range(ws))  # (rank ids at or above the size mean the ids are not 0..size-1: no claim)
    else:
        sources.clear()
    if run.group_ranks - set(run.ranks):
        expected.update(run.group_ranks)
        sources.append("parallel_group_info of profiler_metadata.json")
    missing = sorted(expected - set(run.ranks))
    if not missing or not run.ranks:
        return
    word = "rank" if len(missing) == 1 else "ranks"
    run.issues.append(DataIssue(
        "", f"{word} {_compact(missing)} missing: {' and '.join(sources)} show{'s' if len(sources) == 1 else ''} "
            f"{'it' if len(missing) == 1 else 'they'} took part, but no files of "
            f"{'it' if len(missing) == 1 else 'them'} were found; the run is reported without "
            f"{'it' if len(missing) == 1 else 'them'}",
        # one rank of a larger job profiled alone is a common choice, not damage: context (coverage says what a lone
        # rank cannot show); a rank missing among several profiled ones is a warning
        "info" if len(run.ranks) == 1 else "warning", ranks=tuple(missing)))


# --- Ascend (*_ascend_pt / *_ascend_ms) ------------------------------------------------------------


@dataclass
class _RankDir:
    d: Path
    rank: Optional[int]
    rf: RankFiles
    pid: Optional[str] = None
    start: float = 0.0  # seconds since the epoch (folder-name time stamp, else the folder's mtime)
    stamp: str = ""  # the folder-name time stamp, for names
    world_size: Optional[int] = None
    group_ranks: set[int] = field(default_factory=set)

    @property
    def proc(self) -> tuple:
        """The process that wrote the folder (host, pid), or the folder itself when its name does not say."""
        return (self.rf.host, self.pid) if self.pid is not None else (str(self.d),)

    @property
    def suffix(self) -> str:
        m = ASCEND_DIR_RE.search(self.d.name)
        return m.group(1) if m else ""


def _ascend_rank(fs: _Fs, d: Path) -> _RankDir:
    """Identify the rank of one *_ascend_* folder and list its files."""
    rf = RankFiles(rank=-1, dir=d)
    rd = _RankDir(d=d, rank=None, rf=rf)
    m = ASCEND_DIR_NAME_RE.match(d.name)
    if m:
        rf.host, rd.pid = m.group("host"), m.group("pid")
        rd.stamp = m.group("ts")
        try:
            rd.start = datetime.strptime(rd.stamp[:14], "%Y%m%d%H%M%S").timestamp() + int(rd.stamp[14:] or 0) / 1000
        except ValueError:
            rd.start = 0.0
    if not rd.start:
        rd.start = _mtime(d)
    rank: Optional[int] = None
    files = fs.files(d)
    for p in files:
        mm = re.match(r"^profiler_info_(\d+)\.json$", p.name)
        if mm:
            rank = int(mm.group(1))
            rf.add("profiler_info", p)
            rd.world_size = rd.world_size or peek.profiler_info_facts(p).get("world_size")
    pinfo = fs.file(d, "profiler_info.json")
    if pinfo is not None:
        rf.add("profiler_info", pinfo)
        if rank is None:
            rank = peek.profiler_info_rank(pinfo)
    meta = fs.file(d, "profiler_metadata.json")
    if meta is not None:
        rf.add("profiler_metadata", meta)
        facts = peek.metadata_facts(meta)
        rd.world_size = facts.get("world_size") or rd.world_size
        rd.group_ranks = facts.get("group_ranks", set())
    out = fs.subdir(d, "ASCEND_PROFILER_OUTPUT")
    if out is not None:
        for p in fs.files(out):
            rf.add(p.name, p)
            _add_legacy_family(rf, p)
            mm = PROFILER_DB_RE.match(p.name)
            if mm:
                rf.add("profiler_db", p)
            if mm and mm.group(2) and rank is None:
                rank = int(mm.group(2))
    profs = [d] if d.name.startswith("PROF_") else [p for p in fs.dirs(d) if p.name.startswith("PROF_")]
    for prof in profs:  # msprof's own unified DB (PROF_*/msprof_*.db, kept without data simplification)
        for p in (files if prof == d else fs.files(prof)):
            if MSPROF_DB_RE.match(p.name):
                rf.add("profiler_db", p)
    fw = fs.subdir(d, "FRAMEWORK")
    if fw is not None:
        suffixes = set()
        for p in fs.files(fw):
            rf.add("framework/" + p.name, p)
            _add_legacy_family(rf, p)
            mm = FRAMEWORK_RANK_RE.search(p.name)
            if mm and p.name.startswith("cpu_"):
                suffixes.add(int(mm.group(1)))
        if rank is None and len(suffixes) == 1:
            rank = suffixes.pop()
    rd.rank = rank
    return rd


def legacy_family(name: str) -> Optional[str]:
    """`minddata_pipeline_raw_0.csv` -> `minddata_pipeline_raw.csv` (the key MindInsight-style files are listed under)."""
    m = LEGACY_FILE_RE.match(name)
    return m.group("family") + (m.group("suffix") or "") + "." + m.group("ext") if m else None


def _add_legacy_family(rf: RankFiles, p: Path) -> None:
    """MindSpore 2.3+ also writes MindInsight-style `*_{rank}` files (MindData, CPU operators, memory)."""
    fam = legacy_family(p.name)
    if fam is not None:
        rf.add(fam, p)


def _ascend_runs(fs: _Fs, dirs: list[Path]) -> list[RunLayout]:
    """Group rank folders into runs.

    1. By the folder that holds them: sibling experiment folders are never mixed.
    2. Inside one folder, only when some rank is claimed twice: by launch. A process (host and pid in the folder
       name) that wrote several folders was profiled in several cycles (a schedule with repeat > 1): cycle k of
       every process is one run, so no profiled window is dropped. Processes that start more than `JOB_GAP_S`
       after the previous one belong to a new launch (a rerun into the same folder): a run of its own. Only two
       processes of one launch claiming the same rank are a true duplicate: the newer folder wins, with a warning.
    3. Runs of different folders are joined only when the metadata ties them: same world size (known), disjoint
       ranks that fit in it, same framework, launched together (the ranks of several hosts copied side by side).
    """
    by_parent: dict[Path, list[_RankDir]] = {}
    for d in dirs:
        rd = _ascend_rank(fs, d)
        if not rd.rf.files:
            fs.note(d, "rank folder is empty; skipped")
            continue
        by_parent.setdefault(d.parent, []).append(rd)
    groups: list[tuple[Path, str, list[_RankDir], list[DataIssue]]] = []
    for parent, rds in sorted(by_parent.items()):
        groups.extend(_split_folder(fs, parent, rds))
    groups = _join_hosts(groups)
    runs = []
    for base, (name, key), rds, issues in groups:
        run = RunLayout(root=fs.root, base=base, layout="ascend", name=name, key=key)
        run.issues.extend(issues)
        for rd in rds:
            rd.rf.rank = int(rd.rank)  # type: ignore[arg-type]
            run.ranks[rd.rf.rank] = rd.rf
        sizes = sorted({rd.world_size for rd in rds if rd.world_size})
        if len(sizes) == 1:
            run.world_size = sizes[0]
        elif len(sizes) > 1:
            run.issues.append(DataIssue("", f"the ranks' metadata disagree on the world size ({', '.join(map(str, sizes))})"))
        run.group_ranks = set().union(*(rd.group_ranks for rd in rds))
        runs.append(run)
    return runs


def _split_folder(fs: _Fs, parent: Path, rds: list[_RankDir]) -> list[tuple[Path, str, list[_RankDir], list[DataIssue]]]:
    rel = relpath
    issues: list[DataIssue] = []
    known = [rd for rd in rds if rd.rank is not None]
    unknown = [rd for rd in rds if rd.rank is None]
    if unknown:
        if not known and len(unknown) == 1:
            unknown[0].rank = 0
            known = unknown
            issues.append(DataIssue(rel(unknown[0].d, fs.root), "no rank id in the folder (no "
                                    "profiler_info_{rank}.json); treated as rank 0", "info"))
        else:
            for rd in unknown:
                fs.note(rd.d, "cannot tell which rank this folder belongs to (no profiler_info_{rank}.json or "
                              "rank-suffixed files); skipped")
    if not known:
        return []
    # [issue 30] a folder without the profiler's time stamp in its name (a copy, a renamed folder) that claims a rank
    # a stamped folder also holds: the stamped one is used, the other named (never a launch of its own)
    stamped = {rd.rank: rd for rd in known if rd.stamp}
    for rd in [rd for rd in known if not rd.stamp and rd.rank in stamped]:
        known.remove(rd)
        issues.append(DataIssue(rel(rd.d, fs.root), f"claims rank {rd.rank}, as {rel(stamped[rd.rank].d, fs.root)} "
                                f"does; that one was used (its name carries the profiler's time stamp, this one's "
                                f"does not: a copy or a renamed folder?) and this folder was ignored", "warning",
                                (int(rd.rank),), kind="conflict"))
    counts: dict[int, int] = {}
    for rd in known:
        counts[rd.rank] = counts.get(rd.rank, 0) + 1  # type: ignore[index]
    if all(c == 1 for c in counts.values()):
        return [(parent, ("", ""), known, issues)]
    # processes, each with its folders in time order (several folders = several profiling cycles)
    procs: dict[tuple, list[_RankDir]] = {}
    for rd in sorted(known, key=lambda r: (r.start, r.d.name)):
        procs.setdefault(rd.proc, []).append(rd)
    order = sorted(procs.values(), key=lambda ds: (ds[0].start, ds[0].d.name))
    launches: list[list[list[_RankDir]]] = []
    last = None
    for ds in order:
        if last is None or ds[0].start - last > JOB_GAP_S:
            launches.append([])
        launches[-1].append(ds)
        last = ds[0].start
    out = []
    for li, launch in enumerate(launches):
        cycles = max(len(ds) for ds in launch)
        for k in range(cycles):
            members: dict[int, _RankDir] = {}
            lost: list[DataIssue] = []
            for ds in launch:
                if k >= len(ds):
                    continue
                rd = ds[k]
                prev = members.get(rd.rank)  # type: ignore[arg-type]
                if prev is not None:  # two processes of one launch claim the rank: the newer folder wins
                    older, newer = sorted((prev, rd), key=lambda r: (r.start, _mtime(r.d), r.d.name))
                    members[rd.rank] = newer  # type: ignore[index]
                    lost.append(DataIssue(rel(older.d, fs.root), f"a newer folder ({rel(newer.d, fs.root)}) of the "
                                          f"same launch also holds rank {rd.rank}; this older one was ignored"))
                else:
                    members[rd.rank] = rd  # type: ignore[index]
            if not members:
                continue
            first = min(members.values(), key=lambda r: r.start)
            when = _stamp(first)
            parts = []
            if len(launches) > 1:
                parts.append(f"launch {li + 1} of {len(launches)}")
            if cycles > 1:
                parts.append(f"cycle {k + 1} of {cycles}")
            name = ", ".join(parts) + (f", {when}" if when else "")
            key = "-".join(p.replace(" of ", "of").split(" ")[0] + p.split(" ")[1] for p in parts)
            note = DataIssue(rel(parent, fs.root), (
                f"this folder holds {len(launches)} launches" if len(launches) > 1 else
                f"the processes in this folder were profiled in {cycles} cycles (a profiler schedule with "
                f"repeat > 1)") + "; each is reported as a run of its own: " + name, "info")
            missing = [ds[0].rank for ds in launch if k >= len(ds) and ds[0].rank not in members]
            extra = []
            if missing:
                extra.append(DataIssue(rel(parent, fs.root), f"rank(s) {_compact(missing)} have no folder for "
                                       f"{name}", "warning", ranks=tuple(sorted(set(missing)))))
            out.append((parent, (name, key), sorted(members.values(), key=lambda r: r.rank),
                        issues + [note] + lost + extra))
    return out


def _mtime(d: Path) -> float:
    try:
        return d.stat().st_mtime
    except OSError:
        return 0.0


def _stamp(rd: _RankDir) -> str:
    if not rd.stamp:
        return ""
    s = rd.stamp
    return f"{s[0:4]}-{s[4:6]}-{s[6:8]} {s[8:10]}:{s[10:12]}:{s[12:14]}"


def _join_hosts(groups: list[tuple[Path, str, list[_RankDir], list[DataIssue]]]):
    """Join single-launch runs of different folders that one job wrote (see `_ascend_runs`, point 3)."""
    def ws(g):
        sizes = {rd.world_size for rd in g[2]}
        return sizes.pop() if len(sizes) == 1 else None

    out: list = []
    for g in sorted(groups, key=lambda g: min(rd.start for rd in g[2])):
        size = ws(g)
        target = None
        if not g[1][0] and size:
            for h in out:
                if h[1][0] or ws(h) != size or h[0] == g[0]:
                    continue
                ranks_h = {rd.rank for rd in h[2]}
                ranks_g = {rd.rank for rd in g[2]}
                sfx = {rd.suffix for rd in h[2]} | {rd.suffix for rd in g[2]}
                if (ranks_h & ranks_g or len(ranks_h | ranks_g) > size or max(ranks_h | ranks_g) >= size
                        or len(sfx) > 1):
                    continue
                t_h = [rd.start for rd in h[2]]
                t_g = [rd.start for rd in g[2]]
                if min(t_g) - max(t_h) > JOB_GAP_S or min(t_h) - max(t_g) > JOB_GAP_S:
                    continue
                target = h
                break
        if target is None:
            out.append(g)
        else:
            i = out.index(target)
            base = Path(os.path.commonpath([target[0], g[0]]))
            out[i] = (base, ("", ""), target[2] + g[2], target[3] + g[3])
    return out


def _bare_modern_run(fs: _Fs, d: Path) -> RunLayout:
    run = RunLayout(root=fs.root, base=d, layout="ascend")
    rf = RankFiles(rank=0, dir=d)
    for p in fs.files(d):
        rf.add(p.name, p)
    for p in (fs.files(d.parent) if d != fs.root else []):  # never list above the run folder
        if p.name.startswith("profiler_info") and p.name.endswith(".json"):
            rf.add("profiler_info", p)
    run.ranks[0] = rf
    run.issues.append(DataIssue(run.rel(d), "profiler output files without their *_ascend_pt/ms rank folder; "
                                "treated as a single rank (rank 0)", "info"))
    return run


# --- MindInsight flat folder ---------------------------------------------------------------------


def _legacy_run(fs: _Fs, d: Path, files: list[Path], prof_dirs: list[Path]) -> RunLayout:
    run = RunLayout(root=fs.root, base=d, layout="mindinsight")
    sizes: set[int] = set()
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
            if family == "profiler_info.json" and len(sizes) < 2:
                size = peek.profiler_info_facts(p).get("world_size")
                if size:
                    sizes.add(size)
        rf = run.ranks.setdefault(rank, RankFiles(rank=rank, dir=d))
        rf.add(family, p)
    if len(sizes) == 1:
        run.world_size = sizes.pop()
    # msprof PROF_* folders in the same profiler folder: a fallback source of step traces
    mine = [p for p in prof_dirs if p.parent == d]
    if mine:
        run.run_files["prof_dirs"] = mine
        for rank, devdir in _prof_devices(fs, mine):
            rf = run.ranks.setdefault(rank, RankFiles(rank=rank, dir=d))
            rf.add("msprof_device", devdir)
    # raw HCCL task traces (MindInsight's input for hccl_raw): hccl_info/<op>_<a>_<b>_dev<N>/iter<k>.trace
    hinfo = fs.subdir(d, "hccl_info")
    if hinfo is not None:
        for opdir in fs.dirs(hinfo):
            m = re.search(r"_dev(\d+)$", opdir.name)
            if not m:
                continue
            rf = run.ranks.setdefault(int(m.group(1)), RankFiles(rank=int(m.group(1)), dir=d))
            for t in fs.files(opdir):
                if re.match(r"^iter.*\.trace$", t.name):
                    rf.add("hccl_trace", t)
    point = fs.file(d, "step_trace_point_info.json")
    if point is not None:
        run.run_files["step_trace_point_info"] = [point]
    return run


def _prof_devices(fs: _Fs, profs: list[Path]) -> list[tuple[int, Path]]:
    out = []
    for prof in profs:
        for dev in fs.dirs(prof):
            m = re.match(r"^device_(\d+)$", dev.name)
            if m:
                infos = [p for p in fs.files(dev) if p.name.startswith("info.json.")]
                rank = peek.msprof_rank(infos)
                out.append((rank if rank is not None else int(m.group(1)), dev))
    return out


def _msprof_run(fs: _Fs, parent: Path, profs: list[Path]) -> RunLayout:
    run = RunLayout(root=fs.root, base=parent, layout="msprof")
    for rank, dev in _prof_devices(fs, profs):
        if rank in run.ranks:
            run.issues.append(DataIssue(run.rel(dev), f"a second msprof folder for rank {rank}; ignored", "warning"))
            continue
        rf = RankFiles(rank=rank, dir=dev)
        rf.add("msprof_device", dev)
        run.ranks[rank] = rf
    return run


# --- PyTorch (Kineto) traces ---------------------------------------------------------------------


def _kineto_runs(fs: _Fs, d: Path, files: list[Path]) -> list[RunLayout]:
    """The Kineto traces of one folder: one run, or one per job when the traces are of different jobs (another
    device model or world size: never one job with ranks that never ran together)."""
    heads = {p: peek.kineto_header(p) for p in files}
    jobs: dict[tuple, list[Path]] = {}
    for p in files:
        h = heads[p]
        jobs.setdefault((h.get("world_size"), h.get("device_model")), []).append(p)
    known = [k for k in jobs if k != (None, None)]
    if (None, None) in jobs and len(known) == 1:  # traces that say nothing go with the one job that does
        jobs[known[0]].extend(jobs.pop((None, None)))
    # the same rank twice: the traces of runs one after the other (another time base); in time order, a trace
    # whose rank the current job already has starts the next job
    split: dict[tuple, list[Path]] = {}
    for key, ps in jobs.items():
        ranks_seen: set = set()
        part = 0
        for p in sorted(ps, key=lambda q: (heads[q].get("first_ts", float("inf")), q.name)):
            r = heads[p].get("rank")
            if r is not None and r in ranks_seen and heads[p].get("first_ts") is not None:
                part += 1
                ranks_seen = set()
            if r is not None:
                ranks_seen.add(r)
            split.setdefault((*key, part), []).append(p)
    jobs = split
    if len(jobs) == 1:
        return [_kineto_run(fs, d, files, heads)]
    runs = []
    for i, (key, ps) in enumerate(sorted(jobs.items(), key=lambda kv: sorted(kv[1])[0]), start=1):
        run = _kineto_run(fs, d, ps, heads)
        ws, model, part = key
        run.name = ", ".join(x for x in (model, f"world size {ws}" if ws else None,
                                         f"run {part + 1}" if any(k[2] for k in jobs) else None) if x) \
            or f"job {i}"
        run.key = f"job{i}"
        run.issues.append(DataIssue(run.rel(d), f"the folder holds traces of {len(jobs)} different jobs (device "
                                    "model, world size or time base differ, or a rank traced twice); each is "
                                    "reported as its own run", "info"))
        runs.append(run)
    return runs


def _kineto_run(fs: _Fs, d: Path, files: list[Path], heads: Optional[dict] = None) -> RunLayout:
    run = RunLayout(root=fs.root, base=d, layout="kineto")
    unknown = []
    sizes: set[int] = set()
    for p in files:
        info = (heads or {}).get(p) or peek.kineto_header(p)
        rank = info.get("rank")
        if info.get("world_size"):
            sizes.add(int(info["world_size"]))
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
    if len(sizes) == 1:
        run.world_size = sizes.pop()
    if unknown and not run.ranks and len(unknown) == 1:
        rf = RankFiles(rank=0, dir=d)
        rf.add("kineto_trace", unknown[0])
        run.ranks[0] = rf
    else:
        for p in unknown:
            run.issues.append(DataIssue(run.rel(p), "no rank in the trace (distributedInfo) or file name; skipped"))
    return run


# --- msprof-analyze output only ------------------------------------------------------------------


def _cluster_output_run(fs: _Fs, d: Path, metadata_files: list[Path]) -> RunLayout:
    run = RunLayout(root=fs.root, base=d.parent, layout="cluster_analysis")
    csv_path = fs.file(d, "cluster_step_trace_time.csv")
    assert csv_path is not None
    run.run_files["cluster_step_trace_time"] = [csv_path]
    for name in CLUSTER_FILES:
        p = fs.file(d, name)
        if p is not None:
            run.run_files[name] = [p]
    meta = sorted(p for p in metadata_files if _under(p, d.parent))
    if meta:
        run.run_files["profiler_metadata"] = meta[:1]
    for rank in peek.cluster_step_trace_ranks(csv_path):
        rf = RankFiles(rank=rank, dir=d)
        run.ranks[rank] = rf
    if not run.ranks:
        run.issues.append(DataIssue(run.rel(csv_path), "no rank rows could be read"))
    return run
