"""`msreport compare BASE NEW -o OUT` and `msreport trend SUMMARY... -o OUT`.

Exit codes: 0 written (and no regression); 3 written and `--fail-on-regression` found one; 2 bad command line,
unreadable input or unsafe output; 1 an unexpected internal error.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Optional

from reportgen import __version__
from reportgen.errors import ReportError

log = logging.getLogger("msreport")

EXIT_REGRESSION = 3
COMMANDS = ("compare", "trend")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line + usage, exit 2
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", type=Path, required=True, help="output folder (or .html file with --single-file)")
    p.add_argument("--single-file", action="store_true", help="write one self-contained HTML file "
                   "(and NAME.compare.json / NAME.trend.json beside it)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    g.add_argument("-v", "--verbose", action="store_true", help="print progress details and tracebacks")
    p.add_argument("--version", action="version", version=f"msreport {__version__}")


def compare_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="msreport compare", description="Compare two runs (before / after) and optionally gate on a "
                "regression. BASE and NEW are run folders, report folders or summary.json files.")
    p.add_argument("base", type=Path, help="the reference run: run folder, report folder or summary.json")
    p.add_argument("new", type=Path, help="the run to judge: run folder, report folder or summary.json")
    p.add_argument("--fail-on-regression", type=float, default=None, metavar="PCT",
                   help=f"exit {EXIT_REGRESSION} when the mean step time, or a phase of at least 5 %% of the step, "
                        "is slower by more than PCT %% (and outside the step-to-step noise), or when a new "
                        "warning/critical finding appeared")
    p.add_argument("--link-threshold", type=float, default=None, metavar="PCT",
                   help="list links whose bandwidth changed by more than PCT %% (default 20)")
    p.add_argument("-j", "--jobs", type=int, default=None, help="processes for loading run folders")
    _common(p)
    return p


def trend_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="msreport trend", description="Step time, phases and findings over many runs (a CI history), "
                "in date order, from their summary.json files (or report folders).")
    p.add_argument("summaries", type=Path, nargs="+", metavar="SUMMARY", help="summary.json files or report folders")
    _common(p)
    return p


def _setup_logging(args) -> None:
    level = logging.WARNING if args.quiet else (logging.DEBUG if args.verbose else logging.INFO)
    logging.basicConfig(level=level, format="msreport: %(message)s", stream=sys.stderr)


def _out_path(args) -> Path:
    out = args.output
    if args.single_file and out.suffix.lower() not in (".html", ".htm") and not out.is_dir():
        out = out.with_suffix(".html")
    return out


def main(argv: list[str]) -> int:
    """`argv` starts with the sub-command (compare | trend)."""
    cmd, rest = argv[0], list(argv[1:])
    parser = compare_parser() if cmd == "compare" else trend_parser()
    args = parser.parse_args(rest)
    if cmd == "compare":
        if args.fail_on_regression is not None and not args.fail_on_regression >= 0:
            parser.error("--fail-on-regression must be a percentage >= 0")
        if args.link_threshold is not None and not args.link_threshold > 0:
            parser.error("--link-threshold must be a positive percentage")
        if args.jobs is not None and args.jobs < 1:
            parser.error("--jobs must be at least 1")
    _setup_logging(args)
    try:
        return _run_compare(args) if cmd == "compare" else _run_trend(args)
    except ReportError as e:
        print(f"msreport: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("msreport: interrupted; the previous output (if any) is untouched", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - last resort: one line, traceback with -v
        if args.verbose:
            raise
        print(f"msreport: internal error: {type(e).__name__}: {e} (run with -v for details)", file=sys.stderr)
        return 1


def _run_compare(args) -> int:
    from reportgen.compare import load_side
    from reportgen.compare.model import DEFAULT_LINK_PCT, compare
    from reportgen.compare.pages import write_compare
    from reportgen.loaders import default_jobs

    out = _out_path(args)
    jobs = args.jobs or default_jobs()
    base, base_kind = load_side(args.base, jobs=jobs)
    new, new_kind = load_side(args.new, jobs=jobs)
    comp = compare(base, new, base_source=str(args.base), new_source=str(args.new), base_kind=base_kind,
                   new_kind=new_kind, threshold_pct=args.fail_on_regression,
                   link_pct=args.link_threshold or DEFAULT_LINK_PCT)
    entry = write_compare(comp, out, single_file=args.single_file, inputs=[args.base, args.new])
    if not args.quiet:
        s = comp.step
        pct = "n/a" if s.delta_pct is None else f"{s.delta_pct:+.1f} %"
        print(f"msreport: step time {pct} ({s.status}); findings: {len(comp.findings_by('new'))} new, "
              f"{len(comp.findings_by('resolved'))} resolved")
        for w in comp.warnings:
            print(f"msreport: warning: {w}", file=sys.stderr)
        print(f"Wrote comparison to {entry.resolve().as_uri()}")
    if comp.gate.failed:
        for r in comp.gate.reasons:
            print(f"msreport: regression: {r}", file=sys.stderr)
        return EXIT_REGRESSION
    return 0


def _run_trend(args) -> int:
    from reportgen.compare.pages import write_trend
    from reportgen.compare.trend import build_trend

    out = _out_path(args)
    trend = build_trend(args.summaries)
    entry = write_trend(trend, out, single_file=args.single_file, inputs=list(args.summaries))
    if not args.quiet:
        print(f"msreport: {len(trend.runs)} run(s) from {trend.runs[0].label} to {trend.runs[-1].label}")
        print(f"Wrote trend to {entry.resolve().as_uri()}")
    return 0


def dispatch(argv: Optional[list[str]]) -> Optional[int]:
    """For `reportgen.cli.main`: the exit code when argv names a sub-command, else None."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in COMMANDS:
        return main(argv)
    return None
