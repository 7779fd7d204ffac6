"""Command line: `msreport RUN -o OUT [--single-file]`.

Exit codes: 0 report written; 3 report written and `--fail-on LEVEL` found a finding at that level or above;
2 bad command line, bad thresholds, no profiler data, or an output that cannot be written safely; 1 an unexpected
internal error (with a traceback under -v).
"""

from __future__ import annotations

import argparse
import logging
import sys
import shutil
from pathlib import Path
from typing import Optional

from reportgen import cliutil, i18n
from reportgen.errors import ReportError
from reportgen.i18n import N_, _
from reportgen.layouts import default_jobs
from reportgen.loaders.dispatch import check_scheduler

log = logging.getLogger("msreport")

EXAMPLE = {"layout": "ascend", "ranks": 16, "steps": 12, "stages": 2, "tp": 2,
           "inject": ["slow-rank:5:compute:1.35", "corrupt-step-trace:11", "slow-link:8-9"], "trace_view": True}


EXIT_FINDINGS = 3
EXAMPLE_MARKER = ".msreport-example"  # in the example's run folder: ours to replace on the next --example


def example_run_path(out: Path) -> Path:
    """Where `--example -o OUT` keeps its generated run: `example-run` beside the report (the run is the same for
    every example build, so the site, the single file and the Chinese example in one folder share it)."""
    return Path(out).parent / "example-run"


SUBCOMMANDS_HELP = N_("""sub-commands:
  msreport compare BASE NEW -o OUT   compare two runs (run folders, report folders or summary.json) and gate
                                      on a regression (msreport compare -h)
  msreport trend SUMMARY... -o OUT    step time, phases and findings over many runs (msreport trend -h)
""")


