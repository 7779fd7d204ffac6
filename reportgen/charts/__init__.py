"""Charts: one pure function per chart, returning a Vega-Lite spec dict (data inline, never by URL).

Each module (`steps`, `comm`, `overlap`, `resources`, `execution`) holds the charts of one area; the pages call
them directly. `Chart` is what pages carry (an id, a spec, a caption).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass
class Chart:
    id: str
    spec: dict
    caption: str = ""
    renderer: str = "svg"
    # Per-step datasets the page's step selector swaps in (`site/views/steps.py`): {"fields", "join", "steps"}.
    step_data: Optional[dict] = None
    # Datasets carried columnar beside the spec, {name: {"fields": [...], "rows": [[...]]}}: report.js expands them
    # into the spec's datasets before drawing (the timeline's thousands of bars without a key per value).
    columns: Optional[dict] = None
    # A dataset the browser reads from a table of the page instead ({"dataset", "id", "cols"}: the table's id, and
    # for each label of the spec's colour domain the table column holding its values, -1 for none): a large run's
    # rank step lines, the very numbers of the step table beside them (report.js, tableRows).
    table: Optional[dict] = None

    def columns_carry(self, datasets: Optional[dict]) -> bool:
        """Whether the columns (or the page's table) carry every one of `datasets` (each empty in the spec): the
        page can leave the spec's data out, report.js fills it in (`_macros.html`, chart)."""
        carried = set(self.columns or ()) | ({self.table["dataset"]} if self.table else set())
        return bool(datasets) and all(not rows and name in carried for name, rows in datasets.items())
