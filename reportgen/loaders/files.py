"""Opening input files safely: regular files only, never blocking, never through a symbolic link out of the run
folder, text files checked (size, binary garbage, line breaks, encoding) before they are parsed.

The run folder is passed explicitly: `open_file(path, root=log.root)`; a loader function that has no log reads
under the folder of the loading job in progress (`run_root`, entered by `layouts.load_rank` and the run-level
passes), so a file found by a loader's own glob is held to the same rule.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import fcntl
import gzip
import mmap
import os
import stat
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

from reportgen.dataquality import dq
from reportgen.loaders.issuelog import IssueLog

MAX_JSON_BYTES = 256 * 1024 * 1024  # whole-file reads (JSON, small text); bigger files must be streamed
MAX_TEXT_BYTES = 8 * 1024 ** 3  # a text file larger than this is not read at all
MAX_LINE_BYTES = 64 * 1024 * 1024  # a CSV whose first lines are longer is not a CSV

# --- the run folder: links out of it are refused -----------------------------------------------------

_ROOT: contextvars.ContextVar[Optional[str]] = contextvars.ContextVar("reportgen_run_root", default=None)


# the resolved folders of the loading job in progress (`run_root`): a rank opens ~15 files in 3 folders, and each
# open resolved the run folder and every folder above the file again (~30 µs of lstat calls an open)
_REAL: contextvars.ContextVar[Optional[dict]] = contextvars.ContextVar("reportgen_run_real", default=None)


@contextlib.contextmanager
def run_root(root: Path) -> Iterator[None]:
    """Within this block, files opened without an explicit `root` are held to `root` (the loading job's run)."""
    token = _ROOT.set(os.path.abspath(root))
    real = _REAL.set({})
    try:
        yield
    finally:
        _REAL.reset(real)
        _ROOT.reset(token)


def _realpath(p: str, folder: bool = False) -> str:
    """`os.path.realpath(p)`; inside `run_root` a folder's answer is kept for the job, and a file that is not a
    link resolves as its folder joined with its name (what realpath does, without resolving the folder again)."""
    known = _REAL.get()
    if known is None:
        return os.path.realpath(p)
    if folder:
        got = known.get(p)
        if got is None:
            got = known[p] = os.path.realpath(p)
        return got
    if not os.path.isabs(p) or os.path.normpath(p) != p:  # (a "..": realpath resolves the link before it)
        return os.path.realpath(p)
    parent, name = os.path.split(p)
    try:
        if stat.S_ISLNK(os.lstat(p).st_mode):
            return os.path.realpath(p)
    except OSError:
        return os.path.realpath(p)
    return os.path.join(_realpath(parent, True), name)


def outside_link(path: Path, root: Optional[Path] = None) -> bool:
    """True when `path` lies in the run folder `root` (default: the loading job's, `run_root`) but resolves
    (through a symbolic link) outside it."""
    r = os.path.abspath(root) if root is not None else _ROOT.get()
    if r is None:
        return False
    ap = os.path.abspath(path)
    if not ap.startswith(r.rstrip(os.sep) + os.sep):
        return False
    rr = _realpath(r, True)
    rp = _realpath(os.fspath(path))
    return not (rp == rr or rp.startswith(rr.rstrip(os.sep) + os.sep))


class NotRegularFile(OSError):
    """A FIFO, socket, device or directory where a file was expected (never opened for reading)."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


def open_file(path: Path, mode: str = "r", *, root: Optional[Path] = None, **kw: Any):
    """`open()` for loaders: only regular files, and a FIFO never blocks (it is opened non-blocking, checked
    with fstat and refused); a symbolic link out of the run folder `root` (default: `run_root`'s) is refused.
    Raises `NotRegularFile` (an OSError whose strerror names the kind) otherwise."""
    if any(c in mode for c in "wax+"):
        raise ValueError("loaders open files for reading only")
    if outside_link(path, root):
        raise NotRegularFile(errno.EACCES, "a symbolic link out of the run folder; not followed", str(path))
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = _kind(st.st_mode)
            raise NotRegularFile(errno.EINVAL, f"{kind}, not a regular file; not read", str(path))
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
        return os.fdopen(fd, mode, **kw)
    except BaseException:
        os.close(fd)
        raise


def regular_file(path: Path, log: IssueLog) -> bool:
    """True when `path` is a regular file; otherwise the reason is logged (never blocks, never raises)."""
    if outside_link(path, log.root):
        log.add(path, dq("file.symbolic-link-out-run"), "error")
        return False
    try:
        st = os.stat(path)
    except OSError as e:
        log.add(path, dq("file.cannot-read-file", strerror=e.strerror or e), "error")
        return False
    if not stat.S_ISREG(st.st_mode):
        log.add(path, dq("file.not-regular-file-not", kind=_kind(st.st_mode)), "error")
        return False
    return True


def read_text(path: Path, log: Optional[IssueLog] = None, limit: int = MAX_JSON_BYTES) -> Optional[str]:
    """A whole (small) text file, decoded leniently; None (logged when `log` is given) when it cannot be read,
    is not a regular file, is larger than `limit` or holds binary data (NUL bytes)."""
    try:
        with open_file(path, "rb", root=log.root if log is not None else None) as f:
            size = os.fstat(f.fileno()).st_size
            if size > limit:
                if log is not None:
                    log.add(path, dq("file.file-mb-too-large", size=format(size / 1e6, ".0f")), "warning")
                return None
            data = f.read(limit + 1)
    except OSError as e:
        if log is not None:
            log.add(path, dq("file.cannot-read-file", strerror=e.strerror or e), "error")
        return None
    if b"\x00" in data:
        if log is not None:
            off = data.index(b"\x00")
            log.add(path, dq("file.binary-data-nul-byte-2", off=off), "error")
        return None
    if log is not None:
        note_undecodable(path, log, data[3:] if data.startswith(b"\xef\xbb\xbf") else data)
    return data.decode("utf-8-sig", errors="replace")


def undecodable_at(data: bytes) -> Optional[tuple[int, int]]:
    """(line, byte offset) of the first bytes that are not UTF-8 in `data`; None when it all decodes."""
    try:
        data.decode("utf-8")
        return None
    except UnicodeDecodeError as e:
        return data.count(b"\n", 0, e.start) + 1, e.start


def note_undecodable(path: Path, log: IssueLog, data: Optional[bytes] = None) -> None:
    """One entry when a text file holds bytes that are not UTF-8 (they are read as U+FFFD, the cell kept): the
    line and offset of the first. `data`: the file's bytes when already read (else read in 1 MB chunks)."""
    at = None
    if data is not None:
        at = undecodable_at(data)
    else:
        import codecs

        dec = codecs.getincrementaldecoder("utf-8")()
        line, off = 1, 0
        try:
            with open_file(path, "rb", root=log.root) as f:
                while True:
                    chunk = f.read(1 << 20)
                    if not chunk:
                        break
                    try:
                        dec.decode(chunk)
                    except UnicodeDecodeError as e:
                        at = (line + chunk.count(b"\n", 0, max(e.start, 0)), off + max(e.start, 0))
                        break
                    line += chunk.count(b"\n")
                    off += len(chunk)
        except OSError:
            return
    if at is not None:
        log.add(path, dq("file.bytes-not-utf-8", at=at[0], at2=format(at[1], ",")), "warning", "encoding")


def nul_offset(path: Path, root: Optional[Path] = None) -> Optional[int]:
    """Offset of the first NUL byte of a file (binary garbage in a text file), scanned without loading it."""
    try:
        with open_file(path, "rb", root=root) as f:
            if os.fstat(f.fileno()).st_size == 0:
                return None
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                i = m.find(b"\x00")
                return None if i < 0 else i
    except (OSError, ValueError):
        return None


def text_guard(path: Path, log: IssueLog) -> bool:
    """Checks before a text (CSV) file is parsed: a regular file, not absurdly large, no binary garbage, and
    line breaks within the first MAX_LINE_BYTES. Every refusal is logged."""
    try:
        with open_file(path, "rb", root=log.root) as f:
            size = os.fstat(f.fileno()).st_size
            newline, seen = False, 0
            while seen < min(size, MAX_LINE_BYTES) and not newline:  # 1 MB at a time, up to the first line break
                chunk = f.read(1 << 20)
                if not chunk:
                    break
                seen += len(chunk)
                newline = b"\n" in chunk or b"\r" in chunk
    except OSError as e:
        log.add(path, dq("file.cannot-read-file", strerror=e.strerror or e), "error")
        return False
    if size > MAX_TEXT_BYTES:
        log.add(path, dq("file.file-gb-larger-than", size=format(size / 1e9, ".1f"),
                         max_text_bytes=format(MAX_TEXT_BYTES / 1e9, ".0f")), "error")
        return False
    off = nul_offset(path, log.root)
    if off is not None:
        log.add(path, dq("file.binary-data-nul-byte", off=format(off, ","), size=format(size, ",")), "error")
        return False
    if size > MAX_LINE_BYTES and not newline:
        log.add(path, dq("file.no-line-break-first", max_line_bytes=MAX_LINE_BYTES // 2 ** 20), "error")
        return False
    return True


def tail_cut(path: Path, root: Optional[Path] = None) -> bool:
    """True when a non-empty text file does not end with a line break (written partly, cut off)."""
    try:
        with open_file(path, "rb", root=root) as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return False
            f.seek(size - 1)
            return f.read(1) not in (b"\n", b"\r")
    except OSError:
        return False


GUARD_AFTER_BYTES = 64 * 1024 * 1024  # a smaller CSV is tried by the fast reader before `text_guard` reads it


def guard_after(path: Path) -> bool:
    """True when `path` may go to a fast reader before `text_guard`: small enough that reading it whole costs
    little even when it is garbage (a 1 GB file of NUL bytes is refused by the guard first, without loading it)."""
    try:
        return os.stat(path).st_size <= GUARD_AFTER_BYTES
    except OSError:
        return False


def open_binary(path: Path, root: Optional[Path] = None):
    """A regular file opened for binary reading, gunzipped when named `.gz` (FIFOs etc. refused, never block)."""
    f = open_file(path, "rb", root=root)
    if Path(path).name.endswith(".gz"):
        return _OwningGzip(fileobj=f, mode="rb")
    return f


class _OwningGzip(gzip.GzipFile):
    """A GzipFile that closes the file it reads from."""

    def close(self) -> None:
        raw = self.fileobj
        try:
            super().close()
        finally:
            if raw is not None:
                raw.close()


PREFETCH_MAX_BYTES = 64 * 1024 * 1024  # read ahead at most this much of one file


def prefetch(paths) -> None:
    """Ask the kernel to start reading `paths` into the page cache now (POSIX_FADV_WILLNEED: it returns at once and
    the disk works while the caller computes), so the worker that opens them later finds them there. For the rank
    pool (`loaders.dispatch`): on a run not in the page cache a rank waited ~50 ms for its files (4 MB read in the
    loaders' small pieces) for ~80 ms of CPU. Only regular files, never through a link, never blocking (a FIFO is
    not opened), at most PREFETCH_MAX_BYTES a file; any failure is ignored (a hint; elsewhere than Linux: nothing)."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is None:
        return
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for p in paths:
        try:
            if not stat.S_ISREG(os.lstat(p).st_mode):
                continue
            fd = os.open(p, flags)
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode):
                advise(fd, 0, min(st.st_size, PREFETCH_MAX_BYTES), os.POSIX_FADV_WILLNEED)
        except OSError:
            pass
        finally:
            os.close(fd)


def data_bytes(paths: Iterable) -> int:
    """The bytes the loaders read from `paths` as the files say before they are read: a gzip's by its trailer (the
    size of its last member, mod 2^32: a Kineto trace gunzips to ~20x its file), any other file's size; a link
    (not followed), a path that is not a regular file or cannot be read, None: its own size or nothing. What
    decides whether the ranks are read in the pool (`layouts.run`) and a trace copy's gzip level (`builder`)."""
    n = 0
    for p in paths:
        if p is None:
            continue
        try:
            st = os.lstat(p)
            size = st.st_size
            if stat.S_ISREG(st.st_mode) and size >= 4 and str(p).endswith(".gz"):
                with open(p, "rb") as f:
                    f.seek(size - 4)
                    size = max(size, int.from_bytes(f.read(4), "little"))
            elif not stat.S_ISREG(st.st_mode):
                size = 0
        except OSError:
            continue
        n += size
    return n
