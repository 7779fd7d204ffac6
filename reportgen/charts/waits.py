"""Who waits for whom: the wait-for heatmap of a communication group (rows wait, columns are waited for)."""

from __future__ import annotations

from reportgen.i18n import _

import altair as alt

from reportgen.charts.theme import SLOW_COLOR, Chart, finish


def wait_matrix(cells: list[dict], groups: list[str], binned: bool) -> dict:
    """Rank x rank heatmap of ms per step: row = the waiting rank(s), column = the rank(s) waited for; a drop-down
    picks the communication group. Rows: {group, i, j, io, jo, ms, culprit}; `culprit` marks the column of a rank
    kept on its own (a top culprit: outlined). Binned, a label is a range of ranks and a cell the mean over the
    row's ranks of what each waited for the column's ranks together."""
    group = alt.param(name="wgrp", value=groups[0], bind=alt.binding_select(options=groups, name=_("Group:") + " "))
    x_title = _("Waited for (ranks, binned; top culprits on their own)") if binned else _("Waited for (rank)")
    y_title = _("Waiting (ranks, binned)") if binned else _("Waiting (rank)")
    base = Chart(alt.NamedData(name="cells")).transform_filter("datum.group === wgrp")
    rect = base.mark_rect().encode(
        x=alt.X("j:O", title=x_title, sort=alt.EncodingSortField(field="jo"), axis=alt.Axis(labelOverlap=True)),
        y=alt.Y("i:O", title=y_title, sort=alt.EncodingSortField(field="io"), axis=alt.Axis(labelOverlap=True)),
        color=alt.Color("ms:Q", title=_("Waited (ms per step)"), scale=alt.Scale(scheme="orangered")),
        stroke=alt.condition("datum.culprit", alt.value(SLOW_COLOR), alt.value(None)),
        strokeWidth=alt.condition("datum.culprit", alt.value(1.5), alt.value(0)),
        tooltip=[alt.Tooltip("i:N", title=_("Waiting")), alt.Tooltip("j:N", title=_("Waited for")),
                 alt.Tooltip("ms:Q", title=_("ms per step"), format=",.3f"),
                 alt.Tooltip("group:N", title=_("Group"))],
    ).add_params(group)
    n = max(1, len({(c["group"], c["i"]) for c in cells}) // max(1, len(groups)))
    return finish(rect, height=max(160, min(560, 18 * n)), datasets={"cells": cells})
