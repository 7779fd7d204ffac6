"""Ascend rank folders (`*_ascend_pt` / `*_ascend_ms`, a PROF_* folder with msprof's DB, or bare
ASCEND_PROFILER_OUTPUT files): which rank each folder is, and how rank folders group into runs (see
`ascend_runs`: profiling cycles, relaunches, hosts copied side by side)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Optional

from reportgen.dataquality import dq
from reportgen.discover import peek
from reportgen.discover.fs import Fs, relpath
from reportgen.discover.names import (ASCEND_DIR_NAME_RE, ASCEND_DIR_RE, FRAMEWORK_RANK_RE, MSPROF_DB_RE,
                                      PROFILER_DB_RE, add_legacy_family)
from reportgen.discover.runs import RankFiles, RunLayout, compact
from reportgen.model import DataIssue

JOB_GAP_S = 120.0  # rank folders of one launch start within this of each other (consecutive start times)


_SHARED: dict[frozenset, frozenset] = {}


def _shared(ranks: frozenset) -> frozenset:
    """One object for equal rank sets: every rank's profiler_metadata.json names the world group, so at 4,096 ranks
    a set a rank held 16.7M entries (1 GB, and a union over all of them); the ranks of a run share a few sets."""
    if len(_SHARED) > 256:
        _SHARED.clear()
    return _SHARED.setdefault(ranks, ranks)


def _stamp_seconds(s: str) -> float:
    """`datetime.strptime(s, "%Y%m%d%H%M%S").timestamp()`; 14 ASCII digits read field by field (10x faster; a
    field out of range: strptime decides)."""
    if len(s) == 14 and s.isascii() and s.isdigit():
        try:
            return datetime(int(s[:4]), int(s[4:6]), int(s[6:8]), int(s[8:10]), int(s[10:12]),
                            int(s[12:14])).timestamp()
        except ValueError:
            pass
    return datetime.strptime(s, "%Y%m%d%H%M%S").timestamp()


@dataclass
class RankDir:
    d: Path
    rank: Optional[int]
    rf: RankFiles
    pid: Optional[str] = None
    start: float = 0.0  # seconds since the epoch (folder-name time stamp, else the folder's mtime)
    stamp: str = ""  # the folder-name time stamp, for names
    world_size: Optional[int] = None
    group_ranks: frozenset = frozenset()

    @property
    def proc(self) -> tuple:
        """The process that wrote the folder (host, pid), or the folder itself when its name does not say."""
        return (self.rf.host, self.pid) if self.pid is not None else (str(self.d),)

    @property
    def suffix(self) -> str:
        m = ASCEND_DIR_RE.search(self.d.name)
        return m.group(1) if m else ""


def ascend_rank(fs: Fs, d: Path) -> RankDir:
    """Identify the rank of one *_ascend_* folder and list its files."""
    rf = RankFiles(rank=-1, dir=d)
    rd = RankDir(d=d, rank=None, rf=rf)
    m = ASCEND_DIR_NAME_RE.match(d.name)
    if m:
        rf.host, rd.pid = m.group("host"), m.group("pid")
        rd.stamp = m.group("ts")
        try:
            rd.start = _stamp_seconds(rd.stamp[:14]) + int(rd.stamp[14:] or 0) / 1000
        except ValueError:
            rd.start = 0.0
    if not rd.start:
        rd.start = mtime(d)
    rank: Optional[int] = None
    files = fs.files(d)
    infos = []
    for p in files:
        mm = re.match(r"^profiler_info_(\d+)\.json$", p.name)
        if mm:
            rank = int(mm.group(1))
            rf.add("profiler_info", p)
            infos.append(p)
    pinfo = fs.file(d, "profiler_info.json")
    if pinfo is not None:
        rf.add("profiler_info", pinfo)
        if rank is None:
            rank = peek.profiler_info_rank(pinfo)
    meta = fs.file(d, "profiler_metadata.json")
    if meta is not None:
        rf.add("profiler_metadata", meta)
        facts = peek.metadata_facts(meta)
        rd.world_size = facts.get("world_size")
        rd.group_ranks = _shared(frozenset(facts.get("group_ranks", ())))
    for p in infos:  # the metadata's world size first; a profiler_info file is read only where it says none
        rd.world_size = rd.world_size or peek.profiler_info_facts(p).get("world_size")
    out = fs.subdir(d, "ASCEND_PROFILER_OUTPUT")
    if out is not None:
        for p in fs.files(out):
            rf.add(p.name, p)
            add_legacy_family(rf, p)
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
            add_legacy_family(rf, p)
            mm = FRAMEWORK_RANK_RE.search(p.name)
            if mm and p.name.startswith("cpu_"):
                suffixes.add(int(mm.group(1)))
        if rank is None and len(suffixes) == 1:
            rank = suffixes.pop()
    rd.rank = rank
    return rd




def ascend_runs(fs: Fs, dirs: list[Path]) -> list[RunLayout]:
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
    by_parent: dict[Path, list[RankDir]] = {}
    for d in dirs:
        rd = ascend_rank(fs, d)
        if not rd.rf.files:
            fs.note(d, dq("discover.rank-folder-empty-skipped"))
            continue
        by_parent.setdefault(d.parent, []).append(rd)
    groups: list[tuple[Path, str, list[RankDir], list[DataIssue]]] = []
    for parent, rds in sorted(by_parent.items()):
        groups.extend(split_folder(fs, parent, rds))
    groups = join_hosts(groups)
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
            run.issues.append(DataIssue("", dq("discover.world-size-disagrees",
                                               map=", ".join(map(str, sizes)))))
        run.group_ranks = set().union(*{id(rd.group_ranks): rd.group_ranks for rd in rds}.values())
        runs.append(run)
    return runs


def split_folder(fs: Fs, parent: Path, rds: list[RankDir]) -> list[tuple[Path, str, list[RankDir], list[DataIssue]]]:
    rel = relpath
    issues: list[DataIssue] = []
    known = [rd for rd in rds if rd.rank is not None]
    unknown = [rd for rd in rds if rd.rank is None]
    if unknown:
        if not known and len(unknown) == 1:
            unknown[0].rank = 0
            known = unknown
            issues.append(DataIssue(rel(unknown[0].d, fs.root), dq("discover.no-rank-id-folder"), "info"))
        else:
            for rd in unknown:
                fs.note(rd.d, dq("discover.cannot-tell-which-rank"))
    if not known:
        return []
    # [issue 30] a folder without the profiler's time stamp in its name (a copy, a renamed folder) that claims a rank
    # a stamped folder also holds: the stamped one is used, the other named (never a launch of its own)
    stamped = {rd.rank: rd for rd in known if rd.stamp}
    for rd in [rd for rd in known if not rd.stamp and rd.rank in stamped]:
        known.remove(rd)
        issues.append(DataIssue(rel(rd.d, fs.root), dq("discover.rank-claimed-twice", rd=rd.rank,
                                                       rel=rel(stamped[rd.rank].d, fs.root)), "warning",
                                (int(rd.rank),), kind="conflict"))
    counts: dict[int, int] = {}
    for rd in known:
        counts[rd.rank] = counts.get(rd.rank, 0) + 1  # type: ignore[index]
    if all(c == 1 for c in counts.values()):
        return [(parent, ("", ""), known, issues)]
    # processes, each with its folders in time order (several folders = several profiling cycles)
    procs: dict[tuple, list[RankDir]] = {}
    for rd in sorted(known, key=lambda r: (r.start, r.d.name)):
        procs.setdefault(rd.proc, []).append(rd)
    order = sorted(procs.values(), key=lambda ds: (ds[0].start, ds[0].d.name))
    launches: list[list[list[RankDir]]] = []
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
            members: dict[int, RankDir] = {}
            lost: list[DataIssue] = []
            for ds in launch:
                if k >= len(ds):
                    continue
                rd = ds[k]
                prev = members.get(rd.rank)  # type: ignore[arg-type]
                if prev is not None:  # two processes of one launch claim the rank: the newer folder wins
                    older, newer = sorted((prev, rd), key=lambda r: (r.start, mtime(r.d), r.d.name))
                    members[rd.rank] = newer  # type: ignore[index]
                    lost.append(DataIssue(rel(older.d, fs.root), dq("discover.newer-folder-same-launch",
                                                                    rel=rel(newer.d, fs.root), rd=rd.rank)))
                else:
                    members[rd.rank] = rd  # type: ignore[index]
            if not members:
                continue
            first = min(members.values(), key=lambda r: r.start)
            when = stamp_text(first)
            parts = []
            if len(launches) > 1:
                parts.append(f"launch {li + 1} of {len(launches)}")
            if cycles > 1:
                parts.append(f"cycle {k + 1} of {cycles}")
            name = ", ".join(parts) + (f", {when}" if when else "")
            key = "-".join(p.replace(" of ", "of").split(" ")[0] + p.split(" ")[1] for p in parts)
            note = DataIssue(rel(parent, fs.root), dq("discover.launches", launches=len(launches), name=name)
                             if len(launches) > 1 else dq("discover.profiler-cycles", cycles=cycles, name=name), "info")
            missing = [ds[0].rank for ds in launch if k >= len(ds) and ds[0].rank not in members]
            extra = []
            if missing:
                extra.append(DataIssue(rel(parent, fs.root), dq("discover.ranks-without-folder",
                                                                compact=compact(missing), name=name),
                                       "warning", ranks=tuple(sorted(set(missing)))))
            out.append((parent, (name, key), sorted(members.values(), key=lambda r: r.rank),
                        issues + [note] + lost + extra))
    return out


def mtime(d: Path) -> float:
    try:
        return d.stat().st_mtime
    except OSError:
        return 0.0


def stamp_text(rd: RankDir) -> str:
    if not rd.stamp:
        return ""
    s = rd.stamp
    return f"{s[0:4]}-{s[4:6]}-{s[6:8]} {s[8:10]}:{s[10:12]}:{s[12:14]}"


def join_hosts(groups: list[tuple[Path, str, list[RankDir], list[DataIssue]]]):
    """Join single-launch runs of different folders that one job wrote (see `ascend_runs`, point 3)."""
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


def bare_modern_run(fs: Fs, d: Path) -> RunLayout:
    run = RunLayout(root=fs.root, base=d, layout="ascend")
    rf = RankFiles(rank=0, dir=d)
    for p in fs.files(d):
        rf.add(p.name, p)
    for p in (fs.files(d.parent) if d != fs.root else []):  # never list above the run folder
        if p.name.startswith("profiler_info") and p.name.endswith(".json"):
            rf.add("profiler_info", p)
    run.ranks[0] = rf
    run.issues.append(DataIssue(run.rel(d), dq("discover.files-without-rank-folder"), "info"))
    return run
