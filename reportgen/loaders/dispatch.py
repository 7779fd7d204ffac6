"""Where the per-rank loading runs: this process, a local process pool (`-j N`), or a Dask cluster
(`--scheduler tcp://HOST:PORT`).

`layouts.load_rank(rank_files, root, layout)` is a pure function of one rank's files that returns a compact,
picklable `RankData` (the rank's summary: step phases, operator-type and per-operator tables, communication per
operator and link, the downsampled memory curve, data-quality entries; tens of KB per rank, never the raw rows).
So the same call runs on one core, on all cores, or on the workers of a Dask cluster; the cluster analysis
only ever sees the summaries. Results come back in rank order whatever order they finish in.
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable, Iterable, Iterator, Optional

from reportgen.errors import ReportError
from reportgen.loaders.files import prefetch
from reportgen.pools import deferred_sigint, init_worker, stop_pool

DASK_INSTALL = 'pip install "msreport[dask]"'
LOCAL = "local"


class SchedulerError(ReportError):
    """The Dask scheduler cannot be used (Dask missing, or the address unreachable)."""


def dask_available() -> bool:
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


def check_scheduler(scheduler: Optional[str]) -> Optional[str]:
    """None when `scheduler` can be used, else a one-line reason (the CLI prints it and exits with 2)."""
    if scheduler in (None, LOCAL):
        return None
    if "://" not in scheduler:
        return f"--scheduler takes 'local' or a Dask scheduler address such as tcp://HOST:8786, not {scheduler!r}"
    if not dask_available():
        return f"--scheduler {scheduler} needs Dask's distributed scheduler: {DASK_INSTALL}"
    return None


POOL_MIN_BYTES = 16 * 1024 * 1024  # files read in the local pool (jobs > 1) from this many bytes together
# (`files.data_bytes`: a gzip by what it holds): a pool costs ~0.1 s to start; the ranks' load below
# `layouts.run.PARALLEL_MIN_RANKS` and the execution view's traces (both layouts) go by it
AHEAD_PER_JOB = 4  # the pool's files are read ahead this many items a worker beyond the last result taken


def map_ranks(fn: Callable, items: list, args: tuple, *, jobs: int = 1, scheduler: Optional[str] = None,
              min_parallel: int = 1, progress: Optional[Callable[[int, int], None]] = None,
              files: Optional[Callable[[Any], Iterable]] = None) -> Iterator:
    """`fn(item, *args)` for every item, in order: on a Dask cluster when `scheduler` is an address, in `jobs`
    local processes when `jobs > 1` and there are at least `min_parallel` items, else here. `files(item)`: the
    files `fn` reads for the item, read ahead into the page cache (`loaders.files.prefetch`) by this process while
    the items before it are computed (locally; a cluster's workers read their own disks)."""
    total = len(items)
    if scheduler not in (None, LOCAL):
        yield from _on_dask(fn, items, args, scheduler, progress)
    elif jobs > 1 and total >= min_parallel:
        yield from _in_pool(fn, items, args, jobs, progress, files)
    else:
        for i, item in enumerate(items, 1):
            if files is not None and i < total:
                prefetch(files(items[i]))  # (the next item's: the disk reads it while this one is computed)
            yield fn(item, *args)
            if progress:
                progress(i, total)


def _in_pool(fn, items, args, jobs, progress, files=None) -> Iterator:
    """`map_ranks` in a local process pool. Every item is submitted at once (the workers take them in order);
    the results are taken in order. With `files`, the files of the items up to AHEAD_PER_JOB x jobs beyond the
    last result taken are read ahead here (this process waits on results meanwhile): on a run the page cache does
    not hold, a worker otherwise waits on the disk for each rank's files, a core idle for a third of the time."""
    ex = ProcessPoolExecutor(max_workers=min(jobs, len(items)), initializer=init_worker)
    ahead = AHEAD_PER_JOB * jobs if files is not None else 0
    try:
        for item in items[:ahead]:
            prefetch(files(item))
        with deferred_sigint():  # the workers are forked at the first submit
            futs = [ex.submit(fn, item, *args) for item in items]
        for i, fut in enumerate(futs, 1):
            yield fut.result()
            futs[i - 1] = None  # type: ignore[call-overload]  # the summary is the caller's now
            if ahead and i - 1 + ahead < len(items):
                prefetch(files(items[i - 1 + ahead]))
            if progress:
                progress(i, len(items))
    except BaseException:  # Ctrl-C (or a failure): stop the workers now, do not wait for queued ranks
        stop_pool(ex)
        raise
    ex.shutdown()


def _on_dask(fn, items, args, address, progress) -> Iterator:
    try:
        from distributed import Client
    except ImportError:
        raise SchedulerError(f"--scheduler {address} needs Dask's distributed scheduler: {DASK_INSTALL}") from None
    try:
        client = Client(address, timeout="10s", set_as_default=False)
    except (OSError, TimeoutError) as e:
        raise SchedulerError(f"cannot reach the Dask scheduler at {address}: {e}") from None
    try:
        futs = client.map(fn, items, *[[a] * len(items) for a in args], pure=False)
        for i, fut in enumerate(futs, 1):  # all run on the cluster at once; collected in rank order
            yield fut.result()
            fut.release()
            futs[i - 1] = None
            if progress:
                progress(i, len(items))
    finally:
        client.close()


__all__ = ["DASK_INSTALL", "LOCAL", "SchedulerError", "check_scheduler", "dask_available", "map_ranks"]
