"""The pipeline: discover -> load -> analyze -> rules -> plan pages -> write."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from reportgen.analysis import analyze
from reportgen.discover import RunLayout, discover
from reportgen.model import DataIssue
from reportgen.analysis.execution import select
from reportgen.loaders import load_execution, load_run, timeline_ranks
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
              title: Optional[str] = None, settings: Optional[dict] = None) -> tuple[Path, dict]:
    """`settings`: from the command line: device_memory_mb, overrides (rule thresholds)."""
    run = load_run(layout, jobs=jobs, progress=_progress("ranks loaded", progress))
    try:  # the execution view is optional: an unforeseen trace must not cost the rest of the report
        sel = select(run, timeline_ranks(layout), (settings or {}).get("marey_steps"))
        run.execution = load_execution(layout, run, sel.steps, sel.reasons, sel.ranks, sel.skipped)
    except Exception as e:  # noqa: BLE001
        log.warning("execution view skipped: %s: %s", type(e).__name__, e)
        run.issues.append(DataIssue("", f"the operator timelines could not be read for the execution view "
                                        f"({type(e).__name__}: {e})", "warning"))
    analysis = analyze(run, device_memory_mb=(settings or {}).get("device_memory_mb"))
    findings, thresholds = run_rules(analysis, (settings or {}).get("overrides"))
    plan = plan_pages(analysis, findings, thresholds=thresholds, title=title)
    summary = build_summary(analysis, findings, thresholds)
    if single_file:
        entry = builder.write_single_file(plan, summary, out, layout.root)
    else:
        entry = builder.write_site(plan, summary, out, layout.root, progress=_progress("pages written", progress))
    return entry, summary


def build_report(run_dir: Path, out: Path, *, single_file: bool = False, jobs: int = 1,
                 progress: bool = False, device_memory_mb: Optional[float] = None,
                 overrides: Optional[dict] = None, marey_steps: Optional[list[int]] = None) -> BuildResult:
    """`overrides`: rule thresholds, {rule id: {name: value}} (see `reportgen.rules.parse_overrides`)."""
    t0 = time.monotonic()
    run_dir = Path(run_dir)
    layouts = discover(run_dir)
    settings = {"device_memory_mb": device_memory_mb, "overrides": overrides or {},
                "marey_steps": list(marey_steps or [])}
    if len(layouts) == 1:
        entry, summary = build_one(layouts[0], out, single_file=single_file, jobs=jobs, progress=progress,
                                   settings=settings)
        return BuildResult(entry, summary, 1, len(summary["run"]["ranks"]), time.monotonic() - t0)
    return _build_many(layouts, run_dir, out, single_file=single_file, jobs=jobs, progress=progress, t0=t0,
                       settings=settings)


def _build_many(layouts: list[RunLayout], run_dir: Path, out: Path, *, single_file: bool, jobs: int,
                progress: bool, t0: float, settings: dict) -> BuildResult:
    """Several runs under one folder: one report each, and a landing page that lists them."""
    builder.check_output(out, run_dir, single_file)
    if single_file:
        entry, combined = _build_subreports(layouts, run_dir, out, out.parent, single_file=True, jobs=jobs,
                                            progress=progress, settings=settings)
    else:
        with builder.staged_folder(out) as staging:
            _, combined = _build_subreports(layouts, run_dir, staging, staging, single_file=False, jobs=jobs,
                                            progress=progress, settings=settings)
        entry = out / "index.html"
    return BuildResult(entry, combined, len(layouts), sum(len(l.ranks) for l in layouts), time.monotonic() - t0)


def _build_subreports(layouts: list[RunLayout], run_dir: Path, out: Path, folder: Path, *, single_file: bool,
                      jobs: int, progress: bool, settings: dict) -> tuple[Path, dict]:
    entries, summaries = [], []
    for lay in layouts:
        sub = out.with_name(f"{out.stem}.{lay.slug}{out.suffix or '.html'}") if single_file else folder / lay.slug
        log.info("run %s (%s, %d ranks)", lay.rel(lay.base), lay.layout, len(lay.ranks))
        entry, summary = build_one(lay, sub, single_file=single_file, jobs=jobs, progress=progress,
                                   title=f"msreport: {lay.rel(lay.base)}", settings=settings)
        entries.append((lay, entry))
        summaries.append(summary)

    def href(lay: RunLayout, entry: Path) -> str:
        return entry.name if single_file else f"{lay.slug}/index.html"

    def summary_name(lay: RunLayout, entry: Path) -> str:
        return entry.with_name(entry.stem + ".summary.json").name if single_file else f"{lay.slug}/summary.json"

    combined = {
        "schema": summaries[0]["schema"],
        "tool": summaries[0]["tool"],
        "run": {"path": str(run_dir), "layout": "multiple", "ranks": [], "steps": 0,
                "parallel_mode": None, "stages": None, "thresholds": summaries[0]["run"]["thresholds"]},
        "runs": [{"path": lay.rel(lay.base), "layout": lay.layout, "summary": summary_name(lay, e)}
                 for lay, e in entries],
        "metrics": {},
        "findings": [f for s in summaries for f in s["findings"]],
        "data_quality": [{"file": "", "problem": f"{len(layouts)} separate runs found; reported separately",
                          "severity": "info"}] + [q for s in summaries for q in s["data_quality"]],
    }
    rows = [{"path": lay.rel(lay.base), "layout": lay.layout, "ranks": len(lay.ranks), "href": href(lay, e)}
            for lay, e in entries]
    entry = builder.write_runs_index(rows, combined, str(run_dir), out, single_file=single_file)
    return entry, combined
