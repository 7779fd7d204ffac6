"""Each rule's estimated saving against its what-if, at any rank count (docs/severity.md).

For every planted problem: the synthetic run with it and the same run without it (same seed, same noise), the
finding's severity and `impact.step_ms` against the measured difference of step times (the median rank's step; the
slowest rank's for an unbalanced pipeline stage, whose what-if is the same work split evenly). Prints a markdown
table. The test suite runs the same cases at 16 and 256 ranks (tests/test_severity.py); this script is for larger
runs, e.g.

    PYTHONPATH=. python scripts/severity_whatif.py --ranks 2048 --steps 4 --cases "slow rank, compute x1.3"
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reportgen.analysis import analyze  # noqa: E402
from reportgen.analysis.impact import _wide  # noqa: E402
from reportgen.layouts import discover  # noqa: E402
from reportgen.layouts import load_run  # noqa: E402
from reportgen.rules import run_rules  # noqa: E402
from reportgen.synth import generate_run  # noqa: E402
from tests.test_severity import WHAT_IF  # noqa: E402


def _step(a, pace: bool) -> float:
    w = _wide(a.steps.per_step, "total")
    return float((w.max(axis=0) if pace else w.median(axis=0)).mean())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=16)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--cases", default="", help="case names separated by semicolons (default: all)")
    args = ap.parse_args()
    logging.disable(logging.WARNING)
    want = {c.strip() for c in args.cases.split(";") if c.strip()}
    print("| case | ranks | finding | severity | estimate (ms) | what-if (ms) | error | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    for name, layout, inject, fixed, fid, kw, pace in WHAT_IF:
        if want and name not in want:
            continue
        t = time.time()
        with tempfile.TemporaryDirectory() as d:
            base = {"layout": layout, "ranks": args.ranks, "steps": args.steps, "seed": 3, **kw}
            bad = analyze(load_run(discover(generate_run(Path(d) / "bad", inject=inject, **base))[0],
                                   jobs=args.jobs))
            ok = analyze(load_run(discover(generate_run(Path(d) / "ok", inject=fixed, **base))[0], jobs=args.jobs))
        measured = _step(bad, pace) - _step(ok, pace)
        f = next((f for f in run_rules(bad)[0] if f.id == fid), None)
        est = (f.impact or {}).get("step_ms") if f else None
        err = f"{100 * (est - measured) / measured:+.1f} %" if est is not None and measured else "—"
        print(f"| {name} | {args.ranks} | `{fid}` | {f.severity if f else 'not found'} | "
              f"{'—' if est is None else f'{est:.2f}'} | {measured:.2f} | {err} | {time.time() - t:.0f} |",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
