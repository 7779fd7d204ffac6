"""The offline timeline: operators of the chosen steps as bars on one lane per stream / thread (compute,
communication, host dispatch, data queue), zoom and pan along time, a tooltip with name, duration and shapes.

Rows are {step, lane, lane_i (lane order), cat, name, start, dur, shapes}; the page carries them columnar
(`Chart.columns`, lanes and kinds as indices) and the browser expands them before drawing; the bar's end is
computed here. Built once per shape: the spec holds no rows.
"""

from __future__ import annotations

import altair as alt

from reportgen.charts.theme import Chart, finish
from reportgen import i18n
from reportgen.i18n import N_, _

CATEGORIES = (N_("compute"), N_("communication"), N_("host dispatch"), N_("data queue"))
CATEGORY_COLORS = {"compute": "#4c78a8", "communication": "#e45756", "host dispatch": "#9d755d",
                   "data queue": "#54a24b"}
LANE_PX = 22


_BUILT: dict[tuple, dict] = {}  # (language, steps, lane title) -> spec: the same on every rank page of a run


def timeline(steps: list[tuple[int, str]], lane_title: str = "") -> dict:
    """`steps`: (step, label) of the chosen steps, the first shown; a drop-down switches between them. A stroke
    keeps operators far shorter than a pixel visible as hairlines until one zooms in. Built once per language,
    steps and lane title (Altair's validation is ~30 ms; a run's rank pages share one spec); a fresh top-level dict
    each call (the nested parts are shared and never modified)."""
    key = (i18n.current(), tuple((int(s), str(lab)) for s, lab in steps), lane_title)
    spec = _BUILT.get(key)
    if spec is None:
        if len(_BUILT) > 64:
            _BUILT.clear()
        spec = _BUILT[key] = _timeline(steps, lane_title)
    return {**spec, "datasets": {"ops": []}}


def _timeline(steps: list[tuple[int, str]], lane_title: str = "") -> dict:
    lane_title = lane_title or _("Stream / thread")
    cats = list(CATEGORIES)
    names = [_(c) for c in cats]  # the rows carry the kinds in the report's language (`timeline_view._columns`)
    zoom = alt.selection_interval(name="tlzoom", bind="scales", encodings=["x"])
    chart = Chart(alt.NamedData(name="ops")).mark_bar(height={"band": 0.7}, strokeWidth=0.6).encode(
        x=alt.X("start:Q", title=_("Time from the step start (ms)"), scale=alt.Scale(zero=False)),
        x2="end:Q",
        y=alt.Y("lane:N", title=None, sort=alt.EncodingSortField(field="lane_i", order="ascending"),
                axis=alt.Axis(labelLimit=340)),
        color=alt.Color("cat:N", title=_("Kind"), scale=alt.Scale(domain=names,
                                                                   range=[CATEGORY_COLORS[c] for c in cats])),
        stroke=alt.Stroke("cat:N", title=_("Kind"), scale=alt.Scale(domain=names,
                                                                     range=[CATEGORY_COLORS[c] for c in cats])),
        tooltip=[alt.Tooltip("name:N", title=_("Operator")), alt.Tooltip("lane:N", title=lane_title),
                 alt.Tooltip("dur:Q", title=_("Duration (ms)"), format=",.4f"),
                 alt.Tooltip("start:Q", title=_("Start (ms)"), format=",.4f"),
                 alt.Tooltip("shapes:N", title=_("Input shapes")),
                 alt.Tooltip("launch:N", title=_("Launches a device operator at (ms)"))],
    ).transform_calculate(end="datum.start + datum.dur").add_params(zoom)
    if len(steps) > 1:
        pick = alt.param(name="tlstep", value=steps[0][0], bind=alt.binding_select(
            options=[s for s, _l in steps], labels=[lab for _s, lab in steps], name=_("Step: ")))
        chart = chart.add_params(pick).transform_filter("datum.step == tlstep")
    else:
        chart = chart.transform_filter(f"datum.step == {int(steps[0][0])}")
    spec = finish(chart, height=280)
    spec["height"] = {"step": LANE_PX}
    spec["autosize"] = {"type": "fit-x", "contains": "padding"}
    spec["datasets"] = {"ops": []}
    return spec
