"""Templates see view data only: every page context is a small frozen dataclass defined by its page module (as
coverage.py's `IndexItem` / `FileData`), whose fields hold plain data (dict, list, str, numbers, bool, None) plus
chart specs — never a DataFrame, a numpy value, an `Analysis` or a model object (issue 15)."""

from __future__ import annotations

import dataclasses

import pytest
from markupsafe import Markup

from reportgen.charts import Chart
from reportgen.layouts import discover
from reportgen.progress import Progress
from reportgen.report import BuildOptions, analyse_phase, load_phase
from reportgen.site.pages.rank.sections import RankSection
from reportgen.site.plan.page import PageContext
from reportgen.site.plan.planner import plan_pages

PLAIN = (str, int, float, bool, type(None))


def _impure(v, path: str, out: list[str], depth: int = 0) -> None:
    if depth > 40:
        out.append(f"{path}: nested too deep")
    elif isinstance(v, dict):
        for k, x in v.items():
            if not isinstance(k, (str, int)):
                out.append(f"{path}: key {type(k).__name__}")
            _impure(x, f"{path}.{k}", out, depth + 1)
    elif isinstance(v, (list, tuple)):
        for i, x in enumerate(v):
            _impure(x, f"{path}[{i}]", out, depth + 1)
    elif isinstance(v, Chart) or type(v) is Markup:  # chart specs; SVG drawn by the page module
        return
    elif isinstance(v, RankSection):  # a rank page's typed section: a frozen view dataclass of plain data too
        if not type(v).__dataclass_params__.frozen or hasattr(v, "__dict__"):
            out.append(f"{path}: {type(v).__name__} is not a frozen, slotted dataclass")
        for f in dataclasses.fields(v):
            _impure(getattr(v, f.name), f"{path}.{f.name}", out, depth + 1)
    elif type(v) not in PLAIN:
        out.append(f"{path}: {type(v).__module__}.{type(v).__name__}")


def _problems(ctx, path: str) -> list[str]:
    """What is wrong with one page context: not a frozen `PageContext` dataclass, or impure data in a field."""
    if not (dataclasses.is_dataclass(ctx) and isinstance(ctx, PageContext)):
        return [f"{path}: context is {type(ctx).__module__}.{type(ctx).__name__}, not a PageContext dataclass"]
    out = []
    if not type(ctx).__dataclass_params__.frozen:
        out.append(f"{path}: {type(ctx).__name__} is not frozen")
    if hasattr(ctx, "__dict__"):
        out.append(f"{path}: {type(ctx).__name__} has no __slots__")
    for f in dataclasses.fields(ctx):
        _impure(getattr(ctx, f.name), f"{path}.{f.name}", out)
    return out


def _plan(run_dir):
    opts = BuildOptions()
    run = load_phase(discover(run_dir)[0], opts, Progress(False))
    analysis, findings, thresholds = analyse_phase(run, opts)
    return plan_pages(analysis, findings, thresholds=thresholds)


def test_page_contexts_are_frozen_dataclasses_of_plain_view_data(synth_8):
    plan = _plan(synth_8)
    bad: list[str] = []
    kinds = set()
    for page in plan.pages:
        bad += _problems(page.context, page.path)
        kinds.add(type(page.context).__name__)
    assert not bad, "\n".join(bad[:20])
    assert len(plan.pages) > 10
    # one view model per page module: overview, step trace, overlap, communication, execution, resources, rules, rank
    assert {"OverviewContext", "StepTraceContext", "RankContext", "RulesContext"} <= kinds
    assert len(kinds) >= 7
    # a rank page's sections are typed: one dataclass per section, in page order
    rank = next(p for p in plan.pages if type(p.context).__name__ == "RankContext")
    assert [type(s).__name__ for s in rank.context.sections][:1] == ["StepSection"]
    assert {"OverlapSection", "CommSection", "OperatorsSection", "MemorySection", "TimelineSection"} <= {
        type(s).__name__ for s in rank.context.sections}
    assert all(isinstance(s, RankSection) and s.template.startswith("_rank_") for s in rank.context.sections)


def test_a_context_is_immutable_and_a_typo_fails(synth_8):
    ctx = _plan(synth_8).pages[0].context
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.run_title = "other"
    with pytest.raises(TypeError):
        type(ctx)(**{f.name: getattr(ctx, f.name) for f in dataclasses.fields(ctx)}, no_such_field=1)


def test_the_checker_rejects_a_dict_context_and_a_dataframe_field():
    import pandas as pd

    from reportgen.site.plan.page import view

    @view
    class Bad(PageContext):
        table: object

    assert _problems({"run_title": "x"}, "p")
    assert _problems(Bad(run_title="t", version="v", table=pd.DataFrame()), "p")
    assert not _problems(Bad(run_title="t", version="v", table=[{"a": 1, "b": [None, 2.5]}]), "p")
