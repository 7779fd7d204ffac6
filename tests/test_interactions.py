"""Interactions driven in Chromium through playwright, network blocked (every non-file request aborted): the step
selector swaps chart data, brushing the communication graph selects matrix rows, the timeline zooms."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from reportgen.cli import main

pytestmark = pytest.mark.browser
SHOTS = Path(os.environ.get("MSREPORT_SHOTS", "")) if os.environ.get("MSREPORT_SHOTS") else None


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (test extra) is not installed")
    exe = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(exe).exists():
        if os.environ.get("CI"):
            pytest.fail("Chromium is not installed; .ci/run must install it (apt-get install -y chromium)")
        pytest.skip("Chromium not installed")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu"])
        try:
            yield b
        finally:
            b.close()


class Opened:
    def __init__(self, page, requests: list[str], errors: list[str]) -> None:
        self.page, self.requests, self.errors = page, requests, errors

    def data(self, fig: str, name: str) -> list[dict]:
        """The rows the drawn Vega view of `fig` holds in its dataset `name` right now."""
        return self.page.evaluate("([f, n]) => document.getElementById(f)._msrView.data(n)", [fig, name])

    def select(self, sel: str, value: str, fig: str) -> None:
        self.page.select_option(sel, value)
        self.page.wait_for_selector(f"#{fig}[data-step='{value}']", timeout=10000)

    def shot(self, name: str) -> None:
        if SHOTS:
            SHOTS.mkdir(parents=True, exist_ok=True)
            self.page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)

    def offline(self) -> None:
        assert not self.errors, self.errors
        assert self.requests and all(u.startswith("file://") for u in self.requests)


def open_page(browser, path: Path, figs: tuple[str, ...] = ()) -> Opened:
    requests: list[str] = []
    errors: list[str] = []

    def only_files(route):
        requests.append(route.request.url)
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            route.abort()

    page = browser.new_page(viewport={"width": 1300, "height": 1400})
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.route("**/*", only_files)
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    for f in figs:
        page.wait_for_selector(f"#{f}[data-rendered='true']", timeout=20000)
    return Opened(page, requests, errors)


def test_step_selector_swaps_step_trace_chart_data(browser, example_site):
    import pandas as pd

    o = open_page(browser, example_site / "cluster" / "step-trace.html", ("fig-step-total", "fig-breakdown"))
    avg = {r["rank"]: r["total"] for r in o.data("fig-step-total", "ranks")}
    o.select("#step-chart-select", "3", "fig-step-total")  # the selector above the charts
    assert o.page.eval_on_selector("#step-select", "s => s.value") == "3"  # the table's selector follows
    step3 = {r["rank"]: r for r in o.data("fig-step-total", "ranks")}
    # the values are step 3's: those of the step table the selector also switched to step 3
    table = {int(tr.get_attribute("id").split("-")[1]): float(tr.query_selector_all("td")[-1].get_attribute("data-v"))
             for tr in o.page.query_selector_all("#step-table tbody tr")}
    assert set(step3) == set(avg)
    assert all(step3[r]["total"] == pytest.approx(table[r], abs=1e-3) for r in table)
    assert any(step3[r]["total"] != pytest.approx(avg[r], abs=1e-3) for r in avg)
    assert step3[5]["href"].endswith("ranks/rank-5.html")  # links kept from the average rows
    med = o.data("fig-step-total", "median")[0]["median"]
    assert med == pytest.approx(float(pd.Series([v["total"] for v in step3.values()]).median()), abs=1e-3)
    assert o.page.get_attribute("#fig-breakdown", "data-step") == "3"
    computing = {r["label"]: r["value"] for r in o.data("fig-breakdown", "breakdown") if r["phase"] == "Computing"}
    cells = {tr.get_attribute("id"): float(tr.query_selector_all("td")[4].get_attribute("data-v"))
             for tr in o.page.query_selector_all("#step-table tbody tr")}
    assert computing["5"] == pytest.approx(cells["rank-5"], abs=1e-3)
    o.shot("step-trace-step3")
    o.select("#step-select", "avg", "fig-step-total")
    assert {r["rank"]: r["total"] for r in o.data("fig-step-total", "ranks")} == avg
    o.offline()


@pytest.mark.parametrize("page, select, fig, dataset", [
    ("communication.html", "#comm-step-select", "fig-comm-by-rank", "rows"),
    ("overlap.html", "#overlap-step-select", "fig-overlap-stack", "breakdown"),
])
def test_step_selector_drives_overlap_and_communication_charts(browser, example_site, page, select, fig, dataset):
    o = open_page(browser, example_site / "cluster" / page, (fig,))
    avg = o.data(fig, dataset)
    steps = o.page.eval_on_selector(select, "s => Array.from(s.options).map(o => o.value)")
    assert steps[0] == "avg" and len(steps) > 2
    spec = o.page.eval_on_selector(f"#{fig} script.step-data", "s => JSON.parse(s.textContent)")
    o.select(select, steps[2], fig)
    shown = o.data(fig, dataset)
    fields = spec["fields"][dataset]
    expected = [dict(zip(fields, vals)) for vals in spec["steps"][steps[2]][dataset]]
    assert [{k: r[k] for k in fields} for r in shown] == expected and shown != avg
    o.shot(f"{page[:-5]}-step-{steps[2]}")
    o.offline()


def _domain(o: Opened, fig: str) -> list[float]:
    return o.page.evaluate("f => document.getElementById(f)._msrView.scale('x').domain()", fig)


def test_rank_timeline_zooms_pans_switches_steps_and_shows_tooltips(browser, example_site):
    fig = "fig-rank-5-timeline"
    o = open_page(browser, example_site / "ranks" / "rank-5.html", (fig,))
    ops = o.data(fig, "ops")
    # lanes per stream / thread, and only the execution view's chosen steps (representative and slowest)
    assert {r["lane"] for r in ops} == {"Ascend Hardware · thread 2", "HCCL · Group 0 Communication"}
    assert {r["cat"] for r in ops} == {"compute", "communication"}
    steps = sorted({r["step"] for r in ops})
    assert len(steps) == 2
    assert all(r["lane_i"] == (0 if r["lane"].startswith("Ascend") else 1) for r in ops)  # compute lane first
    o.page.locator(f"#{fig}").scroll_into_view_if_needed()
    box = o.page.locator(f"#{fig} svg").first.bounding_box()
    origin = o.page.evaluate("f => document.getElementById(f)._msrView.origin()", fig)
    y_mid = box["y"] + origin[1] + 22
    d0 = _domain(o, fig)
    o.page.mouse.move(box["x"] + box["width"] * 0.5, y_mid)
    o.page.mouse.wheel(0, -400)  # scroll up: zoom in around the pointer
    o.page.wait_for_timeout(400)
    d1 = _domain(o, fig)
    assert d1[1] - d1[0] < 0.9 * (d0[1] - d0[0]) and d0[0] <= d1[0] and d1[1] <= d0[1]
    o.page.mouse.down()
    o.page.mouse.move(box["x"] + box["width"] * 0.3, y_mid, steps=5)  # drag left: pan towards later times
    o.page.mouse.up()
    o.page.wait_for_timeout(300)
    d2 = _domain(o, fig)
    assert d2[0] > d1[0] and d2[1] - d2[0] == pytest.approx(d1[1] - d1[0], rel=1e-6)
    o.shot("rank-5-timeline-zoomed")
    # hover the longest operator drawn in the left part of the plot: the tooltip names it with its duration
    target = o.page.evaluate("""f => { const v = document.getElementById(f)._msrView, x = v.scale('x'), y = v.scale('y');
      const d = x.domain(), s = v.signal('tlstep'), w = x.range()[1];
      const mid = r => x((Math.max(r.start, d[0]) + Math.min(r.start + r.dur, d[1])) / 2);
      const o = v.data('ops').filter(r => r.step === s && r.start + r.dur > d[0] && r.start < d[1] && mid(r) < 0.6 * w)
        .sort((a, b) => b.dur - a.dur)[0];
      return {name: o.name, dur: o.dur, x: mid(o), y: y(o.lane) + y.bandwidth() / 2}; }""", fig)
    o.page.mouse.move(box["x"] + origin[0] + target["x"], box["y"] + origin[1] + target["y"])
    o.page.wait_for_selector(".msr-tooltip", state="visible", timeout=5000)
    tip = o.page.inner_text(".msr-tooltip")
    assert target["name"] in tip and "Duration (ms)" in tip and f"{target['dur']:,.4f}"[:5] in tip
    # the step drop-down (a Vega binding) switches to the other chosen step
    other = [s for s in steps if s != o.page.evaluate("f => document.getElementById(f)._msrView.signal('tlstep')", fig)]
    o.page.select_option(f"#{fig} .vega-bindings select", str(other[0]))
    o.page.wait_for_timeout(300)
    assert o.page.evaluate("f => document.getElementById(f)._msrView.signal('tlstep')", fig) == other[0]
    o.offline()


def test_execution_timeline_has_a_lane_per_device_and_stream(browser, example_site):
    o = open_page(browser, example_site / "cluster" / "execution.html")
    fig = o.page.get_attribute("[id^=fig-timeline-]", "id")
    o.page.wait_for_selector(f"#{fig}[data-rendered='true']", timeout=20000)
    ops = o.data(fig, "ops")
    devices = [tr.get_attribute("id").split("-")[-1] for tr in o.page.query_selector_all("#marey-devices-table tbody tr")]
    lanes = {r["lane"] for r in ops}
    assert len(devices) == 16 and len(lanes) == 2 * len(devices)
    assert all(any(ln.startswith(f"rank {d} ") for ln in lanes) for d in devices)
    counts = {}
    for r in ops:
        counts[r["lane"].split(" · ")[0]] = counts.get(r["lane"].split(" · ")[0], 0) + 1
    assert max(counts.values()) <= 150  # the per-device cap
    d0 = _domain(o, fig)
    o.page.locator(f"#{fig}").scroll_into_view_if_needed()
    box = o.page.locator(f"#{fig} svg").first.bounding_box()
    o.page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + 100)
    o.page.mouse.wheel(0, -300)
    o.page.wait_for_timeout(400)
    d1 = _domain(o, fig)
    assert d1[1] - d1[0] < d0[1] - d0[0]
    o.shot("execution-timeline")
    o.offline()


def _brush(o: Opened, fig: str, x0: float, x1: float, y0: float, y1: float) -> None:
    """Drag a rectangle over the data-space box [x0, x1] x [y0, y1] of `fig`'s plot (clamped inside the plot),
    from its bottom-left corner (the chart's action menu sits top right)."""
    o.page.locator(f"#{fig}").scroll_into_view_if_needed()
    box = o.page.locator(f"#{fig} svg").first.bounding_box()
    px = o.page.evaluate("""([f, pts]) => { const v = document.getElementById(f)._msrView, o = v.origin();
      const clamp = (s, val) => { const d = s.domain(), lo = Math.min(d[0], d[1]), hi = Math.max(d[0], d[1]),
                                        e = (hi - lo) * 0.01; return s(Math.min(hi - e, Math.max(lo + e, val))); };
      return pts.map(p => [o[0] + clamp(v.scale('x'), p[0]), o[1] + clamp(v.scale('y'), p[1])]); }""",
                         [fig, [[x0, min(y0, y1)], [x1, max(y0, y1)]]])
    o.page.mouse.move(box["x"] + px[0][0], box["y"] + px[0][1])
    o.page.mouse.down()
    o.page.mouse.move(box["x"] + px[1][0], box["y"] + px[1][1], steps=8)
    o.page.mouse.up()


def test_brushing_devices_in_the_graph_selects_matrix_rows(browser, example_site):
    o = open_page(browser, example_site / "cluster" / "communication.html",
                  ("fig-comm-graph", "fig-comm-matrix", "fig-comm-link-ops"))
    nodes = o.data("fig-comm-graph", "nodes")
    # the first host's devices sit on the right of the circle of hosts (x > 0.5)
    picked = sorted((n["id"] for n in nodes if n["x"] > 0.5), key=int)
    assert picked and len(picked) < len(nodes)
    xs = [n["x"] for n in nodes if n["id"] in picked]
    ys = [n["y"] for n in nodes if n["id"] in picked]
    _brush(o, "fig-comm-graph", min(xs) - 0.05, max(xs) + 0.05, min(ys) - 0.05, max(ys) + 0.05)
    o.page.wait_for_selector(f"#fig-comm-matrix[data-selected='{','.join(picked)}']", timeout=10000)
    # the matrix now draws only the links among the brushed devices: rows and columns are those devices
    shown = o.page.evaluate("""() => { const v = document.getElementById('fig-comm-matrix')._msrView;
      return [v.scale('y').domain(), v.scale('x').domain()]; }""")
    cells = [c for c in o.data("fig-comm-matrix", "cells") if c["group"] == "All groups"]
    expected = sorted({c["src"] for c in cells if c["src"] in picked and c["dst"] in picked}, key=int)
    assert sorted(shown[0], key=int) == expected and set(shown[1]) <= set(picked)
    assert set(shown[0]) < {c["src"] for c in cells}  # fewer rows than before
    # each drawn cell carries the link's time and size
    labels = o.page.evaluate("""() => Array.from(document.querySelectorAll('#fig-comm-matrix svg text'))
      .map(t => t.textContent).filter(t => t.indexOf(' ms · ') > 0)""")
    within = [c for c in cells if c["src"] in picked and c["dst"] in picked]
    assert len(labels) == len(within) and within[0]["cell_label"] in labels
    text = o.page.inner_text("#comm-selection")
    assert f"{len(picked)} device(s) selected" in text
    # the per-operator box plots keep the links that start or end on the selected devices
    assert o.page.get_attribute("#fig-comm-link-ops", "data-selected") == ",".join(picked)
    ops = o.data("fig-comm-link-ops", "ops")
    links = o.page.evaluate("() => document.getElementById('fig-comm-link-ops')._msrView.scale('x').domain()")
    assert set(links) == {r["link"] for r in ops if r["src"] in picked or r["dst"] in picked}
    assert set(links) < {r["link"] for r in ops}
    o.shot("communication-brushed")
    # double-click clears: every device again
    o.page.locator("#fig-comm-graph svg").first.dblclick()
    o.page.wait_for_selector("#fig-comm-matrix[data-selected='']", timeout=10000)
    o.offline()


def test_link_op_box_plots_stay_visible_when_operators_barely_differ(browser, tmp_path):
    """Operators of a link within 0.1 % of each other: the box collapses to a line on a zero-based scale; here
    the scale leaves zero and every operator is also a dot."""
    from reportgen.charts.comm import link_op_boxplot
    rows = [{"link": "0-1 HCCS", "order": 0, "src": "0", "dst": "1", "op": f"op{i}", "time_ms": 1.0 + i * 1e-4,
             "size_mb": 16.0, "bandwidth_gbps": 16.0 / (1.0 + i * 1e-4), "slow": False} for i in range(6)]
    spec = link_op_boxplot(rows)
    page = tmp_path / "box.html"
    from reportgen.site.assets import vega_bundle, static_text
    (tmp_path / "vega.js").write_text(vega_bundle())
    (tmp_path / "report.js").write_text(static_text("report.js"))
    import json
    page.write_text('<!DOCTYPE html><html><body><figure class="chart" id="fig-box"><div class="vis"></div>'
                    '<script type="application/json" class="spec">' + json.dumps(spec) + '</script></figure>'
                    '<script src="vega.js"></script><script src="report.js"></script></body></html>')
    o = open_page(browser, page, ("fig-box",))
    lo, hi = o.page.evaluate("() => document.getElementById('fig-box')._msrView.scale('y').domain()")
    vals = [r["bandwidth_gbps"] for r in rows]
    assert lo > 0 and lo <= min(vals) and hi >= max(vals) and (hi - lo) < 0.05 * max(vals)
    dots = o.page.query_selector_all("#fig-box svg .mark-symbol path")
    assert len(dots) == len(rows)
    rect = o.page.query_selector("#fig-box svg .mark-rect path")
    assert rect is not None and rect.bounding_box()["height"] > 20  # the box spans a visible height
    o.offline()


def test_single_device_overview_draws_every_chart_offline(browser, tmp_path):
    out = tmp_path / "site"
    assert main(["../shared/samples/mindinsight/single_device_run2_rank1_full", "-o", str(out), "-q",
                 "--lang", "en"]) == 0
    figs = ("fig-step-phases", "fig-rank-1-optypes", "fig-rank-1-hostq", "fig-rank-1-timeline", "fig-rank-1-cpu")
    o = open_page(browser, out / "index.html", figs)
    assert o.page.eval_on_selector_all("figure.chart", "fs => fs.filter(f => f.dataset.rendered !== 'true').length") == 0
    lanes = {r["lane"] for r in o.data("fig-rank-1-timeline", "ops")}
    assert lanes == {"AI Core · stream 519", "AI CPU · data queue"}  # the trace's device stream and AI CPU
    shapes = {r["name"]: r["shapes"] for r in o.data("fig-rank-1-timeline", "ops")}
    # the trace's args of ApplyMomentum-op38: input_0..3 shapes "2,4096", "2,4096", "1", "2,4096", input_4 ""
    assert shapes["ApplyMomentum-op38"] == "[2,4096];[2,4096];[1];[2,4096]"
    o.shot("single-device-overview")
    o.offline()


def test_single_device_run_in_the_browser_has_no_communication_page(browser, tmp_path):
    from reportgen.synth import generate_run
    run = generate_run(tmp_path / "run", ranks=1, steps=3)
    out = tmp_path / "site"
    assert main([str(run), "-o", str(out), "-q"]) == 0
    o = open_page(browser, out / "index.html")
    labels = [t.strip() for t in o.page.locator("nav a").all_inner_texts()]
    assert labels and not {"Communication", "Strategy"} & set(labels)
    # the step-trace page is one click away and draws its charts
    o.page.locator("nav a", has_text="Step").first.click()
    o.page.wait_for_load_state("load")
    assert o.page.url.endswith("cluster/step-trace.html")
    o.page.wait_for_selector("figure.chart[data-rendered='true']", timeout=15000)
    o.offline()


def test_overlap_step_view_is_the_steps_own_breakdown(browser, example_site):
    """Step 3 of the example on the overlap page: every part of rank 5's bar is that step's value (computing alone
    = computing − overlapped), as the step-trace page's data for step 3 has them."""
    import json
    from bs4 import BeautifulSoup
    from reportgen.charts.columnar import rows_of
    st = BeautifulSoup((example_site / "cluster" / "step-trace.html").read_text(encoding="utf-8"), "html.parser")
    step3 = {r["rank"]: r for r in rows_of(json.loads(st.select_one("#step-table-data").string)["steps"]["3"])}[5]
    o = open_page(browser, example_site / "cluster" / "overlap.html", ("fig-overlap-stack",))
    o.select("#overlap-step-select", "3", "fig-overlap-stack")
    bar = {r["phase"]: r["value"] for r in o.data("fig-overlap-stack", "breakdown") if r["label"] == "5"}
    assert bar["Computing (not overlapped)"] == pytest.approx(step3["computing"] - step3["overlapped"], abs=1e-3)
    assert bar["Overlapped"] == pytest.approx(step3["overlapped"], abs=1e-3)
    assert bar["Free"] == pytest.approx(step3["free"], abs=1e-3)
    assert sum(bar.values()) == pytest.approx(step3["total"], rel=0.02)
    o.shot("overlap-step-3")
    o.offline()
