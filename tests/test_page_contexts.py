"""Templates see view data only: every page context is plain data (dict, list, str, numbers, bool, None) plus chart
specs — never a DataFrame, a numpy value, an `Analysis` or a model object (issue 15)."""

from __future__ import annotations

from reportgen.charts import Chart
from reportgen.discover import discover
from reportgen.progress import Progress
from reportgen.report import BuildOptions, analyse_phase, load_phase
from reportgen.site.pages import plan_pages

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
    elif isinstance(v, Chart):
        return
    elif type(v) not in PLAIN and not (isinstance(v, PLAIN) and type(v).__module__ == "builtins"):
        out.append(f"{path}: {type(v).__module__}.{type(v).__name__}")


def test_page_contexts_are_plain_view_data(synth_8):
    opts = BuildOptions()
    run = load_phase(discover(synth_8)[0], opts, Progress(False))
    analysis, findings, thresholds = analyse_phase(run, opts)
    plan = plan_pages(analysis, findings, thresholds=thresholds)
    bad: list[str] = []
    for page in plan.pages:
        _impure(page.context, page.path, bad)
    assert not bad, "\n".join(bad[:20])
    assert len(plan.pages) > 10
