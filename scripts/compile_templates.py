"""Write msreport's templates compiled (`reportgen/templates/compiled.json.gz`, read by
`reportgen.site.render.template_cache`): run it after changing a template or a catalog, or with a new Jinja.

    python scripts/compile_templates.py [--check]

--check: exit 1 when the file is not what this would write (tests/test_template_cache.py checks the same)."""

from __future__ import annotations

import argparse
import sys

from reportgen.site.render.template_cache import SHIPPED
from reportgen.site.render.template_ship import compile_all, shipped_bytes


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only say whether the file is up to date")
    args = ap.parse_args(argv)
    data = shipped_bytes(compile_all())
    if args.check:
        same = SHIPPED.is_file() and SHIPPED.read_bytes() == data
        print(f"{SHIPPED}: {'up to date' if same else 'out of date: run scripts/compile_templates.py'}")
        return 0 if same else 1
    tmp = SHIPPED.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(SHIPPED)
    print(f"wrote {SHIPPED} ({len(data):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
