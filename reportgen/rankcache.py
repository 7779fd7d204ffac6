"""Per-rank summaries cached beside the report, so a second build of the same run (another `--lang`, other
thresholds with `--set`, a new page) reads no profiler file again (issue 33).

`map_cached(load, items, args, ...)` is `loaders.dispatch.map_ranks` with a cache: each rank's `RankData` (the
picklable summary `load` returns) is stored in one file per rank under the cache folder (`folder_for(out)`: a
hidden folder beside the output, `.<name>.msreport-cache/`, so it survives the report folder being replaced).
An entry is used only when its key equals the key of the rank now:

* the msreport version, a hash of msreport's own source files (a changed loader in a development checkout
  invalidates too), the versions of Python, NumPy, pandas and pyarrow (the pickled frames), orjson and msgspec
  (the JSON readers);
* the run folder, the layout, the rank's number, host, device and folder;
* size and modification time (ns) of every file discovery gave the rank and of every file and folder at most
  three levels under the rank's own folder (files a loader finds by itself, such as PROF_*/device_*/info.json.0),
  when no other rank shares that folder.

So adding ranks reads only the new ones, adding steps (the rank's files grow) re-reads only those ranks, and a
new msreport never trusts an old entry. Entries are written atomically (a temporary file renamed over the entry).
Anything wrong with an entry -- unreadable, truncated, not a pickle, a key that differs, a different owner, a
folder others may write to -- makes it a miss: the rank is read from its files and the entry written again; the
cache never stops a build (a folder that cannot be written only means no cache). Entries are pickles (compressed,
`CODEC`), so only folders and files owned by the current user and not writable by others are read. Every plain
frame of an entry is pickled packed (`framepack.dumps`): entries are small and quick to read.

Hits are read in this process (no worker round trip); misses go to `map_ranks` (the local pool or the Dask
cluster) wrapped by `_load_and_store`, which writes the entry where the rank was read.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import hashlib
import io
import logging
import multiprocessing
import os
import pickle
import signal
import stat
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Callable, Iterator, Optional

from reportgen import framepack, sealed
from reportgen.pools import can_fork, gc_paused

log = logging.getLogger("msreport")

FORMAT = 6  # bump when the entry layout changes (3: packed frames share their Index; 4: RankData.figures;
#            5: RankFigures.arrival; 6: the communication frames sealed, sealed.Sealed)
# an entry: the pickled key, the pickled (codec, size of the pickled data, CRC-32 of what follows), then the pickled
# data compressed with the codec ("raw": as it is; entries of 4 KB or less). LZ4 (pyarrow's): a 1,600-operator rank's ~390 KB in
# ~70-250 KB, decompressed in ~50 µs (zstd: a little smaller, 3x slower to read)
CODEC = "lz4"
WALK_DEPTH = 3  # levels under a rank's own folder whose files and folders key its entry
MAX_WALK_ENTRIES = 4096  # a rank folder with more entries is keyed by its discovered files and top folders only
SUFFIX = ".msreport-cache"

_active: Optional[Path] = None
_recorded: Optional[list] = None  # the keys of the ranks served inside a `recording` block (None: not recording)


def folder_for(out: Path) -> Path:
    """The cache folder of the report written to `out` (a site folder or a single HTML file): beside it."""
    out = Path(out).absolute()
    return out.parent / f".{out.name}{SUFFIX}"


@contextlib.contextmanager
def use(folder: Optional[Path]):
    """Cache the ranks loaded inside the block under `folder` (None: no cache)."""
    global _active
    prev, _active = _active, (Path(folder) if folder is not None else None)
    try:
        yield
    finally:
        settle()
        _active = prev


def active() -> Optional[Path]:
    """The enclosing `use` block's folder; None without one, or where a symbolic link was planted in its place."""
    return None if _active is not None and _active.is_symlink() else _active


@contextlib.contextmanager
def recording():
    """Collect the key of every rank `map_cached` serves inside the block (hit or miss), in order; a rank served
    without the cache adds None. The inputs of a whole-run result (`run_memo`)."""
    global _recorded
    prev, _recorded = _recorded, []
    try:
        yield _recorded
    finally:
        _recorded = prev


