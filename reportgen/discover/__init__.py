"""Find the profiled runs under a folder: which layout, which ranks, which files belong to each rank.

Discovery only lists folders (plus tiny metadata peeks through `reportgen.discover.peek`); it never parses data,
and it imports nothing from the loaders. The search itself is `reportgen.layouts.discover`: one walk (`walk`)
offers every folder to each layout, and each layout builds its runs from what it claimed with the pieces here.

What it promises the loaders:
* only regular files are handed on: FIFOs, sockets, device files and folders standing where a file is expected are
  named in data quality and left alone (a named pipe never blocks the report) (`fs`);
* nothing outside the run folder is read: a symbolic link is followed only when it leads to a regular file inside
  the run, every other link (outside, broken, looping, to a folder) is named and not followed (`fs`);
* listing is bounded (`fs.MAX_ENTRIES`, `fs.MAX_DIR_ENTRIES`, `walk.MAX_DEPTH`), files with holes (sparse, never
  written) are named and skipped.

Rank folders are grouped into runs by what ties them (see `ascend.ascend_runs`): the folder that holds them, the
launch (process id and start time in the folder name), world size; never across sibling experiment folders.

Modules: `names` (file and folder names of every family), `fs` (safe listing), `walk` (the one walk), `runs`
(RunLayout, RankFiles, checks on the runs found), one module per family's grouping (`ascend`, `mindinsight`,
`msprof`, `kineto`, `cluster`), `peek` (tiny metadata reads).
"""

from __future__ import annotations

from reportgen.discover.fs import relpath
from reportgen.discover.runs import RankFiles, RunLayout

__all__ = ["RankFiles", "RunLayout", "relpath"]
