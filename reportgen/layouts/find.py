"""Finding the runs under the user's folder: one walk in which every layout claims its folders and files
(`Layout.claim_folder`, `claim_files`), then each layout builds its runs from its claims (`Layout.detect`, in the
registry's order: a later layout sees the runs found before it)."""

from __future__ import annotations

from pathlib import Path

from reportgen.discover.fs import Fs
from reportgen.discover.runs import RunLayout, attach, missing_ranks
from reportgen.discover.walk import walk
from reportgen.errors import NoProfilingData
from reportgen.layouts.registry import LAYOUTS


def what_we_look_for() -> str:
    """The layouts' `looks_for`, as one phrase ("a, b, ... or z")."""
    items = [lay.looks_for for lay in LAYOUTS.values() if lay.looks_for]
    return ", ".join(items[:-1]) + ", or " + items[-1] if len(items) > 1 else "".join(items)


def discover(root: Path) -> list[RunLayout]:
    """Return the runs found under `root` (usually one). Raise `NoProfilingData` when there is none."""
    root = Path(root)
    if not root.exists():
        raise NoProfilingData(f"run folder {root} does not exist")
    if not root.is_dir():
        raise NoProfilingData(f"{root} is not a folder; give the folder that holds the profiler output")
    fs = Fs(root)
    scan = walk(fs, LAYOUTS.values())
    runs: list[RunLayout] = []
    for lay in LAYOUTS.values():
        runs.extend(lay.detect(fs, scan, runs, LAYOUTS))
    runs = [r for r in runs if r.ranks]
    for r in runs:
        missing_ranks(r)
    if not runs:
        raise NoProfilingData(f"no profiler output found under {root}: looked for {what_we_look_for()}")
    runs.sort(key=lambda r: (r.rel(r.base), r.name))
    attach(runs, list(fs.issues.values()))
    return runs
