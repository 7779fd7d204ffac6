"""Step-trace charts. Inputs are plain lists of dicts prepared by the page planner."""

from __future__ import annotations

import json

import altair as alt

from reportgen import i18n
from reportgen.i18n import _

from reportgen.charts.theme import OK_COLOR, SLOW_COLOR, Chart, finish, phase_scale

MAX_BARS = 64
# The step the page's step selector picked (null: the average), set by report.js on every chart declaring it:
# charts over steps mark it, the heatmap isolates it.
STEP_PARAM = "msrstep"


def with_step_param(spec: dict) -> dict:
    """Declare the selected-step parameter at the top level of `spec` (layered specs want variables there)."""
    if not any(p.get("name") == STEP_PARAM for p in spec.get("params", [])):
        spec.setdefault("params", []).append({"name": STEP_PARAM, "value": None})
    return spec


def step_rule(x_type: str = "Q") -> alt.Chart:
    """A layer marking the selected step on a chart whose x is the step (nothing drawn for the average)."""
    return Chart(alt.Data(values=[{}])).transform_filter(f"{STEP_PARAM} != null").transform_calculate(
        sel_step=STEP_PARAM).mark_rule(color="#111", strokeWidth=2, strokeDash=[5, 3]).encode(
        x=alt.X(f"sel_step:{x_type}"))


def _status_legend():
    """The slow / normal legend in the report's language (the data keeps the English ids the colour scale uses)."""
    if i18n.current() == i18n.DEFAULT:
        return alt.Undefined
    slow, normal = json.dumps(_("slow")), json.dumps(_("normal"))
    return alt.Legend(labelExpr=f"datum.label == 'slow' ? {slow} : {normal}")

def step_total_by_rank(rows: list[dict], median: float) -> dict:
    """Bar per rank of the average step total (ms); slow ranks in red; a rule at the cluster median.

    `rows`: {rank, total, slow, stage}. Use only up to `MAX_BARS` ranks (else the histogram).
    """
    bars = Chart(alt.NamedData(name="ranks")).mark_bar().encode(
        x=alt.X("rank:O", title=_("Rank"), sort="ascending"),
        y=alt.Y("total:Q", title=_("Average step time (ms)")),
        color=alt.Color("status:N", title=None, legend=_status_legend(),
                        scale=alt.Scale(domain=["normal", "slow"], range=[OK_COLOR, SLOW_COLOR])),
        tooltip=[alt.Tooltip("rank:O", title=_("Rank")), alt.Tooltip("total:Q", title=_("Step time (ms)"), format=",.3f"),
                 alt.Tooltip("stage:N", title=_("Stage")), alt.Tooltip("status:N", title=_("Status"))],
        href="href:N",
    )
    rule = Chart(alt.NamedData(name="median")).mark_rule(strokeDash=[4, 3], color="#333").encode(
        y="median:Q", tooltip=[alt.Tooltip("median:Q", title=_("Cluster median (ms)"), format=",.3f")])
    return finish(alt.layer(bars, rule), datasets={"ranks": rows, "median": [{"median": median}]})


def breakdown_by_rank(rows: list[dict], phase_order: list[str], x_title: str = "") -> dict:
    """Stacked bars of the step phases per rank (or per rank group). `rows`: {label, order, phase, value}."""
    x_title = x_title or _("Rank")
    chart = Chart(alt.NamedData(name="breakdown")).mark_bar().encode(
        x=alt.X("label:N", title=x_title, sort=alt.EncodingSortField(field="order", order="ascending")),
        y=alt.Y("value:Q", title=_("Time per step (ms)"), stack="zero"),
        color=alt.Color("phase:N", title=_("Phase"), sort=phase_order,
                        scale=phase_scale(phase_order)),
        order=alt.Order("phase_order:Q"),
        tooltip=[alt.Tooltip("label:N", title=x_title), alt.Tooltip("phase:N", title=_("Phase")),
                 alt.Tooltip("value:Q", title=_("ms"), format=",.3f")],
    )
    return finish(chart, datasets={"breakdown": rows})


