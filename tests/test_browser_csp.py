"""Every page kind (report, compare, trend; site and single file) opened in Chromium through playwright: no
Content-Security-Policy violation and no script error in the console, and the stylesheet is applied (issue 29:
the compare and trend pages' own policy blocked their gate box and colours)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reportgen.cli import main
from reportgen.synth import generate_run

pytestmark = pytest.mark.browser
SHOTS = Path(os.environ["MSREPORT_SHOTS"]) if os.environ.get("MSREPORT_SHOTS") else None


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """One small report (site and single file), one comparison and one trend (site and single file)."""
    root = tmp_path_factory.mktemp("csp")
    base = generate_run(root / "base", ranks=8, steps=4, stages=2, seed=3)
    slow = generate_run(root / "slow", ranks=8, steps=4, stages=2, seed=3, inject=["slow-rank:5:compute:1.35"])
    out = {}
    assert main([str(base), "-o", str(root / "rep-base"), "-q", "--lang", "en"]) == 0
    assert main([str(slow), "-o", str(root / "rep-slow"), "-q", "--lang", "en"]) == 0
    assert main([str(slow), "-o", str(root / "one.html"), "--single-file", "-q", "--lang", "en"]) == 0
    out["report"], out["report-single"] = root / "rep-slow", root / "one.html"
    args = [str(root / "rep-base"), str(root / "rep-slow" / "summary.json"), "--fail-on-regression", "5", "-q",
            "--lang", "en"]
    assert main(["compare", *args, "-o", str(root / "cmp")]) == 3
    assert main(["compare", *args, "-o", str(root / "cmp.html"), "--single-file"]) == 3
    out["compare"], out["compare-single"] = root / "cmp" / "index.html", root / "cmp.html"
    sums = [str(root / "rep-base"), str(root / "rep-slow")]
    assert main(["trend", *sums, "-o", str(root / "trend"), "-q", "--lang", "en"]) == 0
    assert main(["trend", *sums, "-o", str(root / "trend.html"), "--single-file", "-q", "--lang", "en"]) == 0
    out["trend"], out["trend-single"] = root / "trend" / "index.html", root / "trend.html"
    # a folder of two runs: the landing page (runs.html, its own policy) and a run's overview below it
    for name, layout in (("a", "ascend"), ("b", "mindinsight")):
        generate_run(root / "multi" / name, layout=layout, ranks=2, steps=3)
    assert main([str(root / "multi"), "-o", str(root / "runs"), "-q", "--lang", "en"]) == 0
    out["runs"] = root / "runs" / "index.html"
    return out


def _open(browser, path: Path, shot: str = ""):
    """(page, console problems): CSP violations, console errors and uncaught exceptions while loading `path`."""
    problems: list[str] = []
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
            if m.type == "error" or "Content Security Policy" in m.text or "Refused to" in m.text else None)
    page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file://") else route.abort())
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    page.wait_for_timeout(300)  # Vega draws after load; its violations would come then
    if SHOTS and shot:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{shot}.png"), full_page=True)
    return page, problems


def _report_pages(site: Path) -> list[Path]:
    pages = [site / "index.html", *sorted((site / "cluster").glob("*.html"))]
    ranks = sorted((site / "ranks").glob("rank-*.html"))
    return pages + ranks[:1]


def test_report_site_pages_have_no_csp_violation(browser, built):
    pages = _report_pages(built["report"])
    assert len(pages) >= 6
    for p in pages:
        page, problems = _open(browser, p)
        assert not problems, (p.name, problems)
        page.close()


def test_landing_page_of_several_runs_has_no_csp_violation(browser, built):
    landing = built["runs"]
    page, problems = _open(browser, landing)
    try:
        assert not problems, problems
        links = page.eval_on_selector_all("a[href$='index.html']", "els => els.map(e => e.getAttribute('href'))")
        assert len(links) >= 2
    finally:
        page.close()
    page, problems = _open(browser, (landing.parent / links[0]).resolve())
    page.close()
    assert not problems, problems


@pytest.mark.parametrize("kind", ["report-single", "compare", "compare-single", "trend", "trend-single"])
def test_page_kind_has_no_csp_violation_and_its_styles_apply(browser, built, kind):
    page, problems = _open(browser, built[kind], shot=kind)
    try:
        assert not problems, problems
        # the stylesheet applied: the header bar has the report's background, not the browser default
        assert page.evaluate("getComputedStyle(document.querySelector('header.top')).display") != "inline"
        if kind.startswith("compare"):
            gate = page.locator("#gate")
            assert "failed" in gate.get_attribute("class")
            # the gate box's red background and border come from report.css (blocked before: transparent)
            bg = page.evaluate("getComputedStyle(document.getElementById('gate')).backgroundColor")
            assert bg == "rgb(253, 236, 234)", bg
            slower = page.locator("td.st-slower").first
            assert slower.evaluate("e => getComputedStyle(e).color") == "rgb(198, 40, 40)"
        if kind.startswith("trend"):
            cell = page.locator("td.present").first
            if cell.count():
                assert cell.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(247, 198, 198)"
    finally:
        page.close()
