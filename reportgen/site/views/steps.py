"""Per-step chart data: what the step selector of the step-trace, overlap and communication pages swaps into a
chart's named datasets (Vega's `view.data(name, rows)`, nothing fetched).

A chart's `step_data` is columnar to stay small: `{"fields": {dataset: [field, ...]}, "join": key,
"steps": {"<step>": {dataset: [[value, ...], ...]}}}`. Fields the step rows do not carry (a rank's `href`) are
copied by the browser from the chart's own (average) rows with the same `join` value, so links keep being
resolved for the page in both output modes. Above `MAX_STEP_VALUES` values a chart keeps its average only.
"""

from __future__ import annotations

from typing import Callable, Optional

from reportgen.charts import Chart

MAX_STEP_VALUES = 120_000  # values (rows x fields) of one chart's per-step data embedded in a page


def attach(chart: Optional[Chart], steps: list, rows_of: Callable[[object], dict[str, list[dict]]],
           join: str = "", axis_title: Optional[tuple[str, str]] = None, caption_step: str = "") -> bool:
    """Give `chart` the datasets of every step (`rows_of(step)` -> {dataset: rows}); False when over the budget
    or when there is a single step (nothing to select).

    `axis_title`: (the axis title of the average as the spec has it, the title for one step with `{n}`): the
    browser swaps the title with the data, so the axis says which step is drawn. `caption_step`: the caption for one
    step (`{n}`), for a chart whose caption speaks of the average; the browser swaps it in, and back."""
    if chart is None or len(steps) < 2:
        return False
    fields: dict[str, list[str]] = {}
    out: dict[str, dict[str, list[list]]] = {}
    n = 0
    for s in steps:
        per = {}
        for name, rows in rows_of(s).items():
            f = fields[name] = fields.get(name) or _fields(rows)
            per[name] = [[r.get(k) for k in f] for r in rows]
            n += len(rows) * len(f)
            if n > MAX_STEP_VALUES:
                return False
        out[str(s)] = per
    if not any(fields.values()):
        return False
    chart.step_data = {"fields": fields, "join": join, "steps": out}
    if axis_title:
        chart.spec.setdefault("usermeta", {})["msr_step_title"] = {"avg": axis_title[0], "step": axis_title[1]}
    if caption_step:
        chart.spec.setdefault("usermeta", {})["msr_step_caption"] = caption_step
    return True


def _fields(rows: list[dict]) -> list[str]:
    keys: dict[str, None] = {}
    for r in rows:
        keys.update(dict.fromkeys(k for k in r if k != "href"))
    return list(keys)

