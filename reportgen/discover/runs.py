"""What discovery hands on: the runs found (`RunLayout`) with each rank's files (`RankFiles`), and the checks made
once the runs are known (ranks the metadata names but no folder holds; walk notes attached to their run)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from reportgen.discover.fs import relpath
from reportgen.model import DataIssue


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



def attach(runs: list[RunLayout], issues: list[DataIssue]) -> None:
    """Each walk note goes to the run whose folder holds the path (the deepest), else to the first run."""
    for i in issues:
        p = runs[0].root / i.file
        owners = [r for r in runs if under(p, r.base)]
        if owners:
            max(owners, key=lambda r: len(r.base.parts)).issues.append(i)
        else:
            runs[0].issues.insert(0, i)


def under(p: Path, base: Path) -> bool:
    try:
        p.relative_to(base)
        return True
    except ValueError:
        return False


def compact(ranks: Iterable[int]) -> str:
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


def missing_ranks(run: RunLayout) -> None:
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
        "", f"{word} {compact(missing)} missing: {' and '.join(sources)} show{'s' if len(sources) == 1 else ''} "
            f"{'it' if len(missing) == 1 else 'they'} took part, but no files of "
            f"{'it' if len(missing) == 1 else 'them'} were found; the run is reported without "
            f"{'it' if len(missing) == 1 else 'them'}",
        # one rank of a larger job profiled alone is a common choice, not damage: context (coverage says what a lone
        # rank cannot show); a rank missing among several profiled ones is a warning
        "info" if len(run.ranks) == 1 else "warning", ranks=tuple(missing)))
