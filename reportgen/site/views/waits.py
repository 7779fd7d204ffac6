"""The communication page's "who waits for whom" section (analysis.waits): the wait-for heatmap per group, binned at
scale with the top culprits kept on their own, and the table of the top culprits."""

from __future__ import annotations

from typing import Optional

from reportgen import urls
from reportgen.analysis import Analysis
from reportgen.analysis.waits import Waits, binned
from reportgen.charts import Chart
from reportgen.charts import waits as wait_charts
from reportgen.fmt import ms as fmt_ms
from reportgen.i18n import N_, _
from reportgen.site.views.communication import group_label

MAX_GROUPS = 6  # groups in the heatmap's drop-down: those whose top culprit costs the most
MAX_CELLS = 32  # rows / columns of one group's heatmap (larger groups are binned)
KEEP = 8  # top culprits kept as rows and columns of their own when binned
MAX_ROWS = 20  # culprits in the table

BASIS = {"start times": N_("from the start times of the matched collectives (the ranks' clocks agree)"),
         "elapsed times": N_("from the elapsed times of the matched collectives (the ranks' clocks differ: the rank "
                             "in a collective the shortest arrived last)")}
SOURCE = {"collectives": N_("collective operators matched across ranks"),
          "step trace": N_("the step traces' collective columns (per stage)")}


def _label(a: Analysis, gid: str) -> str:
    if gid == "":
        return _("all ranks (group not recorded)")
    if gid == "step trace":
        return _("all ranks (step trace)")
    if gid.startswith("stage "):
        return _("stage {n} (step trace)").format(n=gid[6:])
    return group_label(a, gid)


def waits_context(a: Analysis) -> tuple[dict, Optional[Chart]]:
    """The section's context and its heatmap (None when there is nothing to draw)."""
    w: Optional[Waits] = getattr(a, "waits", None)
    if w is None:
        reason = getattr(a, "waits_reason", "")
        return {"available": False, "reason": _(reason) if reason else ""}, None
    top = w.top(MAX_ROWS)
    rows = []
    for g, c in top:
        rows.append({"rank": c.rank, "href": urls.rank_page(c.rank), "group": _label(a, g.group),
                     "per_waiter": fmt_ms(c.per_waiter_ms), "total": fmt_ms(c.total_ms),
                     "saving": fmt_ms(c.saving_ms), "last_in": f"{c.last_in} / {c.instances}",
                     "waiters": ", ".join(f"{r} ({fmt_ms(ms)})" for r, ms in c.waiters), "op": c.op,
                     "op_ms": fmt_ms(c.op_ms)})
    shown = sorted((g for g in w.groups if g.culprits), key=lambda g: -g.culprits[0].per_waiter_ms)[:MAX_GROUPS]
    cells, labels, is_binned = [], [], False
    ps = a.steps.per_step
    step = float(ps["total"].median()) if ps is not None and "total" in getattr(ps, "columns", ()) and len(ps) else 0.0
    step = step if step == step else 0.0
    for g in shown:
        names, m, kept = binned(g, MAX_CELLS, KEEP)
        is_binned |= len(names) < len(g.ranks)
        lab = _label(a, g.group)
        labels.append(lab)
        # outlined: the culprits costing each peer at least the policy's warning share of the step (2 %) and a
        # quarter of the group's top one (not the noise every healthy group has)
        floor = max(1.0, 0.02 * step, 0.25 * g.culprits[0].per_waiter_ms)
        culprits = {str(c.rank) for c in g.culprits[:KEEP] if c.per_waiter_ms >= floor}
        for i, ni in enumerate(names):
            for j, nj in enumerate(names):
                if i != j or kept[i] or len(names) < len(g.ranks):
                    cells.append({"group": lab, "i": ni, "j": nj, "io": i, "jo": j, "ms": round(float(m[i, j]), 4),
                                  "culprit": nj in culprits})
    chart = None
    if cells:
        chart = Chart("comm-waits", wait_charts.wait_matrix(cells, labels, is_binned), N_(
            "Who waits for whom: at every collective matched across the ranks of a group, the rank that arrived last "
            "is the one the others waited for. Row: the waiting rank; column: the rank it waited for; colour: ms per "
            "step. A column that lights up is a culprit (outlined), even when every rank's step time is the same. "
            "Large groups are binned into rank ranges, the top culprits kept on their own."))
    return {"available": True, "basis": _(BASIS.get(w.basis, w.basis)), "source": _(SOURCE.get(w.source, w.source)),
            "steps": w.steps, "rows": rows, "groups": len(w.groups)}, chart