@functools.lru_cache(maxsize=1)
def environment_key() -> str:
    """What makes an entry written by another msreport, Python or library untrustworthy."""
    import msgspec, numpy, orjson, pandas, pyarrow  # noqa: E401 -- the frames' libraries and the JSON readers

    from reportgen import __version__

    return "|".join((str(FORMAT), __version__, code_digest(Path(__file__).resolve().parent), sys.version,
                     numpy.__version__, pandas.__version__, pyarrow.__version__, orjson.__version__,
                     msgspec.__version__))


def code_digest(root: Path) -> str:
    """A digest of the package's source and of the data files it reads (`data/`: the peak table the analysis reads
    is a file users edit): another copy of either makes another key."""
    h = hashlib.sha256()
    data = root / "data"
    for p in sorted([*root.rglob("*.py"), *(q for q in data.rglob("*") if q.is_file())]):
        try:
            h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
        except OSError:
            h.update(str(p).encode() + b"\0unreadable\0")
    return h.hexdigest()


def _stat_key(p: Path) -> tuple:
    try:
        st = os.stat(p)
    except OSError:
        return (str(p), None)
    return (str(p), st.st_size, st.st_mtime_ns, stat.S_IFMT(st.st_mode))


def _walk_key(top: Path) -> tuple:
    """(path, size, mtime) of every entry at most WALK_DEPTH levels under `top`, in a fixed order."""
    out: list = []
    todo = [(top, 0)]
    while todo:
        d, depth = todo.pop()
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            out.append((str(d), None))
            continue
        for e in entries:
            try:
                st = e.stat(follow_symlinks=True)
            except OSError:
                out.append((e.path, None))
                continue
            out.append((e.path, st.st_size, st.st_mtime_ns, stat.S_IFMT(st.st_mode)))
            if stat.S_ISDIR(st.st_mode) and depth + 1 < WALK_DEPTH:
                todo.append((Path(e.path), depth + 1))
            if len(out) > MAX_WALK_ENTRIES:
                return ("too many entries",)
    return tuple(out)


def rank_key(rf, root_abs: str, layout: str, shared: bool, dir_abs: str) -> tuple:
    """The key of rank `rf`'s entry. `root_abs`, `dir_abs`: the run's and the rank's folders as
    `str(Path(...).absolute())` gives them (made once by the caller: each asks the OS for the working folder)."""
    files = tuple(sorted((family, _stat_key(p)) for family, paths in rf.files.items() for p in paths))
    walk = _walk_key(Path(rf.dir)) if not shared else ("shared folder",)
    return (environment_key(), root_abs, layout, rf.rank, rf.host, rf.device, dir_abs,
            _stat_key(Path(rf.dir)) if not shared else None, files, walk)


def entry_path(folder: Path, key: tuple) -> Path:
    """One file per rank (its folder, number and layout): a new key replaces the rank's old entry."""
    ident = repr((key[1], key[2], key[3], key[6])).encode()
    return folder / f"rank-{key[3]}-{hashlib.sha256(ident).hexdigest()[:16]}.pkl"


def _trusted(p: Path) -> bool:
    """Owned by this user and not writable by group or others (a pickle runs code when read)."""
    if not hasattr(os, "getuid"):
        return True
    try:
        st = os.stat(p)
    except OSError:
        return False
    return st.st_uid == os.getuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def read_entry(path: Path, key: tuple):
    """The cached RankData when the entry exists, is trusted and was written for `key`; else None."""
    body = _read_body(path, key)
    if body is None:
        return None
    try:
        return pickle.loads(body)
    except Exception as e:  # noqa: BLE001  # a damaged entry is a miss, whatever it raises
        log.debug("rank cache entry %s ignored: %s: %s", path, type(e).__name__, e)
        return None


