"""The cluster step-trace page: every rank, every phase, the average or any single step, the rank x step heatmap."""

from __future__ import annotations

from reportgen.i18n import N_, _, text

import math
from typing import Optional

import pandas as pd

from reportgen import fmt, urls
from reportgen.analysis import Analysis
from reportgen.analysis.steps import step_values
from reportgen.charts import Chart
from reportgen.charts import column_codec as columnar
from reportgen.charts import steps as step_charts
from reportgen.model import PHASE_LABELS, STEP_TRACE_KIND_LABELS
from reportgen.rules import highlights
from reportgen.site.views import steps as step_views
from reportgen.rules.highlights import Highlights
from reportgen.site.plan.page import Page, PageContext, PageKind, PlanInput, view
from reportgen.site.views.values import num, representative_ranks, stacked_bar_rows

MAX_STEP_JSON_CELLS = 400_000  # per-step selection data embedded in the step-trace page
MAX_HEATMAP_CELLS = 20_000  # rank x step cells; binned above
MAX_HEATMAP_ROWS = 256  # rows of ranks (groups of ranks above, the max of each group shown)


@view
class StepTraceContext(PageContext):
    has_steps: bool
    kind_label: str
    columns: list[dict]
    rows: list[dict]
    rules_used: dict[str, str]
    steps: list[int]
    step_json: Optional[dict]
    stats: list[dict]
    hosts: list[dict]
    without: list[int]
    rules_link: str
    single_device: bool = False


class _Rows:
    """Builds table rows for ranks; the per-analysis lookups are prepared once (runs have thousands of ranks)."""

    def __init__(self, a: Analysis, hl: Highlights) -> None:
        self.a = a
        self.hl = hl
        self.avg = a.steps.average.to_dict("index") if a.steps.kind else {}
        self._base: dict[int, dict] = {}

    def base(self, r: int) -> dict:
        if r not in self._base:
            info = self.a.run.ranks[r].info
            self._base[r] = {
                "rank": r, "host": info.host or "", "device": "" if info.device is None else info.device,
                "pp_stage": self.a.run.info.stage_of_rank.get(r, ""), "href": urls.rank_page(r),
                "hot": sorted(self.hl.hot.get(r, ())),  # columns where a finding names this rank
                "slow": r in self.hl.slow_ranks,
                "waiting": r in self.hl.waiting,
            }
        return self._base[r]

    def average(self, r: int) -> dict:
        row = dict(self.base(r))
        avg = self.avg.get(r)
        if avg is not None:
            for p in self.a.steps.phases:
                row[p] = num(avg[p])
            row["n_steps"] = int(avg["n_steps"])
            row["rule"] = avg["rule"]
        return row




def kind_label(a: Analysis) -> str:
    """What the step trace is: the producer's own label when the loader set one (a computed Kineto breakdown),
    else the label of its kind."""
    for r in a.run.rank_ids:
        t = a.run.ranks[r].step_trace
        if t is not None and getattr(t, "label", ""):
            return t.label
    return STEP_TRACE_KIND_LABELS.get(a.steps.kind or "", "")


def rank_rows(inp: PlanInput) -> _Rows:
    """The row builder, shared by the step-trace page and the rank pages."""
    if "rows" not in inp.shared:
        inp.shared["rows"] = _Rows(inp.analysis, highlights.of(inp))
    return inp.shared["rows"]


def _columns(a: Analysis) -> list[dict]:
    cols = [{"key": "rank", "label": _("Rank"), "fmt": "rank"}, {"key": "host", "label": _("Host"), "fmt": "text"},
            {"key": "device", "label": _("Device"), "fmt": "int"}]
    if a.run.info.stages > 1:
        cols.append({"key": "pp_stage", "label": _("PP stage"), "fmt": "int"})
    for p in a.steps.phases:
        cols.append({"key": p, "label": _("{phase} (ms)").format(phase=_(PHASE_LABELS[p])), "fmt": "ms"})
    return cols


