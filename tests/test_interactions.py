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
    o.select("#step-select", "3", "fig-step-total")
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
    assert all(r["end"] == pytest.approx(r["start"] + r["dur"], abs=1e-3) for r in ops)
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
      const mid = r => x((Math.max(r.start, d[0]) + Math.min(r.end, d[1])) / 2);
      const o = v.data('ops').filter(r => r.step === s && r.end > d[0] && r.start < d[1] && mid(r) < 0.6 * w)
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
