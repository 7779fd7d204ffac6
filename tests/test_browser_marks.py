"""Marks and table downloads in Chromium (issue 29): the drawn operator-spread view paints exactly the rank the
slow-rank finding names, and every table's CSV button saves every row with the values behind the rounded cells."""

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


def test_csv_button_saves_every_row_at_full_precision(browser, example_site):  # noqa: F811
    summary = json.loads((example_site / "summary.json").read_text())["metrics"]["step_trace"]["per_rank"]
    page, problems = _open(browser, example_site / "cluster" / "step-trace.html")
    try:
        # filter the table down to one row: the CSV still holds every rank
        page.fill("input[data-filter='step-table']", "node001")
        button = page.locator("#step-table").locator("xpath=preceding::button[contains(@class,'csv-save')][1]")
        with page.expect_download() as dl:
            button.click()
        text = open(dl.value.path(), encoding="utf-8-sig").read()
        assert dl.value.suggested_filename == "step-trace-step-table.csv"
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
        # every table of the page has its button
        assert page.locator("button.csv-save").count() == page.locator("main table:has(tbody tr)").count()
        assert not problems, problems
    finally:
        page.close()
