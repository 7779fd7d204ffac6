"""MindInsight's flat profiler folder: per-rank `*_{rank}` files, with PROF_* msprof folders and raw HCCL traces
beside them."""

from __future__ import annotations

import re
from pathlib import Path

from reportgen.discover import peek
from reportgen.discover.fs import Fs
from reportgen.discover.msprof import prof_devices
from reportgen.discover.names import CLUSTER_ANALYSE_RE, LEGACY_FILE_RE, legacy_family
from reportgen.discover.runs import RankFiles, RunLayout


def legacy_run(fs: Fs, d: Path, files: list[Path], prof_dirs: list[Path]) -> RunLayout:
    run = RunLayout(root=fs.root, base=d, layout="mindinsight")
    sizes: set[int] = set()
    for p in files:
        m = CLUSTER_ANALYSE_RE.match(p.name)
        if m:
            rank = int(m.group("rank"))
            run.parallel_hint = {"mode": m.group("mode"), "stages": int(m.group("stages")),
                                 "size": int(m.group("size")), "source": p.name}
            family = "cluster_analyse"
        else:
            m = LEGACY_FILE_RE.match(p.name)
            assert m is not None
            rank = int(m.group("rank"))
            family = legacy_family(p.name)
            if family == "profiler_info.json" and len(sizes) < 2:
                size = peek.profiler_info_facts(p).get("world_size")
                if size:
                    sizes.add(size)
        rf = run.ranks.setdefault(rank, RankFiles(rank=rank, dir=d))
        rf.add(family, p)
    if len(sizes) == 1:
        run.world_size = sizes.pop()
    # msprof PROF_* folders in the same profiler folder: a fallback source of step traces
    mine = [p for p in prof_dirs if p.parent == d]
    if mine:
        run.run_files["prof_dirs"] = mine
        for rank, devdir in prof_devices(fs, mine):
            rf = run.ranks.setdefault(rank, RankFiles(rank=rank, dir=d))
            rf.add("msprof_device", devdir)
    # raw HCCL task traces (MindInsight's input for hccl_raw): hccl_info/<op>_<a>_<b>_dev<N>/iter<k>.trace
    hinfo = fs.subdir(d, "hccl_info")
    if hinfo is not None:
        for opdir in fs.dirs(hinfo):
            m = re.search(r"_dev(\d+)$", opdir.name)
            if not m:
                continue
            rf = run.ranks.setdefault(int(m.group(1)), RankFiles(rank=int(m.group(1)), dir=d))
            for t in fs.files(opdir):
                if re.match(r"^iter.*\.trace$", t.name):
                    rf.add("hccl_trace", t)
    point = fs.file(d, "step_trace_point_info.json")
    if point is not None:
        run.run_files["step_trace_point_info"] = [point]
    return run