def _total_rows(a: Analysis, hl: Highlights, totals: pd.Series) -> list[dict]:
    return [{"rank": int(r), "total": round(float(v), 4), "status": "slow" if int(r) in hl.slow_ranks else "normal",
             "stage": a.run.info.stage_of_rank.get(int(r), "-"), "href": urls.rank_page(int(r))}
            for r, v in totals.dropna().items()]


def total_caption(rows: list[dict], median: float, hl: Optional[Highlights] = None) -> str:
    """The step-time bars' caption, saying what is red: the ranks a finding names slow, the phase it names and how
    far each one's step stands above the median (a rank 0.9 % above is not "far above": its peers wait for it,
    so the difference is in the phases); or that no finding names one."""
    red = sorted((r for r in rows if r["status"] == "slow"), key=lambda r: -r["total"])
    if not red:
        return _("Average step time per rank; dashed line: cluster median. No rank is red: no finding names a "
                 "slow rank. Click a bar to open the rank's page.")
    parts = []
    for r in red[:8]:
        cols = sorted((hl.hot.get(r["rank"], ()) if hl else ()))
        phases = ", ".join(_(PHASE_LABELS[c]) for c in cols if c in PHASE_LABELS)
        above = fmt.share(r["total"] / median - 1) if median else "—"
        parts.append(_("rank {rank}, slow in {phases}: step {pct} above the median").format(
            rank=r["rank"], phases=phases, pct=above) if phases else
            _("rank {rank}: step {pct} above the median").format(rank=r["rank"], pct=above))
    text = _("Average step time per rank; dashed line: cluster median; red: the ranks a slow-rank finding names "
             "({ranks}).").format(ranks="; ".join(parts) + (" …" if len(red) > 8 else ""))
    if median and all(r["total"] / median - 1 < 0.05 for r in red):
        text += " " + _("Their peers wait for them at each collective, so every step lasts about as long: the "
                        "difference is in the phases (below), not in the step time.")
    return text + " " + _("Click a bar to open the rank's page.")


def _strip_rows(rows: list[dict], multi: bool) -> list[dict]:
    return [{"rank": r["rank"], "value": r["total"], "status": r["status"], "href": r["href"],
             "stage": _("stage {n}").format(n=r['stage']) if multi else _("all ranks")} for r in rows]


def device_phases(a: Analysis) -> list[str]:
    """The phases drawn over steps (as on rank pages): the stacked ones and the step total."""
    st = a.steps
    return [p for p in (*st.stacked, "total") if p in st.phases and (p != "total" or st.kind != "host")]


def _device_charts(a: Analysis) -> list[Chart]:
    """A single-device run (MindSpore Insight's single-device page): every phase of every step on one chart, bars
    when the run has one step; no per-rank bars of one bar, no cluster median."""
    st = a.steps
    phases = device_phases(a)
    labels = [_(PHASE_LABELS[p]) for p in phases]
    rows = [{"step": int(rec["step"]), "phase": lab, "value": round(float(rec[p]), 4)}
            for rec in st.per_step.dropna(subset=["step"]).to_dict("records")
            for p, lab in zip(phases, labels) if num(rec.get(p)) is not None]
    if not rows:
        return []
    one = len({r["step"] for r in rows}) == 1
    spec = step_charts.rank_step_lines(labels, single_step=one)
    spec["datasets"] = {"steps": rows}
    return [Chart("step-phases", spec, _("The device's step trace: each phase of the step (step interval, forward + "
                                         "backward and tail for MindSpore's iteration trace) at every recorded step.")
                  if not one else _("The device's step trace: each phase of its only recorded step."))]


