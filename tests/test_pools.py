"""Stopping a process pool never hangs, even when a worker dies in the middle of sending its result (CI saw the
Ctrl-C test hang for 30 s on that: the executor's manager thread kept reading half a message)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import gc, struct, time
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing.queues import SimpleQueue
    from reportgen.pools import ignore_sigint, stop_pool

    def half_a_result(_):
        # what a worker killed mid-send leaves behind: a header announcing 1 MB, then a few bytes of it
        results = next(o for o in gc.get_objects() if isinstance(o, SimpleQueue))  # the worker's only one
        results._writer._send(struct.pack("!i", 1 << 20) + b"x" * 10)
        time.sleep(600)

    if __name__ == "__main__":
        ex = ProcessPoolExecutor(max_workers=1, initializer=ignore_sigint)
        fut = ex.submit(half_a_result, 0)
        time.sleep(1.5)  # the manager thread is now blocked reading the rest of the message
        thread = ex._executor_manager_thread
        t0 = time.monotonic()
        stop_pool(ex)
        print("stopped", round(time.monotonic() - t0, 2), "thread alive:", thread.is_alive(), flush=True)
""")


def test_stop_pool_ends_the_manager_thread_after_a_half_sent_result(tmp_path):
    script = tmp_path / "half.py"
    script.write_text(SCRIPT)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "thread alive: False" in r.stdout, r.stdout
    took = float(r.stdout.split()[1])
    assert took < 3.0, took


def test_a_ctrl_c_while_workers_are_forked_is_raised_after_it():
    """Before: a SIGINT that landed in the interpreter's fork hooks was printed and dropped ("Exception ignored in
    _releaseLock") and the build ran on to the end with exit code 0."""
    import os
    import signal

    import pytest

    from reportgen.pools import deferred_sigint

    # Python's own handler, as in a process started from a terminal (a test run started with SIGINT ignored, as a
    # shell's background job is, has none: SIGINT stays ignored there, which deferred_sigint keeps as it found it)
    started = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            with deferred_sigint():
                os.kill(os.getpid(), signal.SIGINT)  # delivered now, held back by the handler
                after = True  # the block runs to its end
        assert after
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        with deferred_sigint():  # nothing pressed: nothing raised
            pass
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        with deferred_sigint():
            pass
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # (an ignored SIGINT stays ignored)
    finally:
        signal.signal(signal.SIGINT, started)


SIZES_MB = (4, 8, 12, 16, 20, 24)  # (growing: glibc's own threshold follows a size met before)


def _refaults() -> int:
    """Page faults of blocks of SIZES_MB taken, written and freed one after the other in this process."""
    import resource

    r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for mb in SIZES_MB:
        b = bytearray(mb << 20)
        b[::4096] = b"\x01" * len(range(0, mb << 20, 4096))
        del b
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0


def test_a_pool_worker_keeps_what_it_frees_for_the_next_rank():
    """`init_worker` (both pools' initializer) lets glibc's malloc keep freed blocks up to HEAP_KEEP_BYTES: a worker
    that frees one rank's objects takes the next rank's from its heap (fresh pages only where it grows), where a
    process without it maps and faults in every larger block again (256 faults a MB)."""
    import platform
    from concurrent.futures import ProcessPoolExecutor

    from reportgen.pools import init_worker

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("mallopt's thresholds are glibc's")
    import multiprocessing

    spawn = multiprocessing.get_context("spawn")  # (a fork would inherit this process's heap and thresholds)
    with ProcessPoolExecutor(1, mp_context=spawn, initializer=init_worker) as ex:
        kept = ex.submit(_refaults).result()
    with ProcessPoolExecutor(1, mp_context=spawn) as ex:
        fresh = ex.submit(_refaults).result()
    assert fresh >= sum(SIZES_MB) * 256 * 0.9  # every block's pages faulted in again
    assert kept < fresh / 2  # the heap grows to the largest block, once


def _square(x: int, k: int) -> int:
    return x * x + k


@pytest.mark.parametrize("jobs", [1, 2])
def test_map_ranks_reads_every_items_files_ahead_and_returns_the_same_results(jobs, monkeypatch):
    """`files(item)` is asked (in this process) for the items' files, each item once, in order, while the results
    stay what `fn` gives, in order: here and in a pool (ahead of the workers)."""
    from reportgen.loaders import dispatch

    asked: list = []
    monkeypatch.setattr(dispatch, "prefetch", lambda paths: asked.extend(paths))
    items = list(range(23))
    got = list(dispatch.map_ranks(_square, items, (3,), jobs=jobs, files=lambda i: [f"f{i}"]))
    assert got == [i * i + 3 for i in items]
    # one rank ahead here (the first is read at once), AHEAD_PER_JOB x jobs ahead in the pool
    assert asked == [f"f{i}" for i in (items[1:] if jobs == 1 else items)]


def test_prefetch_advises_regular_files_only_and_never_blocks(tmp_path, monkeypatch):
    """Only a regular file is read ahead (at most PREFETCH_MAX_BYTES of it): a FIFO (opening it to read could
    block), a link, a folder and a missing path are passed over without an error."""
    import os

    from reportgen.loaders import files

    if not hasattr(os, "posix_fadvise") or not hasattr(os, "mkfifo"):
        pytest.skip("no posix_fadvise / mkfifo here")
    plain = tmp_path / "trace_view.json"
    plain.write_bytes(b"[]" * 1000)
    big = tmp_path / "big.csv"
    with open(big, "wb") as f:
        f.truncate(files.PREFETCH_MAX_BYTES + 4096)  # (sparse)
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "link").symlink_to(plain)
    seen: list = []
    monkeypatch.setattr(os, "posix_fadvise",
                        lambda fd, off, n, advice: seen.append((os.fstat(fd).st_ino, off, n, advice)))
    files.prefetch([plain, tmp_path / "fifo", tmp_path / "link", tmp_path, tmp_path / "missing", big])
    assert seen == [(plain.stat().st_ino, 0, 2000, os.POSIX_FADV_WILLNEED),
                    (big.stat().st_ino, 0, files.PREFETCH_MAX_BYTES, os.POSIX_FADV_WILLNEED)]


def test_gc_paused_long_lived_moves_what_the_block_made_to_the_oldest_generation():
    """`gc_paused(long_lived=True)`: the objects made in the block skip the young generations' passes (they are in
    the oldest generation as it ends); nothing is frozen after it; a caller's frozen objects are left frozen."""
    import gc

    from reportgen.pools import gc_paused

    class Obj:
        pass

    was, thresholds = gc.isenabled(), gc.get_threshold()
    gc.enable()
    gc.set_threshold(1_000_000, 1000, 1000)  # (no collection of its own during the test)
    try:
        with gc_paused(long_lived=True):
            assert not gc.isenabled()
            kept = [Obj() for _ in range(100)]
        assert gc.isenabled() and gc.get_freeze_count() == 0
        assert any(o is kept[0] for o in gc.get_objects(generation=2))
        with gc_paused():
            young = [Obj() for _ in range(100)]
        assert not any(o is young[0] for o in gc.get_objects(generation=2))  # (without: as they were)
        gc.freeze()
        n = gc.get_freeze_count()
        with gc_paused(long_lived=True):
            more = [Obj() for _ in range(100)]
        assert gc.get_freeze_count() == n and not any(o is more[0] for o in gc.get_objects(generation=2))
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
        if not was:
            gc.disable()
