"""`msreport compare` and `msreport trend`: compare runs from their `summary.json` (docs/compare-json.md).

BASE / NEW may be run folders (analysed in-process, no report written), report folders (their `summary.json`)
or `summary.json` files, so a CI job that keeps only the last good summary can compare.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Optional

from reportgen.errors import ReportError

log = logging.getLogger("msreport")

SUMMARY_SCHEMA_PREFIX = "msreport.summary/"


def read_summary(path: Path) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise ReportError(f"cannot read {path}: {e.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ReportError(f"{path} is not a valid summary.json ({e})") from None
    if not isinstance(data, dict) or not str(data.get("schema", "")).startswith(SUMMARY_SCHEMA_PREFIX):
        raise ReportError(f"{path} is not an msreport summary.json (no schema {SUMMARY_SCHEMA_PREFIX}N)")
    if (data.get("run") or {}).get("layout") == "multiple":
        raise ReportError(f"{path} is the landing summary of a folder with several runs; give one run's summary "
                          f"({', '.join(r.get('summary', '') for r in data.get('runs', [])[:3])} ...)")
    return data


def summary_from_run(run_dir: Path, *, jobs: int = 1, settings: Optional[dict] = None) -> dict:
    """Analyse a run folder in-process: the phases of `report.build_one`, without writing pages."""
    from reportgen.layouts import discover
    from reportgen.progress import Progress
    from reportgen.report import BuildOptions, analyse_phase, load_phase
    from reportgen.site.views.summary import build_summary

    layouts = discover(Path(run_dir))
    if len(layouts) > 1:
        raise ReportError(f"{run_dir} holds {len(layouts)} runs ({', '.join(l.slug for l in layouts[:4])}); "
                          "give the folder of one run")
    settings = settings or {}
    opts = BuildOptions(jobs=jobs, device_memory_mb=settings.get("device_memory_mb"),
                        overrides=settings.get("overrides") or {}, marey_steps=tuple(settings.get("marey_steps") or ()))
    run = load_phase(layouts[0], opts, Progress(False))
    analysis, findings, thresholds = analyse_phase(run, opts)
    return build_summary(analysis, findings, thresholds)


def check_side(path: Path) -> None:
    """Refuse an input that cannot be one side of a comparison, before anything is analysed."""
    path = Path(path)
    if not path.exists() and not path.with_name(path.stem + ".summary.json").is_file():
        raise ReportError(f"{path} does not exist")


def load_side(path: Path, *, jobs: int = 1, settings: Optional[dict] = None) -> tuple[dict, str]:
    """(summary, kind) for a run folder ("run"), a report folder ("report") or a summary.json file ("summary")."""
    path = Path(path)
    if path.suffix.lower() in (".html", ".htm") and path.with_name(path.stem + ".summary.json").is_file():
        path = path.with_name(path.stem + ".summary.json")  # a single-file report: its summary beside it
    if path.is_file():
        return read_summary(path), "summary"
    if path.is_dir() and (path / "summary.json").is_file():
        return read_summary(path / "summary.json"), "report"
    if not path.exists():
        raise ReportError(f"{path} does not exist")
    log.info("analysing run %s", path)
    return summary_from_run(path, jobs=jobs, settings=settings), "run"
