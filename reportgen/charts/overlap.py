"""Overlap and pipeline-stage charts. Inputs are plain lists of dicts prepared by the page planner."""

from __future__ import annotations

from reportgen.i18n import _

import altair as alt

from reportgen.charts.steps import step_rule, with_step_param
from reportgen.charts.theme import SLOW_COLOR, Chart, finish, phase_scale


def stage_summary(rows: list[dict], metrics: list[str]) -> dict:
    """Grouped bars per pipeline stage: compute, collective-only and receive-only (bubble) time.

    `rows`: {stage, metric, value, note}; `note` marks the slowest stage / the stage that waits most, shown
    as a label above its group. The stage that computes longest and the stage that waits are then side by side.
    """
    base = Chart(alt.NamedData(name="stages"))
    bars = base.mark_bar().encode(
        x=alt.X("stage:N", title=_("Pipeline stage"), sort=None),
        xOffset=alt.XOffset("metric:N", sort=metrics),
        y=alt.Y("value:Q", title=_("Mean per rank, per step (ms)")),
        color=alt.Color("metric:N", title=None, sort=metrics,
                        scale=phase_scale(metrics)),
        tooltip=[alt.Tooltip("stage:N", title=_("Stage")), alt.Tooltip("metric:N", title=_("Metric")),
                 alt.Tooltip("value:Q", title=_("ms"), format=",.3f"), alt.Tooltip("ranks:N", title=_("Ranks"))],
    )
    notes = base.transform_filter("datum.note != ''").mark_text(dy=-8, color=SLOW_COLOR, fontWeight="bold").encode(
        x=alt.X("stage:N", sort=None), xOffset=alt.XOffset("metric:N", sort=metrics), y="value:Q", text="note:N")
    return finish(alt.layer(bars, notes), height=260, datasets={"stages": rows})


def comm_share_by_rank(rows: list[dict]) -> dict:
    """Share of the step that is communication not hidden by computation, per rank, coloured by stage.

    `rows`: {rank, share, stage, href}.
    """
    chart = Chart(alt.NamedData(name="share")).mark_bar().encode(
        x=alt.X("rank:O", title=_("Rank")),
        y=alt.Y("share:Q", title=_("Pure communication / step"), axis=alt.Axis(format="%")),
        color=alt.Color("stage:N", title=_("Stage")),
        tooltip=[alt.Tooltip("rank:O", title=_("Rank")), alt.Tooltip("share:Q", title=_("Share"), format=".1%"),
                 alt.Tooltip("stage:N", title=_("Stage"))],
        href="href:N",
    )
    return finish(chart, height=220, datasets={"share": rows})


def stage_steps(rows: list[dict], y_title: str) -> dict:
    """One line per stage over the steps: the stage row (max over its ranks) of the compute column.

    `rows`: {step, stage, value}.
    """
    chart = Chart(alt.NamedData(name="stage_steps")).mark_line(point=True).encode(
        x=alt.X("step:O", title=_("Step")),
        y=alt.Y("value:Q", title=y_title),
        color=alt.Color("stage:N", title=_("Stage")),
        tooltip=[alt.Tooltip("step:O", title=_("Step")), alt.Tooltip("stage:N", title=_("Stage")),
                 alt.Tooltip("value:Q", title=_("ms"), format=",.3f")],
    )
    return with_step_param(finish(alt.layer(chart, step_rule("O")), height=220, datasets={"stage_steps": rows}))
