"""What every `msreport` command shares: the parser that fails in one line, logging, the options every command
takes, the rule-threshold options, and one place that turns errors into exit codes.

Exit codes: 0 written; 2 bad command line, unreadable input or unsafe output (one line); 130 interrupted; 1 an
unexpected internal error (one line, traceback with -v). Commands add their own gate code (3).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any, Callable, Mapping

from typing import Optional

from reportgen import __version__, i18n
from reportgen.errors import ReportError
from reportgen.i18n import _

log = logging.getLogger("msreport")


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line + usage, exit 2
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


def add_output_options(p: argparse.ArgumentParser, single_help: str, required: bool = False) -> None:
    p.add_argument("-o", "--output", type=Path, required=required,
                   help=_("output folder (or .html file with --single-file)"))
    p.add_argument("--single-file", action="store_true", help=single_help)


def add_jobs_option(p: argparse.ArgumentParser, default_jobs: int) -> None:
    p.add_argument("-j", "--jobs", type=int, default=None,
                   help=_("processes for loading large runs (default: {n})").format(n=default_jobs))


def add_threshold_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--thresholds", type=Path, metavar="FILE", help=_("TOML file of rule thresholds: one [RULE] "
                   "table per rule, e.g. [slow-rank] min_share = 0.03 (see the report's Rules page)"))
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="RULE.NAME=VALUE",
                   help=_("override one rule threshold (repeatable; applied after --thresholds)"))


def add_verbosity_options(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("-q", "--quiet", action="store_true", help=_("print only errors"))
    g.add_argument("-v", "--verbose", action="store_true", help=_("print progress details and tracebacks"))
    p.add_argument("--version", action="version", version=f"msreport {__version__}")


def add_lang_option(p: argparse.ArgumentParser, several: bool = False) -> None:
    """`--lang zh|en` (the main command also takes two: `--lang zh,en`, the first one at the output's root)."""
    if several:
        p.add_argument("--lang", type=_languages, default=None, metavar="zh|en|zh,en|en,zh",
                       help=_("language of the report and of these messages: zh (Chinese) or en (English); two, "
                              "such as zh,en, write both, the first at the output's root and the other under "
                              "OUT/en/ (or OUT/zh/) with a language switch on every page; default from the "
                              "locale (LC_ALL / LC_MESSAGES / LANG starting with zh: zh, else en)"))
    else:
        p.add_argument("--lang", choices=i18n.LANGUAGES, default=None,
                       help=_("language of the pages and of these messages: zh (Chinese) or en (English); default "
                              "from the locale (LC_ALL / LC_MESSAGES / LANG starting with zh: zh, else en)"))


def _languages(text: str) -> tuple[str, ...]:
    try:
        return i18n.parse_languages(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def lang_argument(argv: list[str]) -> Optional[str]:
    """The language of the command's own messages from `--lang X` / `--lang=X`, read before parsing so that the
    help, the usage errors and the progress lines are in that language. With two (`--lang zh,en`: the report in
    both) the messages take the locale's language (`default_language`), which is always one of them."""
    for n, a in enumerate(argv):
        value = a.split("=", 1)[1] if a.startswith("--lang=") else (argv[n + 1] if a == "--lang" and
                                                                     n + 1 < len(argv) else None)
        if value is None:
            continue
        try:
            langs = i18n.parse_languages(value)
        except ValueError:
            return None
        return i18n.default_language() if i18n.default_language() in langs else langs[0]
    return None


def check_jobs(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if getattr(args, "jobs", None) is not None and args.jobs < 1:
        parser.error(_("--jobs must be at least 1"))


def threshold_overrides(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Mapping[str, Mapping[str, Any]]:
    """`--thresholds FILE` then `--set RULE.NAME=VALUE`, checked against the rules; a mistake is a usage error."""
    from reportgen.rules import ThresholdError, parse_overrides

    toml_text = None
    if args.thresholds is not None:
        try:
            toml_text = args.thresholds.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            parser.error(f"cannot read --thresholds {args.thresholds}: {e.strerror if isinstance(e, OSError) else e}")
    try:
        return parse_overrides(toml_text, args.sets, toml_name=str(args.thresholds))
    except ThresholdError as e:
        parser.error(str(e))
        raise  # unreachable: error() exits


def out_path(output: Path, single_file: bool) -> Path:
    """With --single-file, a folder-like OUT becomes OUT.html."""
    if single_file and output.suffix.lower() not in (".html", ".htm") and not output.is_dir():
        return output.with_suffix(".html")
    return output


def setup_logging(quiet: bool, verbose: bool) -> None:
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


def run_guarded(fn: Callable[[], int], *, verbose: bool, what: str = "report") -> int:
    """Run a command body; errors a user can cause become one line and exit 2, bugs one line and exit 1."""
    try:
        return fn()
    except ReportError as e:
        print(f"msreport: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"msreport: interrupted; the previous {what} (if any) is untouched", file=sys.stderr)
        return 130
    except OSError as e:  # the system refused something (disk full, read-only, permissions): not a bug
        log.debug("traceback", exc_info=True)
        where = f": {e.filename}" if e.filename else ""
        print(f"msreport: error: {e.strerror or e}{where}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - last resort: one line, traceback with -v
        if verbose:
            log.exception("internal error")
        print(f"msreport: internal error: {type(e).__name__}: {e} (run with -v for details)", file=sys.stderr)
        return 1
