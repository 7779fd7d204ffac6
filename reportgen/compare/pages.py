"""The comparison and trend pages: the report's look (base.html, report.css, bundled Vega: `PageAssets`), written
through the report's writer (`site.render.output`: staged folder, atomic single file, marker)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Optional


from reportgen import __version__, fmt, i18n
from reportgen.i18n import N_, _
from reportgen.compare import charts
from reportgen.compare.model import LEAF_PHASES, Comparison, Delta, phase_label
from reportgen.compare.trend import Trend
from reportgen.site.render.jinja_env import make_env
from reportgen.site.render.output import atomic_write, check_output, json_text, staged_folder, write_marker
from reportgen.site.render.page_assets import PageAssets
from reportgen.charts import Chart
from reportgen.urls import INDEX

TOP_CHART = 15




def label(value) -> str:
    """A compared item's label in the report's language (a message, a catalog word such as a phase, or data)."""
    return i18n.translate(value)


def _delta_rows(items: list[Delta]) -> list[dict]:
    return [{"label": label(d.label), "order": i, "delta_pct": d.delta_pct, "delta": d.delta, "base": d.base, "new": d.new,
             "status": d.status} for i, d in enumerate(items) if d.delta_pct is not None]


def _pairs(items: list[Delta], scale: float = 1.0) -> list[dict]:
    rows = []
    for i, d in enumerate(items):
        for run, v in (("base", d.base), ("new", d.new)):
            if v is not None:
                rows.append({"label": str(d.extra.get("rank", label(d.label))), "order": i, "run": run,
                             "value": v * scale})
    return rows


def compare_charts(c: Comparison) -> dict[str, Chart]:
    out: dict[str, Chart] = {}
    steps = [c.step] + c.phases
    if any(d.delta_pct is not None for d in steps):
        out["phases"] = Chart("cmp-phases", charts.delta_bars(_delta_rows(steps), _("Change (ms per step)"), "delta"),
                              _("Change of the cluster-mean step time and of each phase in ms per step (a "
                                "percentage of a phase near zero says nothing; grey: within the step-to-step noise "
                                "of either run; more overlapped communication is hidden time, green)."))
    ranks = [r for r in c.ranks if r.delta is not None][: charts.MAX_BARS]
    if ranks:
        rows, order = [], []
        for r in ranks:
            for k, v in r.extra["phases"].items():
                if k in LEAF_PHASES and v.get("delta") is not None:
                    phase = label(v["label"])
                    rows.append({"rank": r.extra["rank"], "phase": phase, "delta": v["delta"], "base": v["base"],
                                 "new": v["new"], "status": v["status"], "noise": v["noise"]})
                    if phase not in order:
                        order.append(phase)
        if len(c.ranks) > len(ranks):
            cap = _("Change of each phase per rank (ms per step), the {n} ranks that changed most: a rank whose own "
                    "phase moved differently from the others is the cause.").format(n=len(ranks))
        else:
            cap = _("Change of each phase per rank (ms per step): a rank whose own phase moved differently from the "
                    "others is the cause.")
        if rows:
            out["ranks"] = Chart("cmp-ranks", charts.rank_phase_deltas(rows, order), cap)
    ops = sorted((o for o in c.operators if o.delta is not None and o.status != "unchanged"),
                 key=lambda o: -abs(o.delta))[:TOP_CHART]
    if ops:
        rows = [{"label": (_("type {name}").format(name=o.label) if o.extra.get("kind") == "type" else o.label),
                 "order": i,
                 "delta": o.delta, "delta_pct": o.delta_pct, "base": o.base, "new": o.new, "status": o.status}
                for i, o in enumerate(ops)]
        out["operators"] = Chart("cmp-operators", charts.delta_bars(rows, _("Change (ms per step)"), "delta"),
                                 _("Operator types and operators whose time per step changed most."))
    comm = [d for d in c.communication if d.delta is not None]
    if comm:
        out["communication"] = Chart("cmp-comm", charts.delta_bars(_delta_rows(comm)),
                                     _("Communication time per step by group and by collective."))
    mem = [m for m in c.memory][: charts.MAX_BARS]
    if any(m.base is not None or m.new is not None for m in mem):
        out["memory"] = Chart("cmp-memory", charts.base_vs_new(_pairs(mem, 1 / 1024), _("Peak device memory (GB)")),
                              _("Peak device memory per rank, base and new."))
    return out


def _facts_rows(c: Comparison) -> list[tuple]:
    """(label, base, new, differs, as code): the run facts side by side; ids and paths are shown as code."""
    b, n = c.base, c.new

    def sizes(d: dict) -> str:
        return " ".join(f"{k}={v}" for k, v in d.items()) or "—"

    def versions(d: dict) -> str:
        return ", ".join(f"{k} {v}" for k, v in d.items()) or "—"

    def mode(f) -> str:
        return _("{mode}, {stages} stage(s)").format(mode=i18n.translate(f.parallel_mode), stages=f.stages)

    def kind(f) -> str:
        return {"run": _("run folder"), "report": _("report folder"), "summary": _("summary.json file")}.get(f.kind,
                                                                                                         f.kind)

    rows = [("Input", N_("Input"), f"{b.source}", f"{n.source}", True),
            ("Input kind", N_("Input kind"), kind(b), kind(n), False),
            ("Run path", N_("Run path"), b.path or "—", n.path or "—", True),
            ("Summary written", N_("Summary written at"), b.generated_at or "—", n.generated_at or "—", False),
            ("Layout", N_("Layout"), b.layout or "—", n.layout or "—", True),
            ("Ranks", N_("Ranks"), str(b.ranks), str(n.ranks), False),
            ("Steps", N_("Steps"), str(b.steps), str(n.steps), False),
            ("Parallel mode", N_("Parallel mode"), mode(b), mode(n), False),
            ("Parallel sizes", N_("Parallel sizes"), sizes(b.parallel_sizes), sizes(n.parallel_sizes), True),
            ("Framework", N_("Framework"), b.framework or "—", n.framework or "—", True),
            ("Versions", N_("Versions"), versions(b.versions), versions(n.versions), True),
            ("Profiler level", N_("Profiler level"), b.profiler_level or "—", n.profiler_level or "—", True),
            ("Step trace", N_("Step trace"), b.step_trace_kind or "—", n.step_trace_kind or "—", True),
            ("msreport", "msreport", b.tool_version or "—", n.tool_version or "—", True)]
    informative = {"Input", "Input kind", "Run path", "Summary written", "msreport"}
    return [(_(lab), bv, nv, k not in informative and bv != nv, code and (bv, nv) != ("—", "—"))
            for k, lab, bv, nv, code in rows]


def _env():
    env = make_env()
    env.filters["signed"] = fmt.signed
    env.filters["num3"] = fmt.fixed
    # a number already in percent (a threshold): "5 %" / "5%", one decimal only when it has one
    env.filters["pct_value"] = lambda v: i18n.format_percent(v, 0 if float(v).is_integer() else 1)
    return env


def _render(template: str, title: str, run_title: str, assets: PageAssets, **context) -> str:
    page = SimpleNamespace(title=title, path=INDEX)
    ctx = SimpleNamespace(version=__version__, run_title=run_title)
    common = dict(page=page, ctx=ctx, nav=[], url=lambda p: p, single=assets.single, charts=[],
                  share_spec=lambda chart: None, asset_specs="")  # each chart carries its own spec
    return _env().get_template(template).render(**common, **assets.template_vars(), **context)


def _check(out: Path, single_file: bool, inputs: list[Path]) -> None:
    for p in inputs:
        p = Path(p)
        check_output(out, p if p.is_dir() else p.parent, single_file)


def _write(out: Path, single_file: bool, template: str, title: str, run_title: str, data_name: str, payload: dict,
           **context) -> Path:
    text = json_text(payload, indent=2)
    if single_file:
        html = _render(template, title, run_title, PageAssets.inline(), **context)
        out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(out.with_name(f"{out.stem}.{data_name}"), text)
        atomic_write(out, html)
        return out
    with staged_folder(out) as tmp:
        assets = PageAssets.write(tmp)
        (tmp / INDEX).write_text(_render(template, title, run_title, assets, **context), encoding="utf-8")
        (tmp / data_name).write_text(text, encoding="utf-8")
        write_marker(tmp)
    return out / INDEX


def write_compare(c: Comparison, out: Path, *, single_file: bool = False, inputs: Optional[list[Path]] = None) -> Path:
    """Write the comparison page and `compare.json` (or NAME.html + NAME.compare.json)."""
    _check(out, single_file, inputs or [])
    data = c.to_dict()
    return _write(out, single_file, "compare.html", N_("Comparison"), f"msreport compare: {Path(c.base.source).name} → "
                  f"{Path(c.new.source).name}", "compare.json", data, cmp=c, data=data, facts=_facts_rows(c),
                  figs=compare_charts(c), phase_label=phase_label, label=label)


def trend_charts(t: Trend) -> dict[str, Chart]:
    out = {}
    rows = []
    for r in t.runs:
        if r.step_ms is not None:
            rows.append({"run": f"{r.index + 1}. {r.label}", "index": r.index, "series": _("Step time"),
                         "value": r.step_ms})
    if rows:
        out["step"] = Chart("trend-step", charts.trend_lines(rows, [_("Step time")]),
                            _("Cluster-mean step time over the runs, in date order."))
    rows = []
    keys = [k for k in t.phases if k in LEAF_PHASES] or t.phases  # the phases that add up to the step
    labels = [_(phase_label(k)) for k in keys]
    for r in t.runs:
        for k in keys:
            if r.phases.get(k) is not None:
                rows.append({"run": f"{r.index + 1}. {r.label}", "index": r.index, "series": _(phase_label(k)),
                             "value": r.phases[k]})
    if rows:
        out["phases"] = Chart("trend-phases", charts.trend_lines(rows, labels),
                              _("Cluster-mean phases over the runs (time per step)."))
    return out


def write_trend(t: Trend, out: Path, *, single_file: bool = False, inputs: Optional[list[Path]] = None) -> Path:
    _check(out, single_file, inputs or [])
    return _write(out, single_file, "trend.html", N_("Trend"), "msreport trend: " + _("{n} runs").format(n=len(t.runs)),
                  "trend.json", t.to_dict(), trend=t, figs=trend_charts(t), phase_label=phase_label, label=label)
