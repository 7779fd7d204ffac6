"""Open the example report in headless Chromium with the network off: every chart draws, nothing is fetched."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from reportgen.cli import main

pytestmark = pytest.mark.browser

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND", "--virtual-time-budget=15000"]


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("CI"):
        pytest.fail("Chromium is not installed; .ci/run must install it (apt-get install -y chromium)")
    pytest.skip("Chromium not installed")


def render(page: Path) -> BeautifulSoup:
    with tempfile.TemporaryDirectory() as profile:
        r = subprocess.run([_chromium(), *FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
                           capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return BeautifulSoup(r.stdout, "html.parser")


def assert_charts_drawn(dom: BeautifulSoup, page: Path, minimum: int = 1) -> None:
    figs = dom.select("figure.chart")
    assert len(figs) >= minimum, page
    for fig in figs:
        if fig.get("style", "").replace(" ", "") == "display:none;":
            continue
        assert fig.get("data-rendered") == "true", f"{page}: {fig.get('id')} not drawn: {fig.get('data-error')}"
        marks = fig.select("svg path, svg rect, svg line, canvas")
        assert marks, f"{page}: {fig.get('id')} has no marks"
    assert dom.body.get("data-network-requests") == "0", page


def run_probe(src: Path, js: str) -> BeautifulSoup:
    """Render `src` with `js` run after load (driving the page's own controls); return the resulting DOM."""
    probe = src.with_name("probe-" + src.name)
    script = src.with_name("probe-" + src.stem + ".js")  # a file beside the page: the CSP forbids inline scripts
    script.write_text("window.addEventListener('load', function () {\n" + js
                      + "\n  document.body.setAttribute('data-probe', 'done');\n});\n")
    probe.write_text(src.read_text().replace("</body>", f'<script src="{script.name}"></script></body>'))
    try:
        dom = render(probe)
    finally:
        probe.unlink()
        script.unlink()
    assert dom.body.get("data-probe") == "done"
    return dom


def test_site_pages_render_offline(example_site):
    for rel, minimum in (("index.html", 2), ("cluster/step-trace.html", 3), ("ranks/rank-5.html", 1)):
        page = example_site / rel
        assert_charts_drawn(render(page), page, minimum)


def test_single_file_renders_offline(tmp_path, synth_8):
    out = tmp_path / "one.html"
    assert main([str(synth_8), "-o", str(out), "--single-file", "-q"]) == 0
    dom = render(out)
    assert_charts_drawn(dom, out, 3)
    # the rank selector filled the rank view from the embedded JSON
    assert dom.select("#rank-view table tbody tr")


def test_step_selector_and_sorting_work(example_site, tmp_path):
    # Drive the page's own JS: choose step 3, then sort by the first phase column, and dump the result.
    src = example_site / "cluster" / "step-trace.html"
    dom = run_probe(src, """
  var sel = document.getElementById('step-select'); sel.value = '3'; sel.dispatchEvent(new Event('change'));
  var th = document.querySelectorAll('#step-table thead th')[4]; th.click(); th.click();""")
    rows = dom.select("#step-table tbody tr")
    assert len(rows) == 16
    vals = [float(r.select("td")[4]["data-v"]) for r in rows]
    assert vals == sorted(vals, reverse=True)  # second click: descending
    assert rows[0]["id"] == "rank-5"  # the slow-computing rank tops the Computing column


def test_a_cluster_table_without_per_cell_keys_sorts_numbers_by_value(example_site):
    """The communication page's rank table aligns its numbers by its class (`n3`): no `class="num"` and no
    `data-v` per cell. A click on a number column still sorts by the number the cell shows, not by its text."""
    src = example_site / "cluster" / "communication.html"
    table = BeautifulSoup(src.read_text(encoding="utf-8"), "html.parser").select_one("#comm-rank-table")
    assert "n3" in table["class"]
    rows = [[td for td in tr.select("td")] for tr in table.select("tbody tr")]
    assert rows and not any(td.has_attr("data-v") or "num" in (td.get("class") or []) for r in rows for td in r[2:])

    def value(td) -> float:
        return float(td.get_text().replace(",", "").replace("%", ""))
    col = 3  # Transit (ms)
    # one cell of the last row set to 1,234.500: the largest number, whose text sorts before the others ("1" < "2")
    before = [value(r[col]) for r in rows[:-1]] + [1234.5]
    dom = run_probe(src, f"""
  var rows = document.querySelectorAll('#comm-rank-table tbody tr');
  rows[rows.length - 1].cells[{col}].textContent = '1,234.500';
  var th = document.querySelectorAll('#comm-rank-table thead th')[{col}]; th.click(); th.click();""")
    after = [value(tr.select("td")[col]) for tr in dom.select("#comm-rank-table tbody tr")]
    assert after == sorted(before, reverse=True) and after[0] == 1234.5  # second click: descending, by value
    assert after == sorted(before, reverse=True)  # second click: descending, by value


def test_communication_page_draws_and_filters(example_site):
    src = example_site / "cluster" / "communication.html"
    assert_charts_drawn(render(src), src, 5)
    # drive the link filters: transport HCCS and "slow only" leave exactly the injected slow link
    dom = run_probe(src, """
  var t = document.querySelector("select[data-colfilter='comm-link-table']"); t.value = 'HCCS';
  t.dispatchEvent(new Event('change'));
  var s = document.querySelector("[data-slowonly='comm-link-table']"); s.checked = true;
  s.dispatchEvent(new Event('change'));""")
    visible = [r for r in dom.select("#comm-link-table tbody tr") if "display: none" not in r.get("style", "")]
    assert [(r.select("td")[0].text, r.select("td")[1].text) for r in visible] == [("8", "9")]


def test_overlap_page_draws_and_filters_by_stage(example_site):
    src = example_site / "cluster" / "overlap.html"
    assert_charts_drawn(render(src), src, 4)
    dom = run_probe(src, """
  var t = document.querySelector("select[data-colfilter='overlap-rank-table']"); t.value = '1';
  t.dispatchEvent(new Event('change'));""")
    visible = [r for r in dom.select("#overlap-rank-table tbody tr") if "display: none" not in r.get("style", "")]
    assert [int(r.select("td")[0].text) for r in visible] == list(range(8, 16))


def test_resource_page_and_rank_detail_draw_offline(example_site):
    page = example_site / "cluster" / "resources.html"
    dom = render(page)
    assert_charts_drawn(dom, page, minimum=2)  # memory heatmap, operator spread
    ids = {f.get("id") for f in dom.select("figure.chart")}
    assert {"fig-memory-heatmap", "fig-op-spread"} <= ids
    rank = example_site / "ranks" / "rank-5.html"
    dom = render(rank)
    assert_charts_drawn(dom, rank, minimum=3)  # steps, operator types, memory curve
    assert dom.select_one("#fig-rank-5-optypes svg") is not None


def test_execution_and_strategy_pages_draw_offline(example_site, tmp_path):
    page = example_site / "cluster" / "execution.html"
    dom = render(page)
    assert_charts_drawn(dom, page, minimum=2)  # time overview, Marey view
    assert dom.select_one("#fig-time-overview svg") is not None
    assert len(dom.select("#marey-devices-table tbody tr")) == 16
    from reportgen.synth import generate_run
    run = generate_run(tmp_path / "mi", layout="mindinsight", ranks=8, steps=3, stages=2, seed=2)
    out = tmp_path / "r"
    assert main([str(run), "-o", str(out), "-q"]) == 0
    src = out / "cluster" / "strategy.html"
    dom = run_probe(src, """
  var b = document.querySelector("svg.strategy-graph .block"); b.dispatchEvent(new MouseEvent('click'));""")
    opened = [d for d in dom.select(".block-detail") if not d.has_attr("hidden")]
    assert len(opened) == 1 and opened[0].select("tbody tr")
    assert dom.body.get("data-network-requests") == "0"
