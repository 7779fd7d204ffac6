"""Benchmark msreport on big synthetic runs: time per stage and peak memory.

    python scripts/benchmark.py --ranks 512 1024 4096 --steps 20 [--layout ascend] [--jobs 2]

Prints one line per run; numbers go into closing notes, not into unit tests.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import tempfile
import time
from pathlib import Path

from reportgen.analysis import analyze
from reportgen.discover import discover
from reportgen.loaders import load_run
from reportgen.rules import run_rules
from reportgen.site import builder
from reportgen.site.pages import plan_pages
from reportgen.site.summary import build_summary
from reportgen.synth import generate_run


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench(ranks: int, steps: int, layout: str, jobs: int, keep: bool) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix=f"msreport-bench-{ranks}-"))
    t = {}
    t0 = time.perf_counter()
    run_dir = generate_run(tmp / "run", layout=layout, ranks=ranks, steps=steps, stages=4 if ranks >= 8 else 1,
                           inject=[f"slow-rank:{ranks // 3}:compute:1.3"]
                           + ([f"slow-link:{link[0]}-{link[1]}"] if (link := _slow_link(ranks)) else []))
    t["generate"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    (lay,) = discover(run_dir)
    t["discover"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    run = load_run(lay, jobs=jobs)
    t["load"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    a = analyze(run)
    findings, thr = run_rules(a)
    t["analyze"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    plan = plan_pages(a, findings)
    summary = build_summary(a, findings, thr)
    t["plan"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    entry = builder.write_site(plan, summary, tmp / "site", run_dir)
    t["write"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    builder.write_single_file(plan, summary, tmp / "one.html", run_dir)
    t["single"] = time.perf_counter() - t0
    size = sum(p.stat().st_size for p in (tmp / "site").rglob("*") if p.is_file()) / 1e6
    single = (tmp / "one.html").stat().st_size / 1e6
    slow_found = (ranks // 3) in a.steps.outliers.get("computing" if layout == "ascend" else "fp_and_bp", [])
    link = _slow_link(ranks)
    link_found = None if link is None else [(s, d) for s, d, _ in a.comm.slow_links] == [link]
    if not keep:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print("kept", entry)
    return {"ranks": ranks, "steps": steps, **t, "site_mb": size, "single_mb": single, "rss_mb": _rss_mb(),
            "slow_rank_flagged": slow_found, "slow_link_flagged": link_found}


def _slow_link(ranks: int):
    """A data-parallel ring hop inside stage 0 (ranks per stage >= 2): rank k -> k+1."""
    per_stage = ranks // (4 if ranks >= 8 else 1)
    return (per_stage // 2, per_stage // 2 + 1) if per_stage >= 3 else None


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, nargs="+", default=[64, 512, 1024])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--layout", default="ascend", choices=("ascend", "mindinsight"))
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--keep", action="store_true")
    a = p.parse_args()
    for n in a.ranks:
        r = bench(n, a.steps, a.layout, a.jobs, a.keep)
        stages = " ".join(f"{k}={r[k]:.2f}s" for k in ("generate", "discover", "load", "analyze", "plan", "write",
                                                       "single"))
        build = sum(r[k] for k in ("discover", "load", "analyze", "plan", "write"))
        print(f"{a.layout} ranks={n} steps={a.steps}: build {build:.1f}s ({stages}); site {r['site_mb']:.1f} MB, "
              f"single file {r['single_mb']:.1f} MB, peak RSS {r['rss_mb']:.0f} MB, "
              f"injected slow rank flagged: {r['slow_rank_flagged']}, slow link flagged: {r['slow_link_flagged']}",
              flush=True)


if __name__ == "__main__":
    main()
