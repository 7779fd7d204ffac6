"""CPU time per rank page (issue 17's write stage): load and analyse a run once, plan the site, then plan, render
and write N rank pages (and their CSV downloads) in this process into a temporary folder, and report
`time.process_time` per page (CPU, not wall: the machine is shared), the best of several repetitions.

    python scripts/rank_page_cpu.py RUN                      # every rank page, 5 repetitions
    python scripts/rank_page_cpu.py RUN -n 256 --repeat 3 --stages
    python scripts/rank_page_cpu.py RUN --profile /tmp/rank.prof   # and cProfile one repetition (top 40 printed)

`--stages`: also the time per page of each part (planning, rendering, CSV text, gzip), each over all pages.
`--cache FILE`: keep the analysed run in a pickle (the next call skips loading; delete it after a loader change).
`--store`: the gzipped CSVs served by a CSV store that the warm-up pass filled (a rebuild's pages: `csv_store`).
"""

from __future__ import annotations

import argparse
import cProfile
import gzip
import pickle
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reportgen import i18n  # noqa: E402
from reportgen.layouts import discover  # noqa: E402
from reportgen.progress import Progress  # noqa: E402
from reportgen.report import BuildOptions, analyse_phase, load_phase  # noqa: E402
from reportgen.site.render import builder, csv_store  # noqa: E402
from reportgen.site.render.csv_text import csv_text  # noqa: E402
from reportgen.site.render.jinja_env import make_env  # noqa: E402
from reportgen.site.render.page_assets import PageAssets  # noqa: E402
from reportgen.site.plan.planner import plan_pages  # noqa: E402
from reportgen.urls import url_function  # noqa: E402

NAMES = PageAssets(single=False, files={"vega": "assets/vega.js", "css": "assets/report.css", "js": "assets/report.js"})


def analysed(run: Path, cache: Path | None):
    if cache is not None and cache.exists():
        return pickle.loads(cache.read_bytes())
    opts = BuildOptions(jobs=2)
    a, findings, thresholds = analyse_phase(load_phase(discover(run)[0], opts, Progress(False)), opts)
    if cache is not None:
        cache.write_bytes(pickle.dumps((a, findings, thresholds)))
    return a, findings, thresholds


def stages(plan, tree, env, idx: list[int]) -> dict[str, float]:
    """Seconds spent planning, rendering, building the CSV texts and gzipping them, over the pages `idx`."""
    out = {}
    t = time.process_time()
    pages = [plan.page_at(i) for i in idx]
    out["plan"] = time.process_time() - t
    shared = builder.SharedSpecs()
    t = time.process_time()
    for page in pages:
        url = url_function(page.path, single=False, root=tree.root)
        builder.render(env, "page.html", plan, page, url, single=False, asset_css="a.css", asset_js="a.js",
                        asset_vega="v.js", asset_specs="s.js", share_spec=shared.share, inline_css="", inline_js="",
                        inline_vega="", lang_links=[])
    out["render"] = time.process_time() - t
    t = time.process_time()
    csvs = [(p, csv_text(c, r)) for page in pages for p, c, r in page.downloads]
    out["csv"] = time.process_time() - t
    t = time.process_time()
    for p, text in csvs:
        if p.endswith(".gz"):
            gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)
    out["gzip"] = time.process_time() - t
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("-n", type=int, default=0, help="rank pages to write (default: all)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--lang", default="en")
    ap.add_argument("--stages", action="store_true")
    ap.add_argument("--profile", type=Path)
    ap.add_argument("--cache", type=Path)
    ap.add_argument("--store", action="store_true", help="CSVs from a store the warm-up filled (a rebuild)")
    a = ap.parse_args(argv)
    with i18n.use(a.lang):
        analysis, findings, thresholds = analysed(a.run, a.cache)
        plan = plan_pages(analysis, findings, thresholds=thresholds, lazy_ranks=True)
        tree = builder.language_trees(plan)[0]
        env = make_env()
        idx = plan.rank_page_ids()[:a.n or None]
        with tempfile.TemporaryDirectory(prefix="rank-page-cpu-") as tmp, \
                csv_store.use(csv_store.CsvStore(None, builder.CSV_GZIP) if a.store else None):
            def write(folder: Path) -> float:
                folder.mkdir()
                shared = builder.SharedSpecs()
                t = time.process_time()
                for i in idx:
                    builder.write_page(env, tree, plan.page_at(i), folder, NAMES, shared)
                return time.process_time() - t
            write(Path(tmp) / "warm")  # templates compiled, specs built once per shape
            runs = [write(Path(tmp) / f"r{k}") for k in range(a.repeat)]
            ms = [1000 * t / len(idx) for t in runs]
            print(f"{len(idx)} rank pages: {min(ms):.2f} ms CPU per page (best of {a.repeat}; all: "
                  + ", ".join(f"{m:.2f}" for m in ms) + ")")
            if a.stages:
                best: dict[str, float] = {}
                for _ in range(a.repeat):
                    for k, v in stages(plan, tree, env, idx).items():
                        best[k] = min(best.get(k, v), v)
                print("per page, best of each: " + ", ".join(f"{k} {1000 * v / len(idx):.2f} ms" for k, v in best.items()))
            if a.profile:
                pr = cProfile.Profile()
                pr.enable()
                write(Path(tmp) / "profiled")
                pr.disable()
                pr.dump_stats(a.profile)
                pstats.Stats(str(a.profile)).sort_stats("tottime").print_stats(40)
    return 0


if __name__ == "__main__":
    sys.exit(main())
