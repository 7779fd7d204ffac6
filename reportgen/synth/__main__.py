"""`python -m reportgen.synth OUT --ranks 64 --inject slow-rank:5`: write a synthetic run."""

from __future__ import annotations

import argparse
import sys

from reportgen.synth import LAYOUTS, SUPPORTED, generate_run


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m reportgen.synth", description="Write a synthetic profiled run.")
    p.add_argument("out", help="folder to create")
    p.add_argument("--layout", choices=LAYOUTS, default="ascend")
    p.add_argument("--ranks", type=int, default=8)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--stages", type=int, default=1)
    p.add_argument("--tp", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--trace-view", action="store_true",
                   help="also write trace_view.json per rank (Ascend layout; its Overlap Analysis lanes)")
    p.add_argument("--export", choices=("text", "db", "both"), default="text",
                   help="Ascend layout: text files, torch_npu's SQLite DB export only, or both")
    p.add_argument("--inject", action="append", default=[], metavar="SPEC",
                   help=f"problem to inject (repeatable): {', '.join(SUPPORTED)}; see the module docs")
    a = p.parse_args(argv)
    try:
        generate_run(a.out, layout=a.layout, ranks=a.ranks, steps=a.steps, stages=a.stages, tp=a.tp,
                     seed=a.seed, inject=a.inject, trace_view=a.trace_view,
                     export=a.export)
    except ValueError as e:
        p.error(str(e))
    print(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
