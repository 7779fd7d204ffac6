"""Command line: `msreport RUN -o OUT [--single-file]`.

Exit codes: 0 report written; 3 report written and `--fail-on LEVEL` found a finding at that level or above;
2 bad command line, bad thresholds, no profiler data, or an output that cannot be written safely; 1 an unexpected
internal error (with a traceback under -v).
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Optional

from reportgen import __version__
from reportgen.errors import ReportError
from reportgen.loaders import default_jobs

log = logging.getLogger("msreport")

EXAMPLE = {"layout": "ascend", "ranks": 16, "steps": 12, "stages": 2, "tp": 2,
           "inject": ["slow-rank:5:compute:1.35", "corrupt-step-trace:11", "slow-link:8-9"], "trace_view": True}


EXIT_FINDINGS = 3


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line + usage, exit 2
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


def make_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="msreport", description="Build an offline performance report (static HTML + summary.json) "
                "from Ascend / MindSpore / torch_npu profiler output.",
                epilog="sub-commands:\n"
                "  msreport compare BASE NEW -o OUT      compare two runs (folders or summary.json files)\n"
                "  msreport trend SUMMARY... -o OUT      step time, phases and findings over many runs\n"
                "run `msreport compare --help` / `msreport trend --help` for their options.",
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", nargs="?", type=Path, help="folder holding the profiler output of a run")
    p.add_argument("-o", "--output", type=Path, help="output folder (or .html file with --single-file)")
    p.add_argument("--single-file", action="store_true", help="write one self-contained HTML file "
                   "(and NAME.summary.json beside it)")
    p.add_argument("--example", action="store_true", help="build a report from a generated example run "
                   "(16 ranks, 2 pipeline stages, one slow rank, one damaged file)")
    p.add_argument("-j", "--jobs", type=int, default=None, help="processes for loading large runs "
                   f"(default: {default_jobs()})")
    p.add_argument("--device-memory-gb", type=float, default=None, metavar="GB",
                   help="device memory capacity to compare peaks with when the profiler did not record it "
                        "(torch_npu / MindSpore 2.3+ output), e.g. 64 for Ascend 910B")
    p.add_argument("--marey-step", dest="marey_steps", type=int, action="append", default=[], metavar="N",
                   help="also draw the execution (Marey) view of step N (repeatable; the representative and "
                        "the slowest steps are always drawn)")
    p.add_argument("--thresholds", type=Path, metavar="FILE", help="TOML file of rule thresholds: one [RULE] "
                   "table per rule, e.g. [slow-rank] min_share = 0.03 (see the report's Rules page)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="RULE.NAME=VALUE",
                   help="override one rule threshold (repeatable; applied after --thresholds)")
    p.add_argument("--fail-on", choices=("warning", "critical"), default=None,
                   help=f"exit with code {EXIT_FINDINGS} (after writing the report) when a finding of this "
                        "severity or worse exists; for CI gating")
    g = p.add_mutually_exclusive_group()
    g.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    g.add_argument("-v", "--verbose", action="store_true", help="print progress details and tracebacks")
    p.add_argument("--version", action="version", version=f"msreport {__version__}")
    return p


def _setup_logging(quiet: bool, verbose: bool) -> None:
    """msreport's own messages on stderr; -v adds its progress details, stage timings and tracebacks. Other
    libraries' loggers are left alone (no DEBUG on the root logger)."""
    logger = logging.getLogger("msreport")
    for h in list(logger.handlers):
        if getattr(h, "_msreport", False):
            logger.removeHandler(h)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("msreport: %(message)s"))
    handler._msreport = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING if quiet else (logging.DEBUG if verbose else logging.INFO))
    logger.propagate = False


def main(argv: Optional[list[str]] = None) -> int:
    from reportgen.compare.cli import dispatch  # `msreport compare ...` / `msreport trend ...`

    if (code := dispatch(argv)) is not None:
        return code
    parser = make_parser()
    args = parser.parse_args(argv)
    if args.example and args.run is not None:
        parser.error("give either RUN or --example, not both")
    if not args.example and args.run is None:
        parser.error("the run folder is required (or use --example)")
    if args.output is None:
        parser.error("the output path is required: -o OUT")
    if args.jobs is not None and args.jobs < 1:
        parser.error("--jobs must be at least 1")
    if args.device_memory_gb is not None and not args.device_memory_gb > 0:
        parser.error("--device-memory-gb must be a positive number")
    from reportgen.rules import ThresholdError, parse_overrides

    toml_text = None
    if args.thresholds is not None:
        try:
            toml_text = args.thresholds.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            parser.error(f"cannot read --thresholds {args.thresholds}: {e.strerror if isinstance(e, OSError) else e}")
    try:
        overrides = parse_overrides(toml_text, args.sets, toml_name=str(args.thresholds))
    except ThresholdError as e:
        parser.error(str(e))
    _setup_logging(args.quiet, args.verbose)
    out = args.output
    if args.single_file and out.suffix.lower() not in (".html", ".htm"):
        out = out.with_suffix(".html") if not out.is_dir() else out
    tmp_example = None
    try:
        from reportgen.progress import Progress
        from reportgen.report import BuildOptions, build_report

        opts = BuildOptions(single_file=args.single_file, jobs=args.jobs or default_jobs(), progress=not args.quiet,
                            device_memory_mb=args.device_memory_gb * 1024 if args.device_memory_gb else None,
                            overrides=overrides, marey_steps=tuple(args.marey_steps))
        run = args.run
        if args.example:
            from reportgen.synth import generate_run

            tmp_example = Path(tempfile.mkdtemp(prefix="msreport-example-"))
            run = generate_run(tmp_example / "example-run", **EXAMPLE)
            log.info("generated an example run (%d ranks) in %s", EXAMPLE["ranks"], run)
        result = build_report(run, out, opts, ui=Progress(not args.quiet))
    except ReportError as e:
        print(f"msreport: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("msreport: interrupted; the previous report (if any) is untouched", file=sys.stderr)
        return 130
    except OSError as e:  # the system refused something (disk full, read-only, permissions): not a bug
        log.debug("traceback", exc_info=True)
        where = f": {e.filename}" if e.filename else ""
        print(f"msreport: error: {e.strerror or e}{where}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - last resort: one line, traceback with -v
        if args.verbose:
            log.exception("internal error")
        print(f"msreport: internal error: {type(e).__name__}: {e} (run with -v for details)", file=sys.stderr)
        return 1
    finally:
        if tmp_example is not None:
            shutil.rmtree(tmp_example, ignore_errors=True)
    if args.verbose:
        log.debug("timings: %s", ", ".join(f"{name} {dt:.2f} s" for name, dt in result.timings))
    n_q = len(result.summary.get("data_quality", []))
    if not args.quiet:
        print(f"msreport: {result.ranks} rank(s) in {result.runs} run(s), {n_q} data-quality note(s), "
              f"{result.seconds:.1f} s")
    counts = {s: sum(1 for f in result.summary.get("findings", []) if f["severity"] == s)
              for s in ("critical", "warning", "info")}
    if not args.quiet:
        print(f"msreport: findings: {counts['critical']} critical, {counts['warning']} warning, {counts['info']} info")
        print(f"Wrote report to {result.entry.resolve().as_uri()}")
    if args.fail_on:
        hit = counts["critical"] + (counts["warning"] if args.fail_on == "warning" else 0)
        if hit:
            print(f"msreport: --fail-on {args.fail_on}: {hit} finding(s) at that level or worse", file=sys.stderr)
            return EXIT_FINDINGS
    return 0


if __name__ == "__main__":
    sys.exit(main())