def make_parser() -> argparse.ArgumentParser:
    p = cliutil.Parser(prog="msreport", description=_("Build an offline performance report (static HTML + "
                       "summary.json) from Ascend / MindSpore / torch_npu / GPU profiler output."),
                       epilog=_(SUBCOMMANDS_HELP), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", nargs="?", type=Path, help=_("folder holding the profiler output of a run"))
    cliutil.add_output_options(p, _("write one self-contained HTML file (and NAME.summary.json beside it)"))
    p.add_argument("--example", action="store_true", help=_("build a report from a generated example run "
                   "(16 ranks, 2 pipeline stages, one slow rank, one damaged file), kept beside the report as example-run"))
    cliutil.add_jobs_option(p, default_jobs())
    p.add_argument("--scheduler", default=None, metavar="local|tcp://HOST:PORT",
                   help=_("where the ranks are loaded: local (processes on this machine, see -j; the default) or "
                          "the address of a Dask scheduler (needs {install}; the workers need msreport installed "
                          "and the run folder at the same path)").format(install='pip install "msreport[dask]"'))
    p.add_argument("--no-cache", dest="cache", action="store_false",
                   help=_("neither reuse nor write the per-rank summaries cached beside the output (.NAME.msreport-cache; "
                          "a second build of the same run reads only the ranks whose files changed)"))
    p.add_argument("--device-memory-gb", type=float, default=None, metavar="GB",
                   help=_("device memory capacity to compare peaks with when the profiler did not record it "
                          "(torch_npu / MindSpore 2.3+ output), e.g. 64 for Ascend 910B"))
    p.add_argument("--peak-tflops", type=float, default=None, metavar="TFLOPS",
                   help=_("peak dense TFLOPS of one device, for MFU, when the device is not in the peak table or to "
                          "use another data type's peak (e.g. 989.5 for H100 SXM bf16)"))
    p.add_argument("--model-flops", type=float, default=None, metavar="FLOPS",
                   help=_("the model's FLOPs per training step for the whole job (all ranks), e.g. 6 x parameters x "
                          "tokens per step, for MFU instead of the FLOPs the profile records"))
    p.add_argument("--marey-step", dest="marey_steps", type=int, action="append", default=[], metavar="N",
                   help=_("also draw the execution (Marey) view of step N (repeatable; the representative and "
                          "the slowest steps are always drawn)"))
    cliutil.add_lang_option(p, several=True)
    cliutil.add_threshold_options(p)
    p.add_argument("--fail-on", choices=("warning", "critical"), default=None,
                   help=_("exit with code {code} (after writing the report) when a finding of this "
                          "severity or worse exists; for CI gating").format(code=EXIT_FINDINGS))
    cliutil.add_verbosity_options(p)
    return p


def main(argv: Optional[list[str]] = None) -> int:
    from reportgen.compare.cli import dispatch  # `msreport compare ...` / `msreport trend ...`

    if (code := dispatch(argv)) is not None:
        return code
    argv = sys.argv[1:] if argv is None else list(argv)
    with i18n.use(cliutil.lang_argument(argv) or i18n.default_language()):
        return _main(argv)


def _main(argv: list[str]) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    if args.example and args.run is not None:
        parser.error(_("give either RUN or --example, not both"))
    if not args.example and args.run is None:
        parser.error(_("the run folder is required (or use --example)"))
    if args.output is None:
        parser.error(_("the output path is required: -o OUT"))
    cliutil.check_jobs(parser, args)
    bad_scheduler = check_scheduler(args.scheduler)
    if bad_scheduler:
        print(f"msreport: error: {bad_scheduler}", file=sys.stderr)
        return 2
    if args.device_memory_gb is not None and not args.device_memory_gb > 0:
        parser.error(_("--device-memory-gb must be a positive number"))
    for name, value in (("--peak-tflops", args.peak_tflops), ("--model-flops", args.model_flops)):
        if value is not None and not (value > 0 and value < float("inf")):
            parser.error(_("{option} must be a positive number").format(option=name))
    langs = args.lang or (i18n.default_language(),)
    if args.single_file and len(langs) > 1:
        parser.error(_("--single-file takes one language (--lang {first}); the site (without --single-file) can "
                       "carry two").format(first=langs[0]))
    overrides = cliutil.threshold_overrides(parser, args)
    cliutil.setup_logging(args.quiet, args.verbose)
    out = cliutil.out_path(args.output, args.single_file)
    results = []
    kept: list[Path] = []

    def build() -> int:
        from reportgen.progress import Progress
        from reportgen.report import BuildOptions, build_report

        opts = BuildOptions(single_file=args.single_file, jobs=args.jobs or default_jobs(), progress=not args.quiet,
                            device_memory_mb=args.device_memory_gb * 1024 if args.device_memory_gb else None,
                            peak_tflops=args.peak_tflops, model_flops=args.model_flops,
                            overrides=overrides, marey_steps=tuple(args.marey_steps),
                            lang=langs[0], other_langs=tuple(langs[1:]), scheduler=args.scheduler,
                            cache=args.cache)
        if not args.example:
            results.append(build_report(args.run, out, opts, ui=Progress(not args.quiet, lang=i18n.current())))
            return 0
        from reportgen.synth import generate_run

        # the run is kept beside the report (the overview names its folder; `msreport compare` can use it): an
        # earlier example run of ours is replaced, any other folder of that name is left alone
        run = example_run_path(out)
        if run.exists():
            if not (run / EXAMPLE_MARKER).is_file():
                raise ReportError(_("{path} exists and is not an example run of msreport; move it or choose "
                                    "another -o").format(path=run))
            shutil.rmtree(run)
        generate_run(run, **EXAMPLE)
        (run / EXAMPLE_MARKER).write_text("msreport --example\n", encoding="utf-8")
        log.info("%s", _("generated an example run ({ranks} ranks) in {path}").format(ranks=EXAMPLE["ranks"],
                                                                                     path=run))
        results.append(build_report(run, out, opts, ui=Progress(not args.quiet, lang=i18n.current())))
        kept.append(run)
        return 0

    code = cliutil.run_guarded(build, verbose=args.verbose)
    if code:
        return code
    result = results[0]
    if args.verbose:
        log.debug("timings: %s", ", ".join(f"{name} {dt:.2f} s" for name, dt in result.timings))
    n_q = len(result.summary.get("data_quality", []))
    if not args.quiet:
        print(_("msreport: {ranks} rank(s) in {runs} run(s), {notes} data-quality note(s), {seconds} s").format(
            ranks=result.ranks, runs=result.runs, notes=n_q, seconds=f"{result.seconds:.1f}"))
    counts = {s: sum(1 for f in result.summary.get("findings", []) if f["severity"] == s)
              for s in ("critical", "warning", "info")}
    if not args.quiet:
        print(_("msreport: findings: {critical} critical, {warning} warning, {info} info").format(**counts))
        print(_("Wrote report to {uri}").format(uri=result.entry.resolve().as_uri()))
        for run in kept:
            print(_("The example's run folder is kept at {path}").format(path=run.resolve()))
    if args.fail_on:
        hit = fail_on_hits(result.summary.get("findings", []), args.fail_on)
        if hit:
            print(_("msreport: --fail-on {level}: {n} finding(s) at that level or worse").format(
                level=args.fail_on, n=hit), file=sys.stderr)
            return EXIT_FINDINGS
    return 0


def fail_on_hits(findings: list[dict], level: str) -> int:
    """How many findings make `--fail-on LEVEL` exit 3: the critical ones, and the warnings too for `warning`."""
    return sum(1 for f in findings if f["severity"] == "critical" or (level == "warning" and f["severity"] == "warning"))


if __name__ == "__main__":
    sys.exit(main())
