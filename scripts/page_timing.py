"""Time how fast report pages paint and draw their charts in headless Chromium (issue 17's browser goals).

    python scripts/page_timing.py OUT                      # every cluster page + a few rank pages of a site
    python scripts/page_timing.py OUT/index.html OUT/ranks/rank-341.html
    python scripts/page_timing.py report.html              # a single-file report
    python scripts/page_timing.py OUT --screenshots /tmp/shots --json timings.json

For each page: first paint and first contentful paint (Performance API), DOMContentLoaded, and the time until
every Vega chart (`figure.chart`) is drawn (`data-rendered`) or failed (`data-error`), measured from navigation
start. Needs the `playwright` Python package and a Chromium (default /usr/bin/chromium). Goals: first paint
<= 1 s and all charts drawn <= 3 s per page; the script prints the numbers and exits 1 when a page misses them.
Numbers go into closing notes, not into unit tests (the machine's load changes them).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

PAINT_GOAL_MS = 1000
DRAW_GOAL_MS = 3000

# every chart figure is drawn (or failed); the single file's rank switcher draws on demand, so it is not waited for
_CHARTS_DONE = """() => {
  const figs = Array.from(document.querySelectorAll('figure.chart')).filter(f => !f.hasAttribute('data-rank-switch'));
  return figs.every(f => f.hasAttribute('data-rendered') || f.hasAttribute('data-error'));
}"""

_METRICS = """() => {
  const nav = performance.getEntriesByType('navigation')[0] || {};
  const paint = {};
  performance.getEntriesByType('paint').forEach(p => { paint[p.name] = p.startTime; });
  const figs = Array.from(document.querySelectorAll('figure.chart')).filter(f => !f.hasAttribute('data-rank-switch'));
  return {
    first_paint_ms: paint['first-paint'] ?? null,
    first_contentful_paint_ms: paint['first-contentful-paint'] ?? null,
    dom_content_loaded_ms: nav.domContentLoadedEventEnd ?? null,
    load_ms: nav.loadEventEnd ?? null,
    charts: figs.length,
    charts_drawn: figs.filter(f => f.hasAttribute('data-rendered')).length,
    chart_errors: figs.filter(f => f.hasAttribute('data-error')).map(f => f.id + ': ' + f.getAttribute('data-error')),
    bytes: document.documentElement.outerHTML.length,
  };
}"""


def default_pages(site: Path, ranks: list[int]) -> list[Path]:
    """Every cluster page of a site (index, cluster/*.html, rules) and the given rank pages."""
    pages = [site / "index.html", *sorted((site / "cluster").glob("*.html")), site / "rules.html"]
    pages += [site / "ranks" / f"rank-{r}.html" for r in ranks]
    return [p for p in pages if p.is_file()]


def measure(pages: list[Path], executable: str, timeout_s: float, shots: Path | None,
            width: int = 1300, height: int = 2200) -> list[dict]:
    from playwright.sync_api import sync_playwright

    out = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, headless=True,
                                     args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                           "--proxy-server=127.0.0.1:9"])
        for page_path in pages:
            ctx = browser.new_context(viewport={"width": width, "height": 900})
            page = ctx.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            t0 = time.perf_counter()
            page.goto(page_path.resolve().as_uri(), wait_until="load", timeout=timeout_s * 1000)
            timed_out = False
            try:
                page.wait_for_function(_CHARTS_DONE, timeout=timeout_s * 1000, polling=20)
            except Exception:  # noqa: BLE001 - a page whose charts never finish is reported, not fatal
                timed_out = True
            # charts done, measured on the page's own clock (navigation start = 0)
            drawn_ms = page.evaluate("() => performance.now()") if not timed_out else None
            m = page.evaluate(_METRICS)
            m.update(page=str(page_path), charts_done_ms=drawn_ms, wall_s=round(time.perf_counter() - t0, 3),
                     timed_out=timed_out, js_errors=errors)
            if shots is not None:
                shots.mkdir(parents=True, exist_ok=True)
                page.set_viewport_size({"width": width, "height": height})
                name = "_".join(page_path.resolve().parts[-2:]).replace(".html", ".png")
                page.screenshot(path=str(shots / name), full_page=False)
                m["screenshot"] = str(shots / name)
            out.append(m)
            ctx.close()
        browser.close()
    return out


def _fmt(v) -> str:
    return "—" if v is None else f"{v:8.0f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("targets", nargs="+", type=Path, help="a site folder, or HTML pages / a single-file report")
    ap.add_argument("--ranks", type=int, nargs="*", default=None,
                    help="rank pages to time when a site folder is given (default: 0 and the ranks the findings name)")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per page before giving up on its charts")
    ap.add_argument("--screenshots", type=Path, default=None, help="folder for a screenshot of each page")
    ap.add_argument("--json", type=Path, default=None, help="also write the measurements here")
    args = ap.parse_args(argv)
    pages: list[Path] = []
    for t in args.targets:
        if t.is_dir():
            ranks = args.ranks
            if ranks is None:
                ranks = [0]
                try:
                    summary = json.loads((t / "summary.json").read_text(encoding="utf-8"))
                    ranks += sorted({int(r) for f in summary.get("findings", []) for r in f.get("ranks", [])})[:4]
                except (OSError, ValueError):
                    pass
            pages += default_pages(t, ranks)
        else:
            pages.append(t)
    res = measure(pages, args.chromium, args.timeout, args.screenshots)
    bad = 0
    print(f"{'page':60} {'paint':>8} {'FCP':>8} {'DCL':>8} {'charts':>8} {'drawn':>8}  n")
    for m in res:
        miss = (m["first_paint_ms"] is None or m["first_paint_ms"] > PAINT_GOAL_MS or m["timed_out"]
                or (m["charts_done_ms"] or 0) > DRAW_GOAL_MS or m["chart_errors"] or m["js_errors"])
        bad += bool(miss)
        name = m["page"][-60:]
        print(f"{name:60} {_fmt(m['first_paint_ms'])} {_fmt(m['first_contentful_paint_ms'])} "
              f"{_fmt(m['dom_content_loaded_ms'])} {_fmt(m['charts_done_ms'])} {m['charts_drawn']:>4}/{m['charts']:<3}"
              f"{'  MISSES GOAL' if miss else ''}")
        for e in m["chart_errors"] + m["js_errors"]:
            print(f"    error: {e}")
    if args.json:
        args.json.write_text(json.dumps(res, indent=2), encoding="utf-8")
    print(f"goals: first paint <= {PAINT_GOAL_MS} ms, charts drawn <= {DRAW_GOAL_MS} ms; "
          f"{len(res) - bad}/{len(res)} pages meet them")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
