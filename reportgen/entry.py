"""The `msreport` command's entry point: Ctrl-C at any moment, even while the libraries are still being
imported, ends with one line and exit code 130, never a traceback."""

from __future__ import annotations

import sys


def main() -> int:
    try:
        from reportgen.cli import main as cli_main

        return cli_main()
    except KeyboardInterrupt:  # the build itself reports its own interruption (cliutil.run_guarded)
        print("msreport: interrupted; the previous report (if any) is untouched", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