def _cluster_charts(a: Analysis, hl: Highlights) -> list[Chart]:
    st = a.steps
    if st.kind is None or "total" not in st.stats:
        return []
    if len(a.run.rank_ids) == 1:
        return _device_charts(a)
    median = st.stats["total"].median
    rows = _total_rows(a, hl, st.average["total"])
    multi = a.run.info.stages > 1
    bars = len(rows) <= step_charts.MAX_BARS
    charts = []
    if bars:
        total = Chart("step-total", step_charts.step_total_by_rank(rows, median), total_caption(rows, median, hl))
    else:
        strip = _strip_rows(rows, multi)
        total = Chart("step-total", step_charts.rank_strip(strip, _("Average step time (ms)")),
                      (_("Average step time of each of the {n} ranks, one tick per rank, a line per pipeline "
                         "stage; black: the median; red and numbered: ranks a finding names. Click a mark to "
                         "open the rank's page.") if multi else
                       _("Average step time of each of the {n} ranks, one tick per rank; black: the median; red "
                         "and numbered: ranks a finding names. Click a mark to open the rank's page."))
                      .format(n=len(rows)), renderer="canvas" if len(rows) > 3000 else "svg")
    charts.append(total)
    per_step = {s: step_values(st.per_step, s, st.phases) for s in st.steps} if len(st.steps) > 1 else {}

    def total_of(s) -> dict[str, list[dict]]:
        vals = per_step[s]
        if "total" not in vals:
            return {"ranks": []}
        r = _total_rows(a, hl, vals["total"])
        if not bars:
            return {"ranks": _strip_rows(r, multi)}
        med = pd.Series([x["total"] for x in r], dtype=float).median()
        return {"ranks": r, "median": [{"median": round(float(med), 4)}] if r else []}

    step_views.attach(total, st.steps, total_of, join="rank",
                      axis_title=(_("Average step time (ms)"), _("Step {n} time (ms)")),
                      caption_step=(_("Step {n}: the time of each rank in that step; dashed line: the step's median "
                                      "over the ranks; red: ranks a finding names (over all steps). Click a bar to "
                                      "open the rank's page.") if bars else
                                    _("Step {n}: the time of each rank in that step, one tick per rank; black: the "
                                      "step's median; red and numbered: ranks a finding names (over all steps). "
                                      "Click a mark to open the rank's page.")))
    picked = representative_ranks(st.average["total"], a.run.info.stage_of_rank, hl.slow_ranks | hl.waits_least,
                                  step_charts.MAX_BARS) if "total" in st.average else None
    labels = [_(PHASE_LABELS[p]) for p in st.stacked]
    brows, x_title = stacked_bar_rows(st.average, st.stacked, labels, step_charts.MAX_BARS, picked)
    if brows and st.kind != "host":
        breakdown = Chart("breakdown", step_charts.breakdown_by_rank(brows, labels, x_title),
                          _("Where each rank's step time goes (average per step)."))
        step_views.attach(breakdown, st.steps, lambda s: {"breakdown": stacked_bar_rows(
            per_step[s], st.stacked, labels, step_charts.MAX_BARS, picked)[0]},
            axis_title=(_("Time per step (ms)"), _("Step {n}: time (ms)")),
            caption_step=_("Where each rank's time goes in step {n}."))
        charts.append(breakdown)
    return charts


def cluster_charts(inp: PlanInput) -> list[Chart]:
    """The step-time charts (shared by the overview and the step-trace page)."""
    if "cluster_charts" not in inp.shared:
        inp.shared["cluster_charts"] = _cluster_charts(inp.analysis, highlights.of(inp))
    return inp.shared["cluster_charts"]