def _read_body(path: Path, key: tuple) -> Optional[bytes]:
    """The pickled data of the entry at `path` when it exists, is trusted, was written for `key` and is whole."""
    try:
        if not (_trusted(path.parent) and _trusted(path)):
            return None
        with open(path, "rb") as f:  # (read whole, then parsed from memory: ~2x quicker than from the file)
            data = f.read()
        buf = io.BytesIO(data)
        if pickle.load(buf) != key:
            return None
        codec, size, crc = pickle.load(buf)
        body = memoryview(data)[buf.tell():]  # (not copied)
        if zlib.crc32(body) != crc:  # a damaged entry is a miss, never other numbers
            return None
        body = sealed.codec(codec).decompress(body, decompressed_size=size, asbytes=True) if codec != "raw" else bytes(body)
        if len(body) != size:
            return None
        return body
    except Exception as e:  # noqa: BLE001  # a damaged entry is a miss, whatever it raises
        log.debug("rank cache entry %s ignored: %s: %s", path, type(e).__name__, e)
        return None


def write_entry(path: Path, key: tuple, data, body: Optional[bytes] = None) -> None:
    """Write atomically (a temporary file renamed over the entry); any failure leaves no entry, never raises.
    `body`: `data` pickled by `framepack.dumps` already."""
    tmp = None
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        if body is None:
            body = framepack.dumps(data)
        codec = None
        if len(body) > 4096:
            with contextlib.suppress(Exception):  # a pyarrow without the codec: the entry as it is
                codec = sealed.codec(CODEC)
        stored = codec.compress(body, asbytes=True) if codec is not None else body
        with os.fdopen(fd, "wb") as f:
            pickle.dump(key, f, protocol=pickle.HIGHEST_PROTOCOL)
            pickle.dump((CODEC if codec is not None else "raw", len(body), zlib.crc32(stored)), f,
                        protocol=pickle.HIGHEST_PROTOCOL)
            f.write(stored)
        os.replace(tmp, path)
        tmp = None
    except Exception as e:  # noqa: BLE001  # the cache is optional: a full disk or a read-only folder is no error
        log.debug("rank cache entry %s not written: %s: %s", path, type(e).__name__, e)
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


class Pickled:
    """A rank's data as `framepack.dumps` pickled it for its entry, sent back from the worker as those bytes: the frames
    are packed once (for the entry), not a second time for the trip to the main process (~4 ms a rank)."""

    __slots__ = ("body",)

    def __init__(self, body: bytes):
        self.body = body

    def __reduce__(self):
        return (Pickled, (self.body,))

    def data(self):
        return pickle.loads(self.body)


def _load_and_store(load: Callable, path: Path, key: tuple, item, *args):
    data = load(item, *args)
    try:
        body = framepack.dumps(data)
    except Exception as e:  # noqa: BLE001  # data the entry cannot hold: no entry, the data as it is
        log.debug("rank cache entry %s not written: %s: %s", path, type(e).__name__, e)
        return data
    write_entry(path, key, data, body)
    # in the main process (one job, no pool) the data is already where it is needed
    return data if multiprocessing.parent_process() is None else Pickled(body)


