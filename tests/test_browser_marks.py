"""Marks and table downloads in Chromium (issue 29): the drawn operator-spread view paints exactly the rank the
slow-rank finding names, and every table has one CSV control: the file the report wrote (every row) or, without one,
the in-page button, which saves every row with the values behind the rounded cells."""

from __future__ import annotations

import csv
import io
import json

import pytest

from test_browser_csp import _open  # (the browser fixture is in conftest.py)

pytestmark = pytest.mark.browser


def test_drawn_operator_spread_paints_the_named_slow_rank(browser, example_site):  # noqa: F811
    page, problems = _open(browser, example_site / "cluster" / "resources.html", shot="resources-marks")
    try:
        page.wait_for_selector("#fig-op-spread[data-rendered='true']", timeout=20000)
        rows = page.evaluate("document.getElementById('fig-op-spread')._msrView.data('spread')")
        assert rows and {r["rank"] for r in rows if r["slow"]} == {5}
        assert not problems, problems
    finally:
        page.close()


def _check_step_csv(text: str, summary: dict) -> None:
    """Every rank of the step table, the computing time at full precision (more digits than the cell shows)."""
    rows = list(csv.reader(io.StringIO(text)))
    head, body = rows[0], rows[1:]
    assert head[0].startswith("Rank") and len(body) == 16
    col = next(i for i, h in enumerate(head) if h.startswith("Computing"))
    by_rank = {int(r[0]): r for r in body}
    for rank in (5, 12):
        want = summary[str(rank)]["computing_ms"]
        got = float(by_rank[rank][col])
        assert got == pytest.approx(want, rel=1e-6)
        assert len(by_rank[rank][col]) > len(f"{want:.3f}")  # more digits than the cell shows


def test_csv_button_saves_every_row_at_full_precision(browser, example_site):  # noqa: F811
    summary = json.loads((example_site / "summary.json").read_text())["metrics"]["step_trace"]["per_rank"]
    path = example_site / "cluster" / "step-trace.html"
    page, problems = _open(browser, path)
    try:
        # the step table has the report's CSV file: that link is its one CSV control, it says it holds every row,
        # and the file does (at full precision)
        link = page.locator("a.csv-download[data-csv-for='step-table']")
        assert link.count() == 1 and link.inner_text() == "CSV (all 16 rows)"
        _check_step_csv((path.parent / link.get_attribute("href")).read_text(encoding="utf-8-sig"), summary)
        assert page.locator("#step-table").get_attribute("data-csv") == "file"
        # without a file (the single file has none) the same table gets the in-page button, which saves every row
        # (filtered or not) at full precision under the page's and table's name
        page.evaluate("""() => { document.querySelectorAll("a.csv-download").forEach(a => a.remove());
                                 document.getElementById("step-table").removeAttribute("data-csv");
                                 window.msrCsv.init(); }""")
        page.fill("input[data-filter='step-table']", "node001")
        button = page.locator("#step-table").locator("xpath=preceding::button[contains(@class,'csv-save')][1]")
        assert button.locator("xpath=following::table[1]").get_attribute("id") == "step-table"
        with page.expect_download() as dl:
            button.click()
        assert dl.value.suggested_filename == "step-trace-step-table.csv"
        _check_step_csv(open(dl.value.path(), encoding="utf-8-sig").read(), summary)
        assert not problems, problems
    finally:
        page.close()


_CSV_CONTROLS = """() => {
  const named = Array.from(document.querySelectorAll("a.csv-download")).map(a => a.getAttribute("data-csv-for") || "");
  const bare = Array.from(document.querySelectorAll("main a[href]")).filter(a => /\\.csv(\\.gz)?$/.test(a.getAttribute("href"))
      && !a.classList.contains("csv-download")).length;
  const tables = Array.from(document.querySelectorAll("main table")).filter(t => t.tBodies.length && t.tBodies[0].rows.length);
  return {bare: bare, unnamed: named.filter(id => !id || !document.getElementById(id)).length,
          tables: tables.map(t => {
            const anchor = t.parentElement.classList.contains("scroll") ? t.parentElement : t;
            const prev = anchor.previousElementSibling;
            return [t.id, named.filter(id => id && id === t.id).length,
                    prev && prev.matches("button.csv-save") ? 1 : 0];
          })};
}"""


def test_every_table_has_one_csv_control(browser, example_site):  # noqa: F811
    """A table with the report's CSV file has that link and no in-page button; every other table has the button;
    no CSV link lacks the table it is for (it would sit beside that table's button)."""
    pages = sorted(p for p in example_site.rglob("*.html") if "ranks" not in p.parts) + \
        [example_site / "ranks" / "rank-0.html"]
    seen_file = seen_button = 0
    for path in pages:
        page, problems = _open(browser, path)
        try:
            got = page.evaluate(_CSV_CONTROLS)
            assert got["bare"] == 0 and got["unnamed"] == 0, (path.name, got)
            for table_id, links, buttons in got["tables"]:
                assert links + buttons == 1, (path.name, table_id, links, buttons)
                seen_file += links
                seen_button += buttons
            assert not problems, problems
        finally:
            page.close()
    assert seen_file >= 10 and seen_button >= 10  # both kinds are exercised
