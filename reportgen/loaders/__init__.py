"""Readers of one profiler family's files each (only this package reads input files). Every problem becomes a
data-quality entry (`issuelog.IssueLog`), never an exception.

Shared readers, one concern a module: `files` (opening safely, text guards), `screen` (usable numbers, rows to
drop), `tables` (the careful CSV readers) with `arrow_csv` (their pyarrow fast path), `jsonfile` (whole JSON
files), `traces` (streamed Chrome / Kineto traces), `guard` and `safe` (the safety net around each entry point).
Which of them a layout reads, per rank and per run, is `reportgen.layouts`.
"""

from __future__ import annotations

from typing import Any

# Old names of the run loader, now in reportgen.layouts: resolved on first use (not imported here, which would
# make an import circle layouts -> loaders -> layouts). New code imports them from reportgen.layouts.
_MOVED = ("load_run", "load_rank", "load_execution", "timeline_ranks", "default_jobs", "PARALLEL_MIN_RANKS")


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        from reportgen.layouts import run

        return getattr(run, name)
    raise AttributeError(f"module 'reportgen.loaders' has no attribute {name!r}")