def map_cached(load: Callable, items: list, args: tuple, *, folder: Optional[Path] = None, **kw) -> Iterator:
    """`map_ranks(load, items, args, **kw)` through the cache at `folder` (default: the folder of the enclosing
    `use` block; none: no cache). `args` are (root, layout), as `layouts.load_rank` takes them. In rank order."""
    from reportgen.loaders.dispatch import map_ranks

    folder = folder if folder is not None else _active
    if folder is not None and Path(folder).is_symlink():  # a link planted where the cache goes: no cache
        log.debug("rank cache %s is a symbolic link: not used", folder)
        folder = None
    if folder is None or not items:
        if _recorded is not None:
            _recorded.extend([None] * len(items))  # ranks without a key: no whole-run result may be cached
        yield from map_ranks(load, items, args, **kw)
        return
    root, layout = args[0], args[1]
    dirs = [str(Path(rf.dir).absolute()) for rf in items]
    root_abs = str(Path(root).absolute())
    shared = {d for d, n in collections.Counter(dirs).items() if n > 1}
    hits: dict[int, object] = {}
    todo: list[tuple[int, Path, tuple]] = []
    with gc_paused(long_lived=True):  # reading entries makes no cycle: no collection over the ranks read so far
        for i, rf in enumerate(items):
            key = rank_key(rf, root_abs, layout, dirs[i] in shared, dirs[i])
            if _recorded is not None:
                _recorded.append(key)
            path = entry_path(folder, key)
            data = read_entry(path, key)
            if data is not None:
                hits[i] = data
            else:
                todo.append((i, path, key))
    log.debug("rank cache %s: %d of %d rank(s) read from their files", folder, len(todo), len(items))
    progress = kw.pop("progress", None)
    files = kw.pop("files", None)  # (map_ranks's read-ahead of an item's files: the rank's, first in each triple)
    total = len(items)
    # the misses are read (and their entries written) where map_ranks runs them; each keeps its own path and key
    fn = functools.partial(_load_rank, load)
    fresh = map_ranks(fn, [(it, p, k) for (i, p, k), it in zip(todo, (items[i] for i, _, _ in todo))], args,
                      progress=None, files=None if files is None else (lambda t: files(t[0])), **kw)
    # ranks read elsewhere (worker processes, a cluster) only come back here to be unpickled: no collection meanwhile
    elsewhere = (kw.get("scheduler") not in (None, "local")
                 or (kw.get("jobs", 1) > 1 and len(todo) >= kw.get("min_parallel", 1)))
    with gc_paused(elsewhere, long_lived=True):
        done = 0
        for i in range(total):
            data = hits.pop(i, None)
            if data is None:
                data = next(fresh)
                if isinstance(data, Pickled):
                    data = data.data()
            done += 1
            if progress:
                progress(done, total)
            yield data


def _load_rank(load: Callable, job: tuple, *args):  # the name Dask shows for the task (test_scale)
    item, path, key = job
    return _load_and_store(load, path, key, item, *args)


def memo(name: str, files: list, extra: object, log, call: Callable):
    """`call(log)` cached beside the output (the folder of the enclosing `use` block; none: just the call): keyed by
    the environment, `name`, the size and modification time of `files` (the files the call reads) and a digest of
    the pickled `extra` (every other input of the call); the data-quality entries the call adds to `log` are stored
    and added again on a hit. For the execution view's timeline passes (a rebuild reads no trace again)."""
    folder = active()
    if folder is None:
        return call(log)
    try:
        digest = hashlib.sha256(pickle.dumps(extra, protocol=pickle.HIGHEST_PROTOCOL)).hexdigest()
    except Exception:  # noqa: BLE001  # an input that cannot be pickled: no cache for this call
        return call(log)
    paths = sorted({str(Path(p).absolute()) for p in files if p is not None})
    key = (environment_key(), name, tuple(_stat_key(Path(p)) for p in paths), digest)
    path = folder / f"call-{hashlib.sha256(repr((name, paths)).encode()).hexdigest()[:20]}.pkl"
    got = read_entry(path, key)
    if isinstance(got, tuple) and len(got) == 2 and isinstance(got[1], list):
        log.issues.extend(got[1])
        return got[0]
    n = len(log.issues)
    result = call(log)
    write_entry(path, key, (result, log.issues[n:]))
    return result


class _RefPickler(framepack.FramePickler):
    """Pickles the objects of `ids` (by identity) as references (`persistent_id`): a whole-run result keeps no copy
    of the run it was computed from; `_RefUnpickler` resolves them against the objects of the build reading it."""

    def __init__(self, buf, ids: dict) -> None:
        super().__init__(buf, protocol=pickle.HIGHEST_PROTOCOL)
        self._ids = ids

    def persistent_id(self, obj):
        return self._ids.get(id(obj))


class _RefUnpickler(pickle.Unpickler):
    def __init__(self, buf, refs: dict) -> None:
        super().__init__(buf)
        self._refs = refs

    def persistent_load(self, pid):
        return self._refs[pid]  # a reference this build does not have: KeyError, a miss


