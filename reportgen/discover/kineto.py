"""PyTorch profiler (Kineto) traces: one `*.pt.trace.json[.gz]` per rank; traces of different jobs in one folder
are told apart (device model, world size, time base)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from reportgen.dataquality import dq
from reportgen.discover import peek
from reportgen.discover.fs import Fs
from reportgen.discover.runs import RankFiles, RunLayout
from reportgen.model import DataIssue


def kineto_runs(fs: Fs, d: Path, files: list[Path]) -> list[RunLayout]:
    """The Kineto traces of one folder: one run, or one per job when the traces are of different jobs (another
    device model or world size: never one job with ranks that never ran together)."""
    heads = {p: peek.kineto_header(p) for p in files}
    jobs: dict[tuple, list[Path]] = {}
    for p in files:
        h = heads[p]
        jobs.setdefault((h.get("world_size"), h.get("device_model")), []).append(p)
    # a trace that does not say its world size or device model (a header without it: the loader names that) goes
    # with the one job whose known facts it shares; traces that say nothing, with the one job that does
    for key in sorted((k for k in jobs if None in k), key=lambda k: k.count(None)):
        fits = [k for k in jobs if k != key and all(a is None or a == b for a, b in zip(key, k))]
        if len(fits) == 1:
            jobs[fits[0]].extend(jobs.pop(key))
    # the same rank twice: the traces of runs one after the other (another time base); in time order, a trace
    # whose rank the current job already has starts the next job
    split: dict[tuple, list[Path]] = {}
    for key, ps in jobs.items():
        ranks_seen: set = set()
        part = 0
        for p in sorted(ps, key=lambda q: (heads[q].get("first_ts", float("inf")), q.name)):
            r = heads[p].get("rank")
            if r is not None and r in ranks_seen and heads[p].get("first_ts") is not None:
                part += 1
                ranks_seen = set()
            if r is not None:
                ranks_seen.add(r)
            split.setdefault((*key, part), []).append(p)
    jobs = split
    if len(jobs) == 1:
        return [kineto_run(fs, d, files, heads)]
    runs = []
    for i, (key, ps) in enumerate(sorted(jobs.items(), key=lambda kv: sorted(kv[1])[0]), start=1):
        run = kineto_run(fs, d, ps, heads)
        ws, model, part = key
        run.name = ", ".join(x for x in (model, f"world size {ws}" if ws else None,
                                         f"run {part + 1}" if any(k[2] for k in jobs) else None) if x) \
            or f"job {i}"
        run.key = f"job{i}"
        run.issues.append(DataIssue(run.rel(d), dq("discover.folder-holds-traces-different", jobs=len(jobs)), "info"))
        runs.append(run)
    return runs


def kineto_run(fs: Fs, d: Path, files: list[Path], heads: Optional[dict] = None) -> RunLayout:
    run = RunLayout(root=fs.root, base=d, layout="kineto")
    unknown = []
    sizes: set[int] = set()
    for p in files:
        info = (heads or {}).get(p) or peek.kineto_header(p)
        rank = info.get("rank")
        if info.get("world_size"):
            sizes.add(int(info["world_size"]))
        if rank is None:
            m = re.search(r"rank[_-]?(\d+)", p.name)
            rank = int(m.group(1)) if m else None
        if rank is None:
            unknown.append(p)
            continue
        if rank in run.ranks:
            run.issues.append(DataIssue(run.rel(p), dq("discover.second-trace-rank-ignored", rank=rank), "warning"))
            continue
        rf = RankFiles(rank=rank, dir=d, host=info.get("host"))
        rf.add("kineto_trace", p)
        run.ranks[rank] = rf
    if len(sizes) == 1:
        run.world_size = sizes.pop()
    if unknown and not run.ranks and len(unknown) == 1:
        rf = RankFiles(rank=0, dir=d)
        rf.add("kineto_trace", unknown[0])
        run.ranks[0] = rf
    else:
        for p in unknown:
            run.issues.append(DataIssue(run.rel(p), dq("discover.no-rank-trace-distributedinfo")))
    return run
