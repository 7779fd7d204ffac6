"""Loading a discovered run into the typed model, the same way for every layout: the layout object
(`registry.LAYOUTS`) says what is read per rank and what happens at run level.

Every rank goes through ONE function, `load_rank` (a pure function of one rank's files, picklable, so ranks load
in parallel processes or on a Dask cluster: `loaders.dispatch.map_ranks`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

from reportgen.i18n import N_
from reportgen.layouts.base import Layout, exec_trace
from reportgen.layouts.registry import get
from reportgen.loaders import gpu, safe, step_ops
from reportgen.loaders import dispatch
from reportgen.loaders.dispatch import map_ranks
from reportgen.loaders.files import data_bytes
from reportgen.rankcache import active, map_cached, memo, use  # through the per-rank cache beside the output (when there is one)
from reportgen.loaders.files import run_root
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.run_info import build_run_info
from reportgen.loaders.traces import shared_reads
from reportgen.loaders.schema import compare_shapes
from reportgen.model import DataIssue, ExecutionData, RankData, RankInfo, Run
from reportgen.pools import gc_paused

if TYPE_CHECKING:
    from reportgen.discover import RankFiles, RunLayout

PARALLEL_MIN_RANKS = 64  # ranks read in the local pool (with jobs > 1) from this many,
POOL_MIN_BYTES = dispatch.POOL_MIN_BYTES  # or from two when their files hold this many bytes together (a GPU run
# of 8 ranks has 8 Kineto traces of 20-500 MB, each seconds to read)


def load_rank(rf: "RankFiles", root: Path, layout: str, derive: Optional[Callable[[RankData], Any]] = None
              ) -> RankData:
    """Load everything the report needs from one rank's files (the layout's `load_rank`), under `root`.
    `derive`: the analyses' per-rank share (`analysis.per_rank.rank_figures`, passed in by the pipeline: the
    analysis layer sits above this one), kept in `RankData.figures`: computed here, in the worker, and cached with
    the rank."""
    log = IssueLog(root, rf.rank)
    info = RankInfo(rank=rf.rank, source_dir=log.rel(rf.dir), host=rf.host, device=rf.device)
    data = RankData(info=info)
    seen: set[str] = set()
    for paths in rf.files.values():
        for p in paths:
            rel = log.rel(p)
            if rel not in seen:
                seen.add(rel)
                data.files.append(rel)
    with run_root(root):
        get(layout).load_rank(rf, data, log)
    if derive is not None:
        try:
            data.figures = derive(data)
        except Exception:  # noqa: BLE001  # none then: the analysis computes them from the data (and names a failure)
            data.figures = None
    data.issues = log.issues
    data.json_shapes = log.shapes
    return data


def rank_files(rf: "RankFiles") -> list:
    """The files `load_rank` reads for one rank (read ahead by the pool: `loaders.dispatch.map_ranks`)."""
    return [p for ps in rf.files.values() for p in ps]


def load_run(layout: "RunLayout", jobs: int = 1,
             progress: Optional[Callable[[int, int], None]] = None, scheduler: Optional[str] = None,
             derive: Optional[Callable[[RankData], Any]] = None) -> Run:
    """Load every rank of `layout` and the run-level files. The ranks are loaded by `load_rank` (one pure function
    per rank, a picklable summary back): in `jobs` processes when the run is large, or on the Dask cluster at
    `scheduler` (`loaders.dispatch`)."""
    root = layout.root
    lay = get(layout.layout)
    issues: list[DataIssue] = list(layout.issues)
    items = sorted(layout.ranks.items())

    def load_all() -> dict[int, RankData]:
        # without a cache (--no-cache) the ranks read elsewhere are unpickled here with the collector paused, as
        # `map_cached` does with one: else its full passes over every rank read so far (~0.1 s each at 128 ranks,
        # more with more ranks) run as they arrive
        least = PARALLEL_MIN_RANKS
        if jobs > 1 and 2 <= len(items) < least and data_bytes([p for _, rf in items for p in rank_files(rf)]) >= \
                POOL_MIN_BYTES:
            least = 2
        pause = active() is None and (scheduler not in (None, "local") or (jobs > 1 and len(items) >= least))
        with gc_paused(pause, long_lived=True):
            return {d.info.rank: d for d in map_cached(load_rank, [rf for _, rf in items],
                                                      (root, layout.layout, derive), jobs=jobs, scheduler=scheduler,
                                                      files=rank_files, min_parallel=least, progress=progress)}

    with run_root(root):
        ranks, stage_sets = lay.load_ranks(layout, issues, load_all)
        compare_shapes(ranks, issues)
        lay.run_pass(ranks, issues)
        if type(lay).run_pass is not Layout.run_pass:  # a run-level pass may change what the figures were made of
            for d in ranks.values():  # (Kineto's matching rebuilds the communication frames): made again on use
                d.figures = None
        strat = _load_strategy(layout, ranks, issues)
    if strat is not None and not stage_sets and len(strat.stage_devices) > 1:
        stage_sets = [sorted(s) for s in strat.stage_devices]
    info = build_run_info(layout, ranks, stage_sets, lay.label)
    dsrc = next((d.info.distributed_args_source for _, d in sorted(ranks.items()) if d.info.distributed_args), "")
    if dsrc and info.parallel_mode_source == "profiler_metadata.json distributed_args":
        info.parallel_mode_source = dsrc  # the DB export's META_DATA, or the layout inferred from its HCCL group
    if strat is not None:
        info.parallel_mode_raw = info.parallel_mode_raw or strat.parallel_type
        if len(strat.stage_devices) > 1 and stage_sets == [sorted(s) for s in strat.stage_devices]:
            info.stage_source = N_("the stage layout of the parallel_strategy files (stageDevices)")
    return Run(root=root, info=info, ranks=ranks, issues=issues, strategy=strat)


def _load_strategy(layout: "RunLayout", ranks: dict[int, RankData], issues: list[DataIssue]):
    files = {r: rf.files["parallel_strategy.json"][0] for r, rf in layout.ranks.items()
             if rf.files.get("parallel_strategy.json")}
    if not files:
        return None
    log = IssueLog(layout.root)
    size = next((d.info.rank_size for d in ranks.values() if d.info.rank_size), None)
    out = safe.load_parallel_strategy(files, log, size)
    issues.extend(log.issues)
    return out


def default_jobs() -> int:
    """All cores (the per-rank loading is CPU-bound and each worker holds one rank's files at a time)."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def timeline_ranks(layout: "RunLayout") -> list[int]:
    """Ranks that have an operator timeline."""
    return get(layout.layout).timeline_ranks(layout)


def load_execution(layout: "RunLayout", run: Run, steps: list[int], reasons: dict[int, str], ranks: list[int],
                   skipped: list[int], jobs: int = 1) -> Optional[ExecutionData]:
    """The device operators of `steps` on `ranks` (two streamed passes per rank; only those steps are kept).
    Chosen steps a rank's timeline does not have fall back to the timeline's own steps (see the notes). The
    ranks' passes of the operator timelines run in `jobs` local processes (`_timeline_execution`)."""
    if not ranks:
        return None
    log = IssueLog(layout.root)
    data = ExecutionData(steps=list(steps), reasons=dict(reasons), ops={}, ranks=list(ranks),
                         skipped_ranks=list(skipped))
    with run_root(layout.root):
        found = get(layout.layout).load_execution(layout, run, data, ranks, log, jobs=jobs)
        if found is not None:
            run.issues.extend(log.issues)
            return data if found else None
        return _timeline_execution(layout, run, data, ranks, log, jobs)


EXEC_MIN_PARALLEL = 4  # ranks of the execution view read in a process pool (with jobs > 1) from this many,
EXEC_MIN_POOL_BYTES = dispatch.POOL_MIN_BYTES  # and their traces this large together


def _timeline_execution(layout: "RunLayout", run: Run, data: ExecutionData, ranks: list[int], log: IssueLog,
                        jobs: int = 1) -> Optional[ExecutionData]:
    """`load_execution` from the operator timelines (trace_view.json, *_timeline_display, gpu_timeline_display).
    Each rank's passes are one pure call (`_exec_job`: pass 1, `_layout_job`, then pass 2, `_ops_job`, for the
    chosen steps its timeline has, over one parse of its trace; their results and data-quality entries back), so
    the ranks run in the local pool (`loaders.dispatch.map_ranks`, `jobs`) and the main process only picks the
    steps after them (where no timeline has a chosen step, each rank's pass 2 runs again for the step picked then);
    every pass goes through the cache beside the output (`rankcache.memo`, in the process that runs it); the
    entries are added to `log` in rank order, as one process adds them: every rank's pass 1, then their pass 2."""
    root = layout.root
    lays, seconds = {}, {}
    if jobs > 1 and data_bytes([exec_trace(layout.ranks[r]) for r in ranks]) < EXEC_MIN_POOL_BYTES:
        jobs = 1  # small traces: read here
    jobs_ = [(r, exec_trace(layout.ranks[r]), rank_files(layout.ranks[r]),
              run.ranks[r].step_trace if r in run.ranks else None, layout.ranks[r].first("output_timeline_data.txt"),
              list(data.steps)) for r in ranks]
    for (r, *_), (lay, issues, got, issues2) in zip(jobs_, _passes(_exec_job, jobs_, root, jobs)):
        log.issues.extend(issues)
        if lay is not None:
            lays[r], seconds[r] = lay, ({} if got is None else got, issues2)  # (none of the steps: no operators)
    if not lays:
        return None
    wanted = [s for s in data.steps if any(s in lay.windows for lay in lays.values())]
    if not wanted:  # the timeline numbers its steps differently (or has none): use the middle one it has
        common = sorted(set.intersection(*(set(lay.windows) for lay in lays.values())))
        pool = common or sorted(next(iter(lays.values())).windows)
        pick = pool[len(pool) // 2]
        if data.steps:
            data.notes.append(f"steps {', '.join(map(str, data.steps))} are not in the timelines; step {pick} "
                              "of the timelines is shown")
        wanted = [pick]
        data.reasons[pick] = ("the whole profiled window (the timelines mark no steps)" if pick == step_ops.WHOLE
                              else "the middle step of the timelines")
        jobs_ = [(r, exec_trace(layout.ranks[r]), rank_files(layout.ranks[r]), lay, wanted)
                 for r, lay in lays.items()]
        seconds = dict(zip(lays, _passes(_ops_job, jobs_, root, jobs)))
    data.steps = wanted
    for r, (got, issues) in seconds.items():
        path = exec_trace(layout.ranks[r])
        log.issues.extend(issues)
        if path is not None and path.name.startswith("gpu_timeline_display"):
            got = gpu.operator_lane(got)
        for s, o in got.items():
            data.ops.setdefault(s, {})[r] = o
        missing = [s for s in wanted if s not in got]
        if missing:
            data.notes.append(f"rank {r}: no operators in step(s) {', '.join(map(str, missing))} of its timeline")
    run.issues.extend(log.issues)
    return data


class _Miss(Exception):
    """A pass not in the cache (`_passes` looks before it sends the pass to the pool)."""


def _miss(_log):
    raise _Miss


def _passes(fn, items: list, root: Path, jobs: int) -> list:
    """`fn(item, root, folder)` of every item, in order: the ones the cache beside the output holds read here (a rebuild
    starts no pool), the others in the local pool (`map_ranks`); the cache's folder goes with each call (a worker
    started by spawn does not inherit it)."""
    folder = active()
    out: list = [None] * len(items)
    todo = []
    for i, item in enumerate(items):
        try:
            out[i] = fn(item, root, folder, _miss)
        except _Miss:
            todo.append(i)
    for i, got in zip(todo, map_ranks(fn, [items[i] for i in todo], (root, folder), jobs=jobs,
                                      min_parallel=EXEC_MIN_PARALLEL, files=_trace_of)):
        out[i] = got
    return out


def _trace_of(job: tuple) -> list:
    """The file a job of `_passes` reads (its trace, second in the tuple): read ahead by `map_ranks`."""
    return [job[1]] if job[1] is not None else []


def _exec_job(job: tuple, root: Path, folder: Optional[Path], on_miss=None) -> tuple:
    """Both passes of one rank, its trace parsed once (`traces.shared_reads`): (its layout, pass 1's data-quality
    entries, its operators in the steps of `steps` its timeline has -- None when it has none of them -- and pass
    2's entries). Pass 2 of the steps the timeline has gives what it gives of the steps any timeline has (a step
    outside the rank's windows adds nothing)."""
    r, path, files, st, txt, steps = job
    with shared_reads():
        lay, issues = _layout_job((r, path, files, st, txt), root, folder, on_miss)
        own = [s for s in steps if s in lay.windows] if lay is not None else []
        if not own:
            return lay, issues, None, []
        got, issues2 = _ops_job((r, path, files, lay, own), root, folder, on_miss)
    return lay, issues, got, issues2


def _layout_job(job: tuple, root: Path, folder: Optional[Path], on_miss=None) -> tuple:
    """Pass 1 of one rank (`step_ops.trace_layout`), cached beside the output keyed by all of the rank's files (the
    step trace comes from them): (its layout, the data-quality entries it added). `on_miss`: called instead of
    the pass when the cache does not hold it."""
    r, path, files, st, txt = job
    log = IssueLog(root)
    with run_root(root), use(folder):
        lay = memo("trace_layout", files, r, log, on_miss or (lambda lg: safe.trace_layout(path, lg, st, txt)))
    return lay, log.issues


def _ops_job(job: tuple, root: Path, folder: Optional[Path], on_miss=None) -> tuple:
    """Pass 2 of one rank (`step_ops.read_step_ops`): (its step operators, the data-quality entries it added)."""
    r, path, files, lay, wanted = job
    log = IssueLog(root)
    with run_root(root), use(folder):
        got = memo("read_step_ops", files, (r, wanted), log,
                   on_miss or (lambda lg: safe.read_step_ops(path, r, lay, wanted, lg)))
    return got, log.issues