def run_memo(name: str, ident: str, inputs: object, refs: dict, call: Callable,
             keep: Optional[Callable[[object], bool]] = None, background: bool = False):
    """`call()` cached beside the output (the folder of the enclosing `use` block; none: just the call): a result
    computed from the whole run (the analysis, the findings). Keyed by the environment (`environment_key`: never
    trusted across versions or code), `name` and a digest of the pickled `inputs`, which must name everything the
    call reads (the caller's duty: the ranks' entry keys from `recording`, the settings the call reads). One entry
    per `ident` (the run): a new key replaces it. `refs` ({reference: object}): objects of this build the result may
    hold (the loaded run), stored as references and resolved against this build's `refs` on a hit. A damaged,
    untrusted or unresolvable entry is a miss: the call runs and the entry is written again. `keep(result)` false:
    the result is not stored. `background`: stored by a forked process (`settle` waits for it)."""
    folder = active()
    if folder is None:
        return call()
    try:
        digest = hashlib.sha256(pickle.dumps(inputs, protocol=pickle.HIGHEST_PROTOCOL)).hexdigest()
    except Exception:  # noqa: BLE001  # inputs that cannot be pickled: no cache for this call
        return call()
    key = (environment_key(), name, digest)
    path = folder / f"run-{name}-{hashlib.sha256(ident.encode()).hexdigest()[:16]}.pkl"
    body = _read_body(path, key)
    if body is not None:
        try:
            with gc_paused():
                return _RefUnpickler(io.BytesIO(body), refs).load()
        except Exception as e:  # noqa: BLE001  # a damaged entry is a miss, whatever it raises
            log.debug("run cache entry %s ignored: %s: %s", path, type(e).__name__, e)
    result = call()
    if keep is not None and not keep(result):
        return result
    if not (background and _store_in_child(path, key, result, refs)):
        _store(path, key, result, refs)
    return result


def _store(path: Path, key: tuple, result, refs: dict) -> None:
    try:
        buf = io.BytesIO()
        _RefPickler(buf, {id(o): pid for pid, o in refs.items()}).dump(result)
    except Exception as e:  # noqa: BLE001  # a result the entry cannot hold: no entry
        log.debug("run cache entry %s not written: %s: %s", path, type(e).__name__, e)
        return
    write_entry(path, key, None, buf.getvalue())


_children: list[int] = []  # entries being written by forked processes (`settle` waits for them)


def _store_in_child(path: Path, key: tuple, result, refs: dict) -> bool:
    """`_store` in a forked process (the result and the run shared copy-on-write): its pickling (~0.8 s and ~200 MB
    for the analysis of 1,024 ranks) then costs this process neither time nor memory. False: no fork here."""
    if not hasattr(os, "fork") or not can_fork():
        return False
    try:
        pid = os.fork()
    except OSError:
        return False
    if pid == 0:  # the child: write the entry and leave at once (no exit handlers, no flushing of the parent's files)
        code = 1
        try:
            with gc_paused():
                _store(path, key, result, refs)
            code = 0
        finally:
            os._exit(code)
    _children.append(pid)
    return True


SETTLE_TIMEOUT_S = 600.0  # an entry writer still running after this long is stopped: the entry is not written


def settle(timeout: float = SETTLE_TIMEOUT_S) -> None:
    """Wait for the entries being written by forked processes (the end of a build: `use`); one that hangs is killed
    after `timeout` seconds in all (its entry is written atomically, so none is left half-written)."""
    deadline = time.monotonic() + timeout
    while _children:
        pid = _children.pop()
        with contextlib.suppress(ChildProcessError, InterruptedError):
            while os.waitpid(pid, os.WNOHANG) == (0, 0):
                if time.monotonic() > deadline:
                    log.debug("rank cache: entry writer %d still running after %.0f s: stopped", pid, timeout)
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    break
                time.sleep(0.01)


__all__ = ["folder_for", "map_cached", "memo", "use", "active", "environment_key", "rank_key", "read_entry",
           "write_entry", "recording", "run_memo", "settle"]