def rank_step_heatmap(cells: list[dict], rank_bin: int, step_bin: int, value_title: str = "") -> dict:
    """Rank x step heatmap of one phase (the step total by default); bins hold the maximum of their ranks/steps."""
    value_title = value_title or _("Step time (ms)")
    rank_title = _("Rank") if rank_bin == 1 else _("Ranks (groups of {n}, max shown)").format(n=rank_bin)
    step_title = _("Step") if step_bin == 1 else _("Steps (groups of {n}, max shown)").format(n=step_bin)
    # the step the page's selector picked: its column keeps full colour and an outline, the others fade
    picked = (f"{STEP_PARAM} == null || (datum.step_order <= {STEP_PARAM} && "
              f"{STEP_PARAM} <= (datum.step_last || datum.step_order))")
    outlined = f"{STEP_PARAM} != null && datum.step_order <= {STEP_PARAM} && " \
               f"{STEP_PARAM} <= (datum.step_last || datum.step_order)"
    chart = Chart(alt.NamedData(name="cells")).mark_rect().encode(
        x=alt.X("steps:O", title=step_title, sort=alt.EncodingSortField(field="step_order", order="ascending")),
        y=alt.Y("ranks:O", title=rank_title, sort=alt.EncodingSortField(field="rank_order", order="ascending"),
                axis=alt.Axis(labelOverlap=True)),
        color=alt.Color("value:Q", title=value_title, scale=alt.Scale(scheme="orangered", zero=False)),
        opacity=alt.condition(picked, alt.value(1.0), alt.value(0.18)),
        stroke=alt.condition(outlined, alt.value("#111"), alt.value(None)),
        strokeWidth=alt.condition(outlined, alt.value(1.2), alt.value(0)),
        tooltip=[alt.Tooltip("ranks:O", title=_("Rank(s)")), alt.Tooltip("steps:O", title=_("Step(s)")),
                 alt.Tooltip("value:Q", title=value_title, format=",.3f")],
    )
    n_rows = len({c["ranks"] for c in cells})
    height = max(120, min(600, 14 * n_rows))
    layers = [chart]
    missing = sorted({c["missing"] for c in cells if c.get("missing")})
    if missing:  # cells without a value (a rank whose trace ends early): grey, with a legend entry of their own
        layers.append(Chart(alt.NamedData(name="cells")).transform_filter("datum.missing").mark_rect().encode(
            x=alt.X("steps:O", sort=alt.EncodingSortField(field="step_order", order="ascending")),
            y=alt.Y("ranks:O", sort=alt.EncodingSortField(field="rank_order", order="ascending")),
            color=alt.Color("missing:N", title=" ", scale=alt.Scale(domain=missing, range=["#c8c8c8"])),
            opacity=alt.condition(picked, alt.value(1.0), alt.value(0.18)),
            tooltip=[alt.Tooltip("ranks:O", title=_("Rank(s)")), alt.Tooltip("steps:O", title=_("Step(s)")),
                     alt.Tooltip("missing:N", title=value_title)]))
    if any(c.get("flag") for c in cells):  # the ranks a finding names, written on their band
        label = Chart(alt.NamedData(name="cells")).transform_filter("datum.flag").mark_text(
            align="left", dx=4, fontWeight="bold", fontSize=12, color="#000").encode(
            x=alt.X("steps:O", sort=alt.EncodingSortField(field="step_order", order="ascending"), bandPosition=0),
            y=alt.Y("ranks:O", sort=alt.EncodingSortField(field="rank_order", order="ascending")), text="flag:N")
        layers.append(label)
    if len(layers) == 1:
        return with_step_param(finish(chart, height=height, datasets={"cells": cells}))
    layered = alt.layer(*layers)
    if missing:
        layered = layered.resolve_scale(color="independent")
    return with_step_param(finish(layered, height=height, datasets={"cells": cells}))


def rank_step_lines(phase_order: list[str], single_step: bool = False) -> dict:
    """One rank's phases over steps. Built ONCE; pages add their rows as the `steps` dataset.

    Rows: {step, phase, value}. `single_step`: a bar per phase instead of lines that would be single dots.
    """
    if single_step:
        chart = Chart(alt.NamedData(name="steps")).mark_bar().encode(
            x=alt.X("phase:N", title=_("Phase"), sort=phase_order, axis=alt.Axis(labelAngle=0, labelLimit=200)),
            y=alt.Y("value:Q", title=_("Time (ms)")),
            color=alt.Color("phase:N", title=_("Phase"), sort=phase_order, scale=phase_scale(phase_order),
                            legend=None),
            tooltip=[alt.Tooltip("step:Q", title=_("Step")), alt.Tooltip("phase:N", title=_("Phase")),
                     alt.Tooltip("value:Q", title=_("ms"), format=",.3f")],
        )
        return finish(chart, height=220)
    chart = Chart(alt.NamedData(name="steps")).mark_line(point=True).encode(
        x=alt.X("step:Q", title=_("Step"), axis=alt.Axis(tickMinStep=1, format="d")),
        y=alt.Y("value:Q", title=_("Time (ms)")),
        color=alt.Color("phase:N", title=_("Phase"), sort=phase_order,
                        scale=phase_scale(phase_order)),
        tooltip=[alt.Tooltip("step:Q", title=_("Step")), alt.Tooltip("phase:N", title=_("Phase")),
                 alt.Tooltip("value:Q", title=_("ms"), format=",.3f")],
    )
    return finish(chart)


def rank_strip(rows: list[dict], x_title: str, fmt: str = ",.3f") -> dict:
    """Every rank as a tick on its stage's line (for runs with too many ranks for a bar each): the distribution of
    each stage at a glance, and the ranks the findings name drawn large, red and labelled with their number, so a
    culprit among thousands is never binned or averaged away. `rows`: {rank, value, stage, status, href}."""
    base = Chart(alt.NamedData(name="ranks"))
    y = alt.Y("stage:N", title=None, sort=None)
    tip = [alt.Tooltip("rank:O", title=_("Rank")), alt.Tooltip("stage:N", title=_("Stage")),
           alt.Tooltip("value:Q", title=x_title, format=fmt)]
    ticks = base.transform_filter("datum.status != 'slow'").mark_tick(thickness=1, opacity=0.55,
                                                                       color=OK_COLOR).encode(
        x=alt.X("value:Q", title=x_title, scale=alt.Scale(zero=False)), y=y, href="href:N", tooltip=tip)
    med = base.transform_aggregate(median="median(value)", groupby=["stage"]).mark_tick(
        color="#333", thickness=2, size=26).encode(x="median:Q", y=y,
                                                 tooltip=[alt.Tooltip("median:Q", title=_("Stage median"), format=fmt)])
    slow = base.transform_filter("datum.status == 'slow'")
    pts = slow.mark_point(filled=True, size=90, color=SLOW_COLOR).encode(x="value:Q", y=y, href="href:N",
                                                                       tooltip=tip)
    labels = slow.mark_text(dy=-12, color=SLOW_COLOR, fontWeight="bold").encode(
        x="value:Q", y=y, text=alt.Text("rank:N"))
    n_stages = len({r["stage"] for r in rows}) or 1
    return finish(alt.layer(ticks, med, pts, labels), height=max(90, 46 * n_stages), datasets={"ranks": rows})
