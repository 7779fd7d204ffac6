"""Process pools that stop at once: Ctrl-C (or a failure) must not wait for queued or running work, and must
never leave the interpreter unable to exit.

Both pools of a build (the rank loaders, `loaders.dispatch`, and the rank-page writers, `site.render.builder`) start
their workers with `init_worker` (`ignore_sigint`: a terminal sends SIGINT to the whole process group; the main
process decides; and `keep_heap`) and stop them with `stop_pool`; so does `Beside`, one call in a forked copy of
this process (the analysis' waits, beside the rest of it). `gc_paused`: the cyclic collector paused over a
block that makes many objects and no cycle (the loaders' parses, the ranks read back in the main process).
"""

from __future__ import annotations

import ctypes
import gc
import multiprocessing
import signal
import threading
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Iterator


def ignore_sigint() -> None:
    """A pool worker's initializer: Ctrl-C is the main process's to handle."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


HEAP_KEEP_BYTES = 64 * 1024 * 1024
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters


def keep_heap() -> None:
    """Let glibc's malloc keep what a worker frees, up to HEAP_KEEP_BYTES, for the next rank (elsewhere: nothing).

    A worker parses one rank's files after the other: a 3.6 MB trace_view.json becomes ~16 MB of objects, freed
    before the next rank. By default glibc gives every block above 128 KB (the file's bytes, the lists, the dicts'
    tables) back to the system and takes fresh pages again for the next file: ~4,700 page faults, ~9 ms of system
    time a trace. Blocks below HEAP_KEEP_BYTES now come from the heap and a heap's free top is kept up to that
    size (~700 faults, ~3 ms); a worker's memory stays that of its largest rank plus at most HEAP_KEEP_BYTES."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except Exception:  # noqa: BLE001 -- no C library to name or no mallopt in it (macOS, Windows): nothing to do
        return
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    mallopt(_M_MMAP_THRESHOLD, HEAP_KEEP_BYTES)
    mallopt(_M_TRIM_THRESHOLD, HEAP_KEEP_BYTES)


def init_worker() -> None:
    """A pool worker's initializer (`ignore_sigint`, `keep_heap`)."""
    ignore_sigint()
    keep_heap()


@contextmanager
def gc_paused(pause: bool = True, long_lived: bool = False) -> Iterator[None]:
    """Python's cyclic garbage collector paused inside the block (`pause` false: left as it is), on again after it if
    it was on. For blocks that make many objects and no cycle (a parse, cache entries read back, worker results
    unpickled): reference counting frees them, and the collector's passes over them as they are made cost up to a
    quarter of a parse (~50,000 objects a 3.6 MB trace), full passes over every rank read so far a third of reading
    1,024 cache entries. `long_lived`: what the block made is kept (a run's ranks): moved to the collector's oldest
    generation as the block ends (`gc.freeze` then `gc.unfreeze`), not traversed by the young generations' passes
    that come next (~0.5 s for the ~1.5 million objects of 1,024 cached ranks: a pass of the youngest generation
    over all of them, then one of the middle one). Unless objects are frozen already (the caller's: left so)."""
    on = pause and gc.isenabled()
    if on:
        gc.disable()
    try:
        yield
    finally:
        if on:
            if long_lived and not gc.get_freeze_count():
                gc.freeze()
                gc.unfreeze()
            gc.enable()


@contextmanager
def deferred_sigint() -> Iterator[None]:
    """Hold a Ctrl-C back while workers are forked and raise it right after.

    A KeyboardInterrupt raised inside the interpreter's fork hooks is printed and dropped ("Exception ignored in
    _releaseLock"): the build then ran on to the end as if Ctrl-C had never been pressed. Only the main thread
    handles signals; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pressed: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: pressed.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if pressed:
        raise KeyboardInterrupt


def stop_pool(ex: ProcessPoolExecutor, grace: float = 1.0) -> None:
    """Cancel what is queued, kill the workers and make sure the executor's manager thread ends.

    A worker killed while it sends a result leaves half a message in the result pipe; the manager thread then
    blocks reading the rest, and interpreter exit (which joins that thread) waits for ever. Once every worker is
    gone, closing this process's copy of the pipe's write end makes that read see end-of-file: the pool is
    marked broken and the thread ends."""
    procs = list((getattr(ex, "_processes", None) or {}).values())
    results = getattr(ex, "_result_queue", None)  # shutdown() drops the executor's reference; keep ours
    thread = getattr(ex, "_executor_manager_thread", None)
    ex.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        p.terminate()
    for p in procs:
        p.join(timeout=grace)
    if results is not None and not any(p.is_alive() for p in procs):
        try:
            results._writer.close()
        except OSError:
            pass
    if thread is not None:
        thread.join(timeout=grace)


def can_fork() -> bool:
    """Whether work can be handed to a forked copy of this process (POSIX; not Windows)."""
    return "fork" in multiprocessing.get_all_start_methods()


_CALL: dict = {}  # what `Beside`'s process runs: set just before it is forked, inherited (never pickled)


def _call_forked():
    fn, args, kw = _CALL["call"]
    return fn(*args, **kw)


class Beside:
    """`fn(*args, **kw)` run in a forked copy of this process while this one goes on (`result()`: its value, or
    the exception it raised; a process that died: `BrokenProcessPool`). The arguments are the forked process's
    own copy of this one's objects, never pickled (a loaded run: hundreds of MB); the value comes back pickled.
    Stopped at once by `close()` (or a failure, or Ctrl-C, in `result()`), as the build's other pools are."""

    def __init__(self, fn, *args, **kw) -> None:
        _CALL["call"] = (fn, args, kw)
        self.ex = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"),
                                      initializer=init_worker)
        try:
            with deferred_sigint():  # (the process is forked at the submit)
                self.fut = self.ex.submit(_call_forked)
        except BaseException:
            stop_pool(self.ex)
            raise
        finally:
            _CALL.clear()

    def result(self):
        try:
            return self.fut.result()
        finally:
            self.close()

    def close(self) -> None:
        if self.fut.done():
            self.ex.shutdown()
        else:
            stop_pool(self.ex)


__all__ = ["Beside", "can_fork", "deferred_sigint", "gc_paused", "ignore_sigint", "init_worker", "keep_heap",
           "stop_pool"]


def release_freed_memory() -> None:
    """Hand the heap's free pages back to the system (glibc's `malloc_trim`; nothing elsewhere). The analysis
    frees hundreds of MB of temporary frames at 1,024 ranks; glibc keeps them mapped (arrays under its adaptive
    mmap threshold live on the heap), so the process would hold its peak for the rest of the build. ~20 ms."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (macOS, musl, Windows): nothing to do
        pass
