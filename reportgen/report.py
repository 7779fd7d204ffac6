"""The pipeline: discover -> load -> analyze -> rules -> plan pages -> write."""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from reportgen.analysis import analyze
from reportgen.discover import RunLayout, discover
from reportgen.loaders import load_run
from reportgen.rules import run_rules
from reportgen.site import builder
from reportgen.site.pages import plan_pages
from reportgen.site.summary import build_summary

log = logging.getLogger("msreport")


@dataclass
class BuildResult:
    entry: Path  # the file to open
    summary: dict
    runs: int
    ranks: int
    seconds: float


def _progress(label: str, verbose: bool) -> Optional[Callable[[int, int], None]]:
    if not verbose:
        return None
    last = [0.0]

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if total >= 20 and (now - last[0] > 1.0 or done == total):
            last[0] = now
            log.info("%s %d/%d", label, done, total)

    return report


def build_one(layout: RunLayout, out: Path, *, single_file: bool, jobs: int, progress: bool,
              title: Optional[str] = None) -> tuple[Path, dict]:
    run = load_run(layout, jobs=jobs, progress=_progress("ranks loaded", progress))
    analysis = analyze(run)
    findings, thresholds = run_rules(analysis)
    plan = plan_pages(analysis, findings, title=title)
    summary = build_summary(analysis, findings, thresholds)
    if single_file:
        entry = builder.write_single_file(plan, summary, out, layout.root)
    else:
        entry = builder.write_site(plan, summary, out, layout.root, progress=_progress("pages written", progress))
    return entry, summary


def build_report(run_dir: Path, out: Path, *, single_file: bool = False, jobs: int = 1,
                 progress: bool = False) -> BuildResult:
    t0 = time.monotonic()
    run_dir = Path(run_dir)
    layouts = discover(run_dir)
    if len(layouts) == 1:
        entry, summary = build_one(layouts[0], out, single_file=single_file, jobs=jobs, progress=progress)
        return BuildResult(entry, summary, 1, len(summary["run"]["ranks"]), time.monotonic() - t0)
    return _build_many(layouts, run_dir, out, single_file=single_file, jobs=jobs, progress=progress, t0=t0)


def _build_many(layouts: list[RunLayout], run_dir: Path, out: Path, *, single_file: bool, jobs: int,
                progress: bool, t0: float) -> BuildResult:
    """Several runs under one folder: one report each, and a landing page that lists them."""
    builder.check_output(out, run_dir, single_file)
    entries, summaries = [], []
    staging = out.parent / f".{out.name}.runs-staging" if not single_file else out.parent
    if not single_file:
        import shutil

        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
    try:
        for lay in layouts:
            if single_file:
                sub = out.with_name(f"{out.stem}.{lay.slug}{out.suffix or '.html'}")
            else:
                sub = staging / lay.slug
            log.info("run %s (%s, %d ranks)", lay.rel(lay.base), lay.layout, len(lay.ranks))
            entry, summary = build_one(lay, sub, single_file=single_file, jobs=jobs, progress=progress,
                                       title=f"msreport: {lay.rel(lay.base)}")
            entries.append((lay, entry))
            summaries.append(summary)
        combined = {
            "schema": summaries[0]["schema"],
            "tool": summaries[0]["tool"],
            "run": {"path": str(run_dir), "layout": "multiple", "ranks": [], "steps": 0,
                    "parallel_mode": None, "stages": None, "thresholds": {}},
            "runs": [{"path": lay.rel(lay.base), "layout": lay.layout,
                      "summary": (f"{lay.slug}/summary.json" if not single_file else
                                  Path(e).with_name(Path(e).stem + ".summary.json").name)}
                     for (lay, e) in entries],
            "metrics": {},
            "findings": [f for s in summaries for f in s["findings"]],
            "data_quality": [{"file": "", "problem": f"{len(layouts)} separate runs found; reported separately",
                              "severity": "info"}] + [q for s in summaries for q in s["data_quality"]],
        }
        rows = [{"path": lay.rel(lay.base), "layout": lay.layout, "ranks": len(lay.ranks),
                 "href": (f"{lay.slug}/index.html" if not single_file else Path(e).name)}
                for lay, e in entries]
        html = builder.render_runs_index(rows, str(run_dir))
        if single_file:
            builder._atomic_write(out, html)
            builder._atomic_write(out.with_name(out.stem + ".summary.json"), json.dumps(combined, indent=2))
            entry = out
        else:
            (staging / "index.html").write_text(html, encoding="utf-8")
            (staging / "summary.json").write_text(json.dumps(combined, indent=2), encoding="utf-8")
            (staging / builder.MARKER).write_text("msreport\n", encoding="utf-8")
            builder._swap_into_place(staging, out)
            entry = out / "index.html"
    except BaseException:
        if not single_file:
            import shutil

            shutil.rmtree(staging, ignore_errors=True)
        raise
    return BuildResult(entry, combined, len(layouts), sum(len(l.ranks) for l in layouts), time.monotonic() - t0)