def heatmap_cells(per_step: pd.DataFrame, value: str = "total", max_cells: int = MAX_HEATMAP_CELLS,
                  max_rows: int = MAX_HEATMAP_ROWS, flagged=()) -> dict:
    """Rank x step matrix of `value`, binned (max within a bin) so it has at most `max_cells` cells and
    `max_rows` rows of ranks (a row under a pixel high would hide a slow rank; the max of its bin keeps it).
    The first cell of a row holding a `flagged` rank carries `flag` (those ranks' numbers) for a label."""
    df = per_step.dropna(subset=["step"])[["rank", "step", value]]
    if df.empty:
        return {"cells": [], "rank_bin": 1, "step_bin": 1}
    ranks = sorted(df["rank"].unique())
    steps = sorted(df["step"].unique())
    rank_bin, step_bin = 1, 1
    while math.ceil(len(ranks) / rank_bin) > max_rows:
        rank_bin *= 2
    while math.ceil(len(ranks) / rank_bin) * math.ceil(len(steps) / step_bin) > max_cells:
        if math.ceil(len(ranks) / rank_bin) >= math.ceil(len(steps) / step_bin):
            rank_bin *= 2
        else:
            step_bin *= 2
    rpos = {r: i // rank_bin for i, r in enumerate(ranks)}
    spos = {s: i // step_bin for i, s in enumerate(steps)}
    df = df.assign(rb=df["rank"].map(rpos), sb=df["step"].map(spos))
    g = df.groupby(["rb", "sb"]).agg(v=(value, "max"), r0=("rank", "min"), r1=("rank", "max"),
                                     s0=("step", "min"), s1=("step", "max")).reset_index()
    cells = [{"ranks": f"{int(a)}" if a == b else f"{int(a)}–{int(b)}",
              "steps": f"{int(c)}" if c == d else f"{int(c)}–{int(d)}",
              "rank_order": int(a), "step_order": int(c), "value": round(float(v), 4),
              **({"step_last": int(d)} if step_bin > 1 else {})}  # the step selector marks the bin holding it
             for a, b, c, d, v in zip(g["r0"], g["r1"], g["s0"], g["s1"], g["v"])]
    cells.extend(_missing_cells(set(zip(g["rb"].astype(int), g["sb"].astype(int))), ranks, steps, rank_bin, step_bin))
    flags: dict[int, list[int]] = {}
    for r in sorted(int(x) for x in flagged):
        if r in rpos:
            flags.setdefault(rpos[r], []).append(r)
    if flags:
        first = int(min(steps))
        for cell, rb in zip(cells, g["rb"]):
            if int(rb) in flags and cell["step_order"] == first:
                cell["flag"] = "⚑ " + ", ".join(str(r) for r in flags[int(rb)])
    return {"cells": cells, "rank_bin": rank_bin, "step_bin": step_bin}


def _missing_cells(present: set, ranks: list, steps: list, rank_bin: int, step_bin: int) -> list[dict]:
    """A cell for every (rank bin, step bin) without a value (a rank whose file ends early, a step a rank did not
    record): drawn grey with its own legend entry, not left as blank page."""
    def span(values: list, i: int, size: int) -> tuple[int, int]:
        part = values[i * size:(i + 1) * size]
        return int(part[0]), int(part[-1])

    out = []
    for rb in range(math.ceil(len(ranks) / rank_bin)):
        for sb in range(math.ceil(len(steps) / step_bin)):
            if (rb, sb) in present:
                continue
            (a, b), (c, d) = span(ranks, rb, rank_bin), span(steps, sb, step_bin)
            out.append({"ranks": f"{a}" if a == b else f"{a}–{b}", "steps": f"{c}" if c == d else f"{c}–{d}",
                        "rank_order": a, "step_order": c, "value": None, "missing": _("no data"),
                        **({"step_last": d} if step_bin > 1 else {})})
    return out


def _heatmap_chart(a: Analysis, hl: Highlights) -> Optional[Chart]:
    """The rank x step heatmap of the phase a slow-rank finding names (where the culprit is a band), else of the
    step total. In a synchronous job every rank's step takes as long as the slowest one's, so the total hides
    the rank; the phase it is slow in shows it."""
    st = a.steps
    if len(st.steps) < 2:
        return None
    named = sorted({c for cols in hl.hot.values() for c in cols if c in st.per_step.columns and c in PHASE_LABELS})
    value = named[0] if named else "total"
    frame = st.per_step
    label = _(PHASE_LABELS.get(value, value))
    title = _("Step time (ms)")
    if value != "total":
        # the excess over the rank's stage median in the same step: an unbalanced stage does not drown the rank
        stage = frame["rank"].map(lambda r: a.run.info.stage_of_rank.get(int(r), 0))
        med = frame.groupby([stage, frame["step"]])[value].transform("median")
        frame = frame.assign(excess=frame[value] - med)
        value, title = "excess", _("{phase} above its stage's median (ms)").format(phase=label)
    hm = heatmap_cells(frame, value, flagged=hl.slow_ranks)
    if not hm["cells"]:
        return None
    caption = (_("Step time of every rank in every step: a slow rank is a horizontal band, a slow step a vertical "
                 "one.") if value == "total" else
               _("{phase} of every rank in every step, above the median of its pipeline stage in that step (the "
                 "phase a finding names: in a synchronous job the step total is the same on every rank, this phase "
                 "is not): the slow rank is a horizontal band, a slow step a vertical one.").format(phase=label))
    return Chart("heatmap", step_charts.rank_step_heatmap(hm["cells"], hm["rank_bin"], hm["step_bin"], title),
                 caption, renderer="canvas" if len(hm["cells"]) > 4000 else "svg")


def _step_json(a: Analysis, cols: list[dict], maker: _Rows) -> Optional[dict]:
    st = a.steps
    if not st.steps or len(st.steps) * max(1, len(st.ranks_with_data)) * len(st.phases) > MAX_STEP_JSON_CELLS:
        return None
    keep = [c["key"] for c in cols] + ["slow", "hot", "waiting"]
    data: dict[str, dict] = {}
    for s in st.steps:
        vals = step_values(st.per_step, s, st.phases)
        rows = []
        for r, rec in zip(vals.index, vals.to_dict("records")):
            base = {k: v for k, v in maker.base(int(r)).items() if k in keep or k == "href"}
            base.update({p: num(rec[p]) for p in st.phases})
            rows.append(base)
        # columnar: a large run's step selector carries steps x ranks rows (1.5 MB of objects at 1,024 ranks)
        fields = list(dict.fromkeys(k for row in rows for k in row))
        data[str(s)] = columnar.encode(rows, fields, labels=("host", "pp_stage", "hot", "slow", "waiting"),
                                       href_of="rank")
    return {"columns": cols, "steps": data}


def stats_rows(a: Analysis, hl: Highlights) -> list[dict]:
    out = []
    for p in a.steps.phases:
        s = a.steps.stats.get(p)
        if not s:
            continue
        spread = (s.max - s.min) / s.median * 100 if s.median else None
        out.append({"phase": PHASE_LABELS[p], "median": s.median, "min": s.min, "min_rank": s.min_rank,
                    "max": s.max, "max_rank": s.max_rank, "spread_pct": spread,
                    "outliers": sorted(r for r in hl.slow_ranks if hl.is_hot(r, p))})
    return out


def _plan(inp: PlanInput) -> list[Page]:
    a = inp.analysis
    st = a.steps
    cols = _columns(a)
    maker = rank_rows(inp)
    hm = _heatmap_chart(a, highlights.of(inp))
    ctx = StepTraceContext(
        **inp.common,
        has_steps=st.kind is not None,
        single_device=len(a.run.rank_ids) == 1,
        kind_label=kind_label(a),
        columns=cols,
        rows=[maker.average(r) for r in a.run.rank_ids],
        rules_used={k: text(v) for k, v in st.rules_used.items()},
        steps=st.steps,
        step_json=_step_json(a, cols, maker),
        stats=stats_rows(a, highlights.of(inp)) if len(a.run.rank_ids) > 1 else [],  # spread of one device
        hosts=st.host_summary,
        without=st.ranks_without_data,
        rules_link=str(urls.Target(urls.RULES, "rule-slow-rank")),
    )
    downloads = [(urls.STEP_TRACE_CSV, cols + [{"key": "n_steps", "label": N_("Steps")}, {"key": "rule", "label": N_("Average rule")}],
                  ctx.rows)]
    return [Page(urls.STEP_TRACE, N_("Cluster step trace"), PAGE.partial, ctx,
                 charts=[*cluster_charts(inp), *([hm] if hm else [])], downloads=downloads)]


PAGE = PageKind("step-trace", urls.STEP_TRACE, N_("Step trace"), "_step_trace.html", _plan)
