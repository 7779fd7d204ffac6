"""Interactions driven in Chromium through playwright, network blocked (every non-file request aborted): the step
selector swaps chart data, brushing the communication graph selects matrix rows, the timeline zooms."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reportgen.cli import main
from tests.conftest import sample

pytestmark = pytest.mark.browser
SHOTS = Path(os.environ.get("MSREPORT_SHOTS", "")) if os.environ.get("MSREPORT_SHOTS") else None


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
        page.wait_for_selector(f"#{f}[data-rendered='true']", timeout=20000, state="attached")  # drawn, maybe hidden
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
    assert {r["lane"] for r in ops} == {"Ascend Hardware · Stream 2", "HCCL · Group 0 Communication",
                                        "CANN · Thread 4243"}
    assert {r["cat"] for r in ops} == {"compute", "communication", "host dispatch"}
    steps = sorted({r["step"] for r in ops})
    assert len(steps) == 2
    order = {"compute": 0, "communication": 1, "host dispatch": 2}
    assert all(r["lane_i"] == order[r["cat"]] for r in ops)  # compute lane first, host dispatch last
    o.page.locator(f"#{fig}").scroll_into_view_if_needed()
    box = o.page.locator(f"#{fig} svg").first.bounding_box()
    # the plot's offset in the SVG: the view's origin plus its padding
    origin = o.page.evaluate("""f => { const v = document.getElementById(f)._msrView, o = v.origin(), p = v.padding();
      return [o[0] + (p.left || 0), o[1] + (p.top || 0)]; }""", fig)
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
    # a host dispatch bar: its tooltip names the launch call and the start of the device operator it launched
    o.page.dblclick(f"#{fig} svg")  # reset the zoom
    o.page.wait_for_timeout(300)
    host = o.page.evaluate("""f => { const v = document.getElementById(f)._msrView, x = v.scale('x'), y = v.scale('y');
      const s = v.signal('tlstep'), d = x.domain();
      const r = v.data('ops').filter(r => r.step === s && r.cat === 'host dispatch' && r.start > d[0] + 0.2 * (d[1] - d[0])
                                           && r.start < d[0] + 0.6 * (d[1] - d[0]))[0];
      return {name: r.name, start: r.start, launch: r.launch, x: x(r.start + r.dur / 2),
              y: y(r.lane) + y.bandwidth() / 2}; }""", fig)
    for _ in range(8):  # a launch call lasts µs: zoom in around it until its bar is pixels wide
        o.page.mouse.move(box["x"] + origin[0] + host["x"], box["y"] + origin[1] + host["y"])
        o.page.mouse.wheel(0, -600)
        o.page.wait_for_timeout(150)
        host["x"] = o.page.evaluate("""([f, t]) => { const v = document.getElementById(f)._msrView;
          const r = v.data('ops').find(r => r.start === t && r.cat === 'host dispatch' && r.step === v.signal('tlstep'));
          return v.scale('x')(r.start + r.dur / 2); }""", [fig, host["start"]])
    o.page.mouse.move(box["x"] + origin[0] + host["x"], box["y"] + origin[1] + host["y"])
    o.page.wait_for_function("n => document.querySelector('.msr-tooltip') && "
                             "document.querySelector('.msr-tooltip').innerText.indexOf(n) >= 0", arg=host["name"],
                             timeout=5000)
    tip = o.page.inner_text(".msr-tooltip")
    assert "Launches a device operator at (ms)" in tip and str(host["launch"]) in tip
    assert "Input shapes" not in tip  # empty fields are left out of the tooltip
    o.shot("rank-5-timeline-host-dispatch")
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
    from reportgen.site.render.assets import vega_bundle, static_text
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
    assert main([str(sample("mindinsight/single_device_run2_rank1_full")), "-o", str(out), "-q",
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
    from reportgen.charts.column_codec import rows_of
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


# ---- the step selector on every per-step chart (marks, medians, axis titles) ------------------------------------

MARKS_JS = """([f, key]) => { const out = [];
  const walk = n => { if (!n) return;
    if (n.marktype && n.marktype !== 'group') {
      (n.items || []).forEach(i => { if (i.datum && key in i.datum) out.push({datum: Object.assign({}, i.datum),
        opacity: i.opacity === undefined ? 1 : i.opacity, x: i.x, mark: n.marktype}); });
      return; }
    (n.items || []).forEach(walk); };
  walk(document.getElementById(f)._msrView.scenegraph().root); return out; }"""


def _marks(o: Opened, fig: str, key: str) -> list[dict]:
    """The drawn items of `fig` whose datum has `key` (opacity and x as drawn)."""
    return o.page.evaluate(MARKS_JS, [fig, key])


def _texts(o: Opened, fig: str) -> list[str]:
    return o.page.eval_on_selector_all(f"#{fig} svg text", "ts => ts.map(t => t.textContent)")


def _step_table(site: Path, step: str) -> dict[int, dict]:
    import json
    from bs4 import BeautifulSoup
    st = BeautifulSoup((site / "cluster" / "step-trace.html").read_text(encoding="utf-8"), "html.parser")
    from reportgen.charts.column_codec import rows_of
    return {r["rank"]: r for r in rows_of(json.loads(st.select_one("#step-table-data").string)["steps"][step])}


def _median(vals: list[float]) -> float:
    v = sorted(vals)
    return (v[len(v) // 2] + v[(len(v) - 1) // 2]) / 2


def test_step_selector_isolates_the_step_in_the_heatmap_and_names_it_on_the_axes(browser, example_site):
    rows = _step_table(example_site, "3")
    o = open_page(browser, example_site / "cluster" / "step-trace.html", ("fig-step-total", "fig-breakdown",
                                                                          "fig-heatmap"))
    assert "Average step time (ms)" in _texts(o, "fig-step-total")
    assert all(c["opacity"] == 1 for c in _marks(o, "fig-heatmap", "step_order"))
    o.select("#step-chart-select", "3", "fig-heatmap")
    o.page.wait_for_selector("#fig-step-total[data-step='3']", timeout=10000)
    cells = [c for c in _marks(o, "fig-heatmap", "step_order") if c["mark"] == "rect"]
    on = [c["datum"] for c in cells if c["opacity"] == 1]
    assert {c["steps"] for c in on} == {"3"} and len(on) == len(rows)
    assert all(c["opacity"] < 0.5 for c in cells if c["datum"]["steps"] != "3")
    # the example's heatmap shows computing above the stage's median in the step (rank 5 is slow in computing)
    for c in on:
        r = int(c["ranks"])
        mates = [x["computing"] for x in rows.values() if x["pp_stage"] == rows[r]["pp_stage"]]
        assert c["value"] == pytest.approx(rows[r]["computing"] - _median(mates), abs=1e-3)
    assert "Step 3 time (ms)" in _texts(o, "fig-step-total")
    assert "Average step time (ms)" not in _texts(o, "fig-step-total")
    assert "Step 3: time (ms)" in _texts(o, "fig-breakdown")
    o.shot("step-trace-step3-heatmap")
    o.select("#step-chart-select", "avg", "fig-heatmap")
    assert all(c["opacity"] == 1 for c in _marks(o, "fig-heatmap", "step_order"))
    assert "Average step time (ms)" in _texts(o, "fig-step-total")
    o.offline()


def test_step_selector_drives_the_overlap_share_and_stage_charts(browser, example_site):
    rows = _step_table(example_site, "3")
    o = open_page(browser, example_site / "cluster" / "overlap.html",
                  ("fig-overlap-share", "fig-overlap-stages", "fig-overlap-stage-steps"))
    o.select("#overlap-step-select", "3", "fig-overlap-share")
    o.page.wait_for_selector("#fig-overlap-stages[data-step='3']", timeout=10000)
    o.page.wait_for_selector("#fig-overlap-stage-steps[data-step='3']", timeout=10000)
    share = {r["rank"]: r["share"] for r in o.data("fig-overlap-share", "share")}
    assert set(share) == set(rows)
    for r, x in rows.items():  # communication not overlapped / step total, in step 3
        assert share[r] == pytest.approx(x["communication_not_overlapped"] / x["total"], abs=1e-5)
    assert o.data("fig-overlap-share", "share")[0]["href"].endswith("ranks/rank-0.html")
    # the stage bars: the mean over each stage's ranks of step 3's computing, exposed communication and bubble
    drawn = {(r["stage"], r["metric"]): r["value"] for r in o.data("fig-overlap-stages", "stages")}
    for stage in (0, 1):
        mates = [x for x in rows.values() if x["pp_stage"] == stage]
        for metric, key in (("Computing", "computing"), ("Bubble", "bubble"),
                            ("Comm. not overlapped (excl. receive)", "communication_not_overlapped_exclude_receive")):
            assert drawn[(f"stage {stage}", metric)] == pytest.approx(
                sum(x[key] for x in mates) / len(mates), abs=1e-3)
    # the stage-per-step lines mark step 3
    rule = _marks(o, "fig-overlap-stage-steps", "sel_step")
    assert [m["datum"]["sel_step"] for m in rule] == [3]
    point3 = [m["x"] for m in _marks(o, "fig-overlap-stage-steps", "stage") if m["datum"].get("step") == 3]
    assert point3 and all(x == pytest.approx(rule[0]["x"], abs=0.5) for x in point3)
    assert "Pure communication / step 3" in _texts(o, "fig-overlap-share")
    assert "Mean per rank in step 3 (ms)" in _texts(o, "fig-overlap-stages")
    o.shot("overlap-step-3-all")
    o.select("#overlap-step-select", "avg", "fig-overlap-stage-steps")
    assert _marks(o, "fig-overlap-stage-steps", "sel_step") == []
    o.offline()


def test_step_selector_marks_the_communication_time_view(browser, example_site):
    o = open_page(browser, example_site / "cluster" / "communication.html", ("fig-comm-by-rank", "fig-comm-per-step"))
    o.select("#comm-step-select", "4", "fig-comm-per-step")
    rule = _marks(o, "fig-comm-per-step", "sel_step")
    assert [m["datum"]["sel_step"] for m in rule] == [4]
    o.page.wait_for_selector("#fig-comm-by-rank[data-step='4']", timeout=10000)
    assert "Step 4: time (ms)" in _texts(o, "fig-comm-by-rank")
    o.offline()


@pytest.fixture(scope="module")
def big_site(tmp_path_factory) -> Path:
    """80 ranks on 10 hosts, 2 stages, 3 steps: strips instead of bars, a host-level communication graph."""
    from reportgen.synth import generate_run
    tmp = tmp_path_factory.mktemp("big")
    run = generate_run(tmp / "run", ranks=80, steps=3, stages=2, inject=["slow-rank:13:compute:1.3"])
    assert main([str(run), "-o", str(tmp / "site"), "-q", "--lang", "en"]) == 0
    return tmp / "site"


def test_step_selector_moves_the_strips_stage_medians_above_64_ranks(browser, big_site):
    rows = _step_table(big_site, "2")
    o = open_page(browser, big_site / "cluster" / "step-trace.html", ("fig-step-total",))
    o.select("#step-chart-select", "2", "fig-step-total")
    medians = {m["datum"]["stage"]: m["datum"]["median"] for m in _marks(o, "fig-step-total", "median")}
    assert set(medians) == {"stage 0", "stage 1"}
    for stage in (0, 1):
        assert medians[f"stage {stage}"] == pytest.approx(
            _median([x["total"] for x in rows.values() if x["pp_stage"] == stage]), abs=1e-3)
    assert "Step 2 time (ms)" in _texts(o, "fig-step-total")
    o.offline()


# ---- above 64 ranks: hosts picked in the host-level graph drill down to their devices -------------------------

def _host_xy(o: Opened, host: str) -> tuple[float, float]:
    return o.page.evaluate("""h => { const v = document.getElementById('fig-comm-graph')._msrView;
      const n = v.data('nodes').find(n => n.id === h); return [n.x, n.y]; }""", host)


def test_brushing_hosts_above_64_ranks_draws_their_devices_matrix(browser, big_site):
    o = open_page(browser, big_site / "cluster" / "communication.html",
                  ("fig-comm-graph", "fig-comm-drill", "fig-comm-link-ops"))
    nodes = {n["id"]: n for n in o.data("fig-comm-graph", "nodes")}
    assert len(nodes) == 10 and all(len(n["members"].split(",")) == 8 for n in nodes.values())  # 80 ranks
    cells = o.data("fig-comm-drill", "cells")
    assert cells and {"src", "dst", "time_ms", "size_mb", "transport"} <= set(cells[0])
    assert not [m for m in _marks(o, "fig-comm-drill", "src") if m["mark"] == "rect"]  # nothing until hosts picked
    # brush the two hosts on the upper right of the circle of hosts
    right = sorted(h for h, n in nodes.items() if n["x"] > 0.5 and n["y"] > -0.01)  # node000 (1, 0) and node001
    assert len(right) == 2
    xs = [nodes[h]["x"] for h in right]
    ys = [nodes[h]["y"] for h in right]
    _brush(o, "fig-comm-graph", min(xs) - 0.08, max(xs) + 0.08, min(ys) - 0.08, max(ys) + 0.08)
    picked = [r for h in sorted(right) for r in nodes[h]["members"].split(",")]
    o.page.wait_for_selector(f"#fig-comm-drill[data-selected='{','.join(picked)}']", timeout=10000)
    within = [c for c in cells if str(c["src"]) in picked and str(c["dst"]) in picked]
    rows = o.page.evaluate("() => document.getElementById('fig-comm-drill')._msrView.scale('y').domain()")
    assert sorted(rows, key=int) == sorted({str(c["src"]) for c in within}, key=int)
    labels = o.page.evaluate("""() => Array.from(document.querySelectorAll('#fig-comm-drill svg text'))
      .map(t => t.textContent).filter(t => t.indexOf(' ms · ') > 0)""")
    assert len(labels) == len(within)
    c0 = within[0]  # the label is the link's own time and size (3 significant digits)
    assert f"{c0['time_ms']:.3g} ms · {c0['size_mb']:.3g} MB" in labels
    assert o.page.inner_text("#comm-drill-selection").startswith(f"2 host(s) picked ({', '.join(sorted(right))})")
    # the box plots keep the links that start or end on the picked hosts' devices
    ops = o.data("fig-comm-link-ops", "ops")
    links = o.page.evaluate("() => document.getElementById('fig-comm-link-ops')._msrView.scale('x').domain()")
    assert links and set(links) == {r["link"] for r in ops if r["src"] in picked or r["dst"] in picked}
    o.shot("communication-hosts-brushed")
    # every host brushed: 80 devices are over the cap of 64, the first 8 hosts are drawn and the page says so
    _brush(o, "fig-comm-graph", -1.1, 1.1, -1.1, 1.1)
    o.page.wait_for_function("() => (document.getElementById('fig-comm-drill').getAttribute('data-selected') || '')"
                             ".split(',').length === 64", timeout=10000)
    text = o.page.inner_text("#comm-drill-selection")
    assert text.startswith("10 hosts picked: the first 8") and "64 devices (at most 64 at once)" in text
    # a click on a host picks that host alone
    o.page.locator("#fig-comm-graph svg").first.dblclick()
    o.page.wait_for_timeout(300)
    _click_host(o, right[0], nodes[right[0]]["members"])
    assert o.page.get_attribute("#fig-comm-graph", "data-hosts") == right[0]
    o.offline()
    # a drill-down cell opens the sending rank's page
    with o.page.expect_navigation():
        _click_drill_cell(o, 1)
    assert o.page.url.endswith("ranks/rank-1.html")


def _click_host(o: Opened, host: str, members: str) -> None:
    """Click a host of the host-level graph: its devices fill the drill-down."""
    o.page.locator("#fig-comm-graph").scroll_into_view_if_needed()
    box = o.page.locator("#fig-comm-graph svg").first.bounding_box()
    pt = o.page.evaluate("""h => { const v = document.getElementById('fig-comm-graph')._msrView, o = v.origin(),
      p = v.padding(), n = v.data('nodes').find(n => n.id === h);
      return [o[0] + p.left + v.scale('x')(n.x), o[1] + p.top + v.scale('y')(n.y)]; }""", host)
    o.page.mouse.click(box["x"] + pt[0], box["y"] + pt[1])
    o.page.wait_for_selector(f"#fig-comm-drill[data-selected='{members}']", timeout=10000)


def _click_drill_cell(o: Opened, src: int) -> None:
    """Click a drawn cell of the drill-down whose sending rank is `src`."""
    o.page.locator("#fig-comm-drill").scroll_into_view_if_needed()
    box = o.page.locator("#fig-comm-drill svg").first.bounding_box()
    cell = o.page.evaluate("""s => { const v = document.getElementById('fig-comm-drill')._msrView, o = v.origin(),
      p = v.padding(), x = v.scale('x'), y = v.scale('y');
      const c = v.data('cells').find(c => c.src === s && v.signal('sel').indexOf('' + c.dst) >= 0);
      return [o[0] + p.left + x('' + c.dst) + x.bandwidth() / 2, o[1] + p.top + y('' + c.src) + y.bandwidth() / 2]; }""",
                           src)
    o.page.mouse.click(box["x"] + cell[0], box["y"] + cell[1])


def test_a_drill_down_cell_opens_the_rank_in_the_single_file_above_64_ranks(browser, big_site, tmp_path):
    """--single-file: rank pages are the compact rank view; a drill-down cell switches it to the sending rank
    (the link of the rank table's row, `#rank-page-N`), for a rank whose whole page is carried or not."""
    out = tmp_path / "one.html"
    assert main([str(big_site.parent / "run"), "-o", str(out), "--single-file", "-q", "--lang", "en"]) == 0
    o = open_page(browser, out, ("fig-comm-graph", "fig-comm-drill"))
    nodes = {n["id"]: n for n in o.data("fig-comm-graph", "nodes")}
    for rank in (13, 9):  # 13: the slow rank (its page carried whole); 9: a compact-view-only rank
        host = next(h for h, n in nodes.items() if str(rank) in n["members"].split(","))
        _click_host(o, host, nodes[host]["members"])
        assert o.page.get_attribute(f"#comm-rank-{rank} a", "href") == f"#rank-page-{rank}"
        _click_drill_cell(o, rank)
        o.page.wait_for_function("r => location.hash === '#rank-page-' + r", arg=rank, timeout=10000)
        assert o.page.input_value("#rank-select") == str(rank)
        o.page.wait_for_function("() => document.getElementById('rank-view').textContent.length > 0", timeout=10000)
    o.shot("single-file-drill-click")
    o.offline()


def test_step_selector_drives_the_wait_strip_above_64_ranks(browser, big_site):
    o = open_page(browser, big_site / "cluster" / "communication.html", ("fig-comm-wait",))
    avg = {r["rank"]: r["value"] for r in o.data("fig-comm-wait", "ranks")}
    spec = o.page.eval_on_selector("#fig-comm-wait script.step-data", "s => JSON.parse(s.textContent)")
    o.select("#comm-step-select", "2", "fig-comm-wait")
    shown = {r["rank"]: r for r in o.data("fig-comm-wait", "ranks")}
    fields = spec["fields"]["ranks"]
    step2 = {row["rank"]: row for row in (dict(zip(fields, v)) for v in spec["steps"]["2"]["ranks"])}
    assert set(shown) == set(step2) == set(avg) and len(avg) == 80
    assert all(shown[r]["value"] == step2[r]["value"] for r in avg)
    assert any(shown[r]["value"] != avg[r] for r in avg)
    assert shown[13]["href"].endswith("ranks/rank-13.html")  # links kept from the average rows
    medians = {m["datum"]["stage"]: m["datum"]["median"] for m in _marks(o, "fig-comm-wait", "median")}
    for stage in ("stage 0", "stage 1"):
        assert medians[stage] == pytest.approx(_median([x["value"] for x in step2.values() if x["stage"] == stage]),
                                               abs=1e-4)
    assert "Wait in step 2 (ms)" in _texts(o, "fig-comm-wait")
    o.offline()


# ---- the small things (issue 34): captions follow the step, missing cells, legends, labels, hints ----------------

ITEMS_JS = """([f, key]) => { const out = [];
  const walk = n => { if (!n) return;
    if (n.marktype && n.marktype !== 'group') {
      (n.items || []).forEach(i => { if (i.datum && key in i.datum && i.bounds) out.push({datum: Object.assign({},
        i.datum), mark: n.marktype, shape: i.shape, fill: i.fill, y1: i.bounds.y1, y2: i.bounds.y2}); });
      return; }
    (n.items || []).forEach(walk); };
  walk(document.getElementById(f)._msrView.scenegraph().root); return out; }"""


def _caption(o: Opened, fig: str) -> str:
    return o.page.inner_text(f"#{fig} figcaption")


def test_step_captions_name_the_step_and_missing_heatmap_cells_are_grey_with_a_legend(browser, example_site):
    """Before: a chosen step redrew the charts but the captions still said "Average"; the cells of rank 11 (its
    step_trace_time.csv ends after 6 rows) were blank white with no legend entry."""
    o = open_page(browser, example_site / "cluster" / "step-trace.html", ("fig-step-total", "fig-breakdown",
                                                                          "fig-heatmap"))
    avg_total, avg_breakdown = _caption(o, "fig-step-total"), _caption(o, "fig-breakdown")
    assert avg_total.startswith("Average step time per rank") and "average" in avg_breakdown
    o.select("#step-select", "7", "fig-step-total")
    o.page.wait_for_selector("#fig-breakdown[data-step='7']", timeout=10000)
    assert _caption(o, "fig-step-total").startswith("Step 7: the time of each rank in that step")
    assert "verage" not in _caption(o, "fig-step-total")
    assert _caption(o, "fig-breakdown") == "Where each rank's time goes in step 7."
    o.select("#step-select", "avg", "fig-step-total")
    assert (_caption(o, "fig-step-total"), _caption(o, "fig-breakdown")) == (avg_total, avg_breakdown)
    # every (rank, step) of the grid is drawn: a value from the step table, or a grey "no data" cell
    steps = [str(s) for s in range(1, 13)]
    have = {(r, s) for s in steps for r, row in _step_table(example_site, s).items() if row.get("total") is not None}
    ranks = {r for r, _ in have}
    cells = [c for c in _marks(o, "fig-heatmap", "step_order") if c["mark"] == "rect"]
    drawn = {(int(c["datum"]["ranks"]), c["datum"]["steps"]) for c in cells if c["datum"].get("missing") is None}
    grey = {(int(c["datum"]["ranks"]), c["datum"]["steps"]) for c in cells if c["datum"].get("missing")}
    assert drawn == have and grey == {(r, s) for r in ranks for s in steps} - have
    assert grey and {r for r, _ in grey} == {11}
    assert "no data" in _texts(o, "fig-heatmap")
    o.offline()


def test_comm_graph_labels_clear_the_circles_and_the_matrix_legend_names_the_metric(browser, example_site):
    o = open_page(browser, example_site / "cluster" / "communication.html", ("fig-comm-graph", "fig-comm-matrix"))
    items = o.page.evaluate(ITEMS_JS, ["fig-comm-graph", "href"])  # the nodes' items (the legends' have no href)
    circles = {i["datum"]["label"]: i for i in items if i["mark"] == "symbol"}
    labels = [i for i in items if i["mark"] == "text"]
    assert len(labels) == len(circles) == 16
    for t in labels:  # each label ends above its own circle (before: drawn across it)
        assert t["y2"] <= circles[t["datum"]["label"]]["y1"] + 0.5, t
    texts = _texts(o, "fig-comm-matrix")
    assert "Bandwidth (GB/s)" in texts and "value" not in texts
    for option, title in (("time_ms", "Time (ms)"), ("size_mb", "Size (MB)")):
        o.page.select_option("#fig-comm-matrix select >> nth=0", option)
        o.page.wait_for_function("([f, t]) => Array.from(document.querySelectorAll('#' + f + ' svg text'))"
                                 ".some(x => x.textContent === t)", arg=["fig-comm-matrix", title], timeout=10000)
        assert "Bandwidth (GB/s)" not in _texts(o, "fig-comm-matrix")
    o.offline()


def test_overview_legend_and_execution_marks(browser, example_site):
    """The phase legend is not cut ("Communication (not overl…"); the time overview's caption speaks of marks only
    as they are drawn (before: "red points" that could not be told from the red wait line)."""
    o = open_page(browser, example_site / "index.html", ("fig-breakdown",))
    legend = _texts(o, "fig-breakdown")
    assert [t for t in legend if t.startswith("Communication (not overlapped")] and not [
        t for t in legend if t.endswith("…")], legend
    o.offline()
    o = open_page(browser, example_site / "cluster" / "execution.html", ("fig-time-overview",))
    points = o.data("fig-time-overview", "points")
    assert points
    drawn = [i for i in o.page.evaluate(ITEMS_JS, ["fig-time-overview", "href"]) if i["mark"] == "symbol"]
    assert len(drawn) == len(points) and {(d["shape"], d["fill"]) for d in drawn} == {("diamond", "#111")}
    cap = _caption(o, "fig-time-overview")
    assert "Black diamonds are the steps with an execution view" in cap and "Red points" not in cap
    o.offline()


def test_host_drill_down_shows_a_hint_until_hosts_are_picked(browser, big_site):
    """Before: at 80+ ranks an empty plot with a "NaN" legend stood under the hint line until a host was picked."""
    o = open_page(browser, big_site / "cluster" / "communication.html", ("fig-comm-graph", "fig-comm-drill"))
    assert not o.page.is_visible("#fig-comm-drill")
    assert o.page.inner_text("#comm-drill-selection").startswith("No host picked yet")
    box = o.page.locator("#fig-comm-drill").bounding_box()
    assert box is None or box["height"] == 0  # the empty plot and its "NaN" legend take no room and show nothing
    nodes = {n["id"]: n for n in o.data("fig-comm-graph", "nodes")}
    host = sorted(nodes)[0]
    _click_host(o, host, nodes[host]["members"])
    o.page.wait_for_selector("#fig-comm-drill", state="visible", timeout=10000)
    assert o.page.locator("#fig-comm-drill svg").first.bounding_box()["width"] > 300  # laid out at full width
    # a brush cleared with a double-click folds it away again
    n = nodes[host]
    _brush(o, "fig-comm-graph", n["x"] - 0.08, n["x"] + 0.08, n["y"] - 0.08, n["y"] + 0.08)
    o.page.wait_for_timeout(300)
    o.page.locator("#fig-comm-graph svg").first.dblclick()
    o.page.wait_for_selector("#fig-comm-drill", state="hidden", timeout=10000)
    assert o.page.inner_text("#comm-drill-selection").startswith("No host picked yet")
    o.offline()
