"""Layouts: one object per profiler family's way of laying out its files (`registry.LAYOUTS`), and the loading
of a discovered run through it (`run.load_run`, one `run.load_rank` per rank).

Layering: discover (which files) -> loaders (read one family's files) -> layouts (what a family reads, per rank
and per run) -> analysis. See `base.Layout` for what a new family adds here.
"""

from __future__ import annotations

from reportgen.layouts.base import Layout
from reportgen.layouts.find import discover
from reportgen.layouts.registry import LAYOUTS, get
from reportgen.layouts.run import (PARALLEL_MIN_RANKS, default_jobs, load_execution, load_rank, load_run,
                                   timeline_ranks)

__all__ = ["LAYOUTS", "Layout", "PARALLEL_MIN_RANKS", "default_jobs", "discover", "get", "load_execution", "load_rank",
           "load_run", "timeline_ranks"]
