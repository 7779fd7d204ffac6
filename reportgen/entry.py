"""The `msreport` command's entry point: Ctrl-C at any moment, even while the libraries are still being
imported, ends with one line and exit code 130, never a traceback."""

from __future__ import annotations

import logging
import os
import sys
import threading

INTERRUPTED = "msreport: interrupted; the previous report (if any) is untouched"


def main() -> int:
    try:
        cli_main = _import_cli()
        code = cli_main()  # the build reports its own interruption (cliutil.run_guarded) and returns 130
    except KeyboardInterrupt:  # while the libraries load, or outside the build
        print(INTERRUPTED, file=sys.stderr)
        code = 130
    if code == 130:
        # Interrupted, and everything cleaned up (staged output removed, workers stopped): leave at once. An
        # interrupt that passed through a library's embedded code (some import) makes the interpreter kill itself
        # with SIGINT at a normal exit: status -2 instead of 130.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    return _leave(code)


def _import_cli():
    """`reportgen.cli.main`, imported with the cyclic collector paused and what the imports made (modules, classes,
    functions: ~0.5 million objects with pandas, pyarrow and numpy, kept to the end) moved to its oldest generation
    (`pools.gc_paused(long_lived=True)`): the young generations' passes as the libraries load (~15 % of the imports'
    time) and after them never walk it again. (Called inside `main`'s try: a Ctrl-C while they load is caught.)"""
    from reportgen.pools import gc_paused

    with gc_paused(long_lived=True):
        from reportgen.cli import main as cli_main
        from reportgen.report import keep_until_exit

        keep_until_exit()  # (the command exits right after its build: `_leave`)
    return cli_main


def _leave(code: int) -> int:
    """Exit now with `code`, once what was printed is flushed, without the interpreter's teardown: the build is
    over and every file written and closed, and that teardown only frees, one at a time, the objects still alive
    (0.4 s after a 1,024-rank build, ~4 % of a rebuild). Returns `code` (a normal exit) when the output cannot be
    flushed (the interpreter then reports it as usual), another thread still runs (it is waited for) or a profiler
    or tracer is on (`python -m cProfile`, coverage: they write their results at the interpreter's exit)."""
    try:
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return code
    if threading.active_count() > 1 or not isinstance(code, int) or sys.getprofile() or sys.gettrace():
        return code
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
