"""The overlap section of rank pages: the rank's overlap columns against its stage's mean and the median, per step."""

from __future__ import annotations

from typing import Any, Optional

import pandas as pd

from reportgen.analysis import Analysis
from reportgen.analysis.overlap import COLUMN_LABELS
from reportgen.i18n import N_
from reportgen.site.pages.rank.sections import OverlapSection, StepSection
from reportgen.site.views.values import num, records


class RankOverlap:
    """Builds the overlap section of every rank page; stage means, medians and per-rank steps are prepared once."""

    def __init__(self, a: Analysis) -> None:
        self.a = a
        o = a.overlap
        self.ok = o.has_data
        if not self.ok:
            return
        cols = list(o.columns)
        self.stage_mean = o.per_rank.groupby("pp_stage")[cols].mean().to_dict("index")
        self.median = o.per_rank[cols].median().to_dict()
        self.values = o.per_rank[[*cols, "pp_stage", "comm_share"]].to_dict("index")
        self.steps: dict[int, list[dict]] = {}
        for rec in records(o.per_step):
            self.steps.setdefault(int(rec["rank"]), []).append(rec)
        self.checks = {c["rank"]: c for c in o.checks}

    def section(self, r: int, step_table: Optional[StepSection] = None) -> OverlapSection:
        """Rank `r`'s overlap section; its per-step table is left out when `step_table` (the page's step table)
        shows every one of its values (the overlap read from the same step_trace_time.csv: the same numbers)."""
        o = self.a.overlap
        sec: dict[str, Any] = {"has_data": self.ok and r in self.values}
        if not sec["has_data"]:
            sec["reason"] = (N_("no overlap data for this run") if not self.ok
                             else N_("no overlap data for this rank (see data quality)"))
            return OverlapSection(**sec)
        mine = self.values[r]
        stage = int(mine["pp_stage"])
        cmp = [{"label": f"{COLUMN_LABELS[c]} (ms)", "value": num(mine[c]),
                "stage_mean": num(self.stage_mean[stage][c]), "median": num(self.median[c])} for c in o.columns]
        step_rows = [{"step": None if pd.isna(rec["step"]) else int(rec["step"]),
                      "values": [num(rec.get(c)) for c in o.columns]} for rec in self.steps.get(r, [])]
        data = self.a.run.ranks[r]
        src = data.overlap
        sec.update({"stage": stage, "compare": cmp, "columns": [COLUMN_LABELS[c] for c in o.columns],
                    "steps": step_rows, "source": src.source if src is not None else
                    (data.step_trace.source if data.step_trace else ""),
                    "share": num(mine["comm_share"]), "check": self.checks.get(r),
                    "coverage": src.coverage_note if src is not None else ""})
        sec["steps_in_step_table"] = len(step_rows) > 1 and _same_steps(step_rows, list(o.columns), step_table)
        return OverlapSection(**sec)


def _same_steps(rows: list[dict], columns: list[str], table: Optional[StepSection]) -> bool:
    """Every (step, column) value of `rows` is in the step table `table`, equal, one row per step."""
    if table is None or not table.has_data or not table.rows:
        return False
    keys = {p["key"] for p in table.phases or []}
    if not set(columns) <= keys:
        return False
    by_step = {row["step"]: row for row in table.rows}
    if len(by_step) != len(table.rows) or len(rows) != len(table.rows):
        return False
    return all(row["step"] is not None and row["step"] in by_step
               and all(by_step[row["step"]].get(c) == v for c, v in zip(columns, row["values"])) for row in rows)
