"""`msreport compare BASE NEW -o OUT` and `msreport trend SUMMARY... -o OUT`.

Exit codes: 0 written (and no regression); 3 written and `--fail-on-regression` found one; 4 written, but
`--fail-on-regression` was asked and the runs cannot be compared (another device, world size, parallel layout or
profiler level: nothing judged); 2 bad command line, unreadable input or unsafe output; 1 an unexpected internal
error.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Optional

from reportgen import cliutil, fmt, i18n
from reportgen.i18n import N_, _

log = logging.getLogger("msreport")

EXIT_REGRESSION = 3
EXIT_INCOMPARABLE = 4  # (compare.model.EXIT_INCOMPARABLE)
COMMANDS = ("compare", "trend")
_SINGLE = N_("write one self-contained HTML file (and NAME.compare.json / NAME.trend.json beside it)")


def compare_parser() -> argparse.ArgumentParser:
    from reportgen.layouts import default_jobs

    p = cliutil.Parser(prog="msreport compare", description=_("Compare two runs (before / after) and optionally gate "
                       "on a regression. BASE and NEW are run folders, report folders or summary.json files."))
    p.add_argument("base", type=Path, help=_("the reference run: run folder, report folder or summary.json"))
    p.add_argument("new", type=Path, help=_("the run to judge: run folder, report folder or summary.json"))
    p.add_argument("--fail-on-regression", type=float, default=None, metavar="PCT",
                   help=_("exit {code} when the mean step time, or a phase that costs step time, is slower by "
                          "more than PCT %% beyond the step-to-step noise (a phase under 5 %% of the step is judged "
                          "by its change as a share of the step), or when a warning/critical finding appeared or "
                          "rose in severity; exit {other} when the runs cannot be compared (another device, world "
                          "size, parallel layout or profiler level)").format(code=EXIT_REGRESSION,
                                                                              other=EXIT_INCOMPARABLE))
    p.add_argument("--link-threshold", type=float, default=None, metavar="PCT",
                   help=_("list links whose bandwidth changed by more than PCT %% (default 20)"))
    cliutil.add_jobs_option(p, default_jobs())
    p.add_argument("--device-memory-gb", type=float, default=None, metavar="GB",
                   help=_("device memory capacity for run folders analysed here (as `msreport RUN`)"))
    cliutil.add_threshold_options(p)
    cliutil.add_output_options(p, _(_SINGLE), required=True)
    cliutil.add_lang_option(p)
    cliutil.add_verbosity_options(p)
    return p


def trend_parser() -> argparse.ArgumentParser:
    p = cliutil.Parser(prog="msreport trend", description=_("Step time, phases and findings over many runs (a CI "
                       "history), in date order, from their summary.json files (or report folders)."))
    p.add_argument("summaries", type=Path, nargs="+", metavar="SUMMARY", help=_("summary.json files or report "
                                                                                  "folders"))
    cliutil.add_output_options(p, _(_SINGLE), required=True)
    cliutil.add_lang_option(p)
    cliutil.add_verbosity_options(p)
    return p


def main(argv: list[str]) -> int:
    """`argv` starts with the sub-command (compare | trend). The pages and the messages are in `--lang` (default:
    from the locale, as the main command)."""
    with i18n.use(cliutil.lang_argument(argv[1:]) or i18n.default_language()):
        return _main(argv)


def _main(argv: list[str]) -> int:
    cmd, rest = argv[0], list(argv[1:])
    parser = compare_parser() if cmd == "compare" else trend_parser()
    args = parser.parse_args(rest)
    settings: dict = {}
    if cmd == "compare":
        if args.fail_on_regression is not None and not args.fail_on_regression >= 0:
            parser.error(_("--fail-on-regression must be a percentage >= 0"))
        if args.link_threshold is not None and not args.link_threshold > 0:
            parser.error(_("--link-threshold must be a positive percentage"))
        if args.device_memory_gb is not None and not args.device_memory_gb > 0:
            parser.error(_("--device-memory-gb must be a positive number"))
        cliutil.check_jobs(parser, args)
        settings = {"overrides": cliutil.threshold_overrides(parser, args),
                    "device_memory_mb": args.device_memory_gb * 1024 if args.device_memory_gb else None}
    cliutil.setup_logging(args.quiet, args.verbose)
    body = (lambda: _run_compare(args, settings)) if cmd == "compare" else (lambda: _run_trend(args))
    return cliutil.run_guarded(body, verbose=args.verbose, what="output")


def _run_compare(args, settings: dict) -> int:
    from reportgen.compare import check_side, load_side
    from reportgen.compare.model import DEFAULT_LINK_PCT, compare
    from reportgen.compare.pages import write_compare
    from reportgen.layouts import default_jobs

    out = cliutil.out_path(args.output, args.single_file)
    jobs = args.jobs or default_jobs()
    for side in (args.base, args.new):  # both inputs checked before either is analysed (that can take minutes)
        check_side(side)
    base, base_kind = load_side(args.base, jobs=jobs, settings=settings)
    new, new_kind = load_side(args.new, jobs=jobs, settings=settings)
    comp = compare(base, new, base_source=str(args.base), new_source=str(args.new), base_kind=base_kind,
                   new_kind=new_kind, threshold_pct=args.fail_on_regression,
                   link_pct=args.link_threshold or DEFAULT_LINK_PCT)
    entry = write_compare(comp, out, single_file=args.single_file, inputs=[args.base, args.new])
    if not args.quiet:
        s = comp.step
        pct = fmt.signed_percent(s.delta_pct, missing=_("n/a"))
        print(_("msreport: step time {pct} ({status}); findings: {new} new, {resolved} resolved").format(
            pct=pct, status=_(s.status), new=len(comp.findings_by("new")), resolved=len(comp.findings_by("resolved"))))
        for w in comp.warnings:
            print(_("msreport: warning: {text}").format(text=w), file=sys.stderr)
        if comp.noise_note is not None:
            print(_("msreport: warning: {text}").format(text=comp.noise_note), file=sys.stderr)
        print(_("Wrote comparison to {uri}").format(uri=entry.resolve().as_uri()))
    if not comp.gate.comparable:
        for c in comp.comparability:
            if c["blocking"]:
                print(_("msreport: cannot compare: {what} differs ({base} vs {new})").format(
                    what=i18n.translate(c["label"]), base=i18n.translate(c["base"]), new=i18n.translate(c["new"])),
                    file=sys.stderr)
        if args.fail_on_regression is not None:
            return EXIT_INCOMPARABLE
    if comp.gate.failed:
        for r in comp.gate.reasons:
            print(_("msreport: regression: {text}").format(text=r), file=sys.stderr)
        return EXIT_REGRESSION
    return 0


def _run_trend(args) -> int:
    from reportgen.compare.pages import write_trend
    from reportgen.compare.trend import build_trend

    out = cliutil.out_path(args.output, args.single_file)
    trend = build_trend(args.summaries)
    entry = write_trend(trend, out, single_file=args.single_file, inputs=list(args.summaries))
    if not args.quiet:
        print(_("msreport: {n} run(s) from {first} to {last}").format(n=len(trend.runs), first=trend.runs[0].label,
                                                                       last=trend.runs[-1].label))
        print(_("Wrote trend to {uri}").format(uri=entry.resolve().as_uri()))
    return 0


def dispatch(argv: Optional[list[str]]) -> Optional[int]:
    """For `reportgen.cli.main`: the exit code when argv names a sub-command, else None."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in COMMANDS:
        return main(argv)
    return None
