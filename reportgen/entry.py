"""The `msreport` command's entry point: Ctrl-C at any moment, even while the libraries are still being
imported, ends with one line and exit code 130, never a traceback."""

from __future__ import annotations

import os
import sys

INTERRUPTED = "msreport: interrupted; the previous report (if any) is untouched"


def main() -> int:
    try:
        from reportgen.cli import main as cli_main

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
    return code


if __name__ == "__main__":
    sys.exit(main())
