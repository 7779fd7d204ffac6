"""Listing the run's folders safely: regular files and real sub-folders only, links out of the run, special files,
sparse files and folders standing where a file is expected named in data quality, listing bounded."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Optional

from reportgen.dataquality import dq
from reportgen.discover.names import expected_name
from reportgen.model import DataIssue

MAX_ENTRIES = 400_000  # folder entries looked at in all; beyond this the walk stops (and says so)
MAX_DIR_ENTRIES = 100_000  # entries looked at in one folder
MANY_ENTRIES = 10_000  # a folder with more entries than this gets a note
SPARSE_CHECK_BYTES = 64 * 1024 * 1024  # files at least this large are checked for holes


def relpath(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.name


def inside(path: Path, root: Path) -> bool:
    """Whether `path`, links resolved, is inside `root`. Never raises (loops and broken links are outside)."""
    try:
        real, base = os.path.realpath(path), os.path.realpath(root)
    except (OSError, RuntimeError, ValueError):
        return False
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def _size(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"



# a folder's entry as a path without parsing it again (CPython's pathlib helper for its own walks: 3.8-3.12; 11,000
# paths at 1,024 ranks, a third of discovery); elsewhere Path(entry.path), the same path
_child = getattr(Path, "_make_child_relpath", None)

_KIND = {stat.S_IFIFO: "a named pipe (FIFO)", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a character device",
         stat.S_IFBLK: "a block device"}


class Fs:
    """Lists the run's folders once each: regular files and real sub-folders, everything else named."""

    def __init__(self, root: Path):
        self.root = root
        self.issues: dict[tuple[str, str], DataIssue] = {}
        self._cache: dict[Path, tuple[list[Path], list[Path]]] = {}
        self.entries = 0
        self.stopped = False

    def note(self, p: Path, problem, severity: str = "warning") -> None:
        """One entry per file and problem; `problem` is text or a coded problem (`dataquality.dq`)."""
        issue = DataIssue(relpath(p, self.root), problem, severity)
        self.issues.setdefault((issue.file, issue.problem), issue)

    def listdir(self, d: Path) -> tuple[list[Path], list[Path]]:
        """(regular files, folders) of `d`, sorted by name; links and special files are named, not returned."""
        got = self._cache.get(d)
        if got is not None:
            return got
        files: list[Path] = []
        dirs: list[Path] = []
        try:
            with os.scandir(d) as it:
                entries = []
                for n, e in enumerate(it):
                    if n >= MAX_DIR_ENTRIES or self.entries >= MAX_ENTRIES:
                        self.stopped = True
                        self.note(d, dq("discover.folder-has-more-entries", n=format(n, ",")), "warning")
                        break
                    self.entries += 1
                    entries.append(e)
        except OSError as e:
            self.note(d, dq("discover.folder-cannot-listed-skipped", strerror=e.strerror or e))
            self._cache[d] = (files, dirs)
            return files, dirs
        if len(entries) > MANY_ENTRIES:
            self.note(d, dq("discover.folder-holds-entries-only", entries=format(len(entries), ",")), "info")
        for e in sorted(entries, key=lambda e: e.name):
            p = _child(d, e.name) if _child is not None else Path(e.path)
            try:
                if e.is_symlink():
                    self._link(p, files, dirs)
                elif e.is_dir(follow_symlinks=False):
                    if expected_name(e.name):
                        self.note(p, dq("discover.folder-stands-where-profiler"))
                    dirs.append(p)
                elif e.is_file(follow_symlinks=False):
                    if self._regular_ok(p, e.stat(follow_symlinks=False)):
                        files.append(p)
                else:
                    kind = _KIND.get(stat.S_IFMT(e.stat(follow_symlinks=False).st_mode), "not a regular file")
                    self.note(p, dq("discover.not-regular-file-not", kind=kind),
                              "warning" if expected_name(e.name) else "info")
            except OSError as err:
                self.note(p, dq("discover.cannot-examined-skipped", err=err.strerror or err))
        self._cache[d] = (files, dirs)
        return files, dirs

    def _link(self, p: Path, files: list[Path], dirs: list[Path]) -> None:
        if not inside(p, self.root):
            self.note(p, dq("discover.symbolic-link-leads-outside"))
            return
        try:
            st = os.stat(p)
        except (OSError, RuntimeError) as err:
            why = "loops" if getattr(err, "errno", None) == errno.ELOOP else "is broken"
            self.note(p, dq("discover.symbolic-link-not-followed", why=why))
            return
        if stat.S_ISREG(st.st_mode):
            if self._regular_ok(p, st):
                files.append(p)  # a file inside the run: reading it reads the run
        elif stat.S_ISDIR(st.st_mode):
            self.note(p, dq("discover.symbolic-link-folder-inside",
                            relpath=relpath(Path(os.path.realpath(p)), self.root.resolve())), "info")
        else:
            self.note(p, dq("discover.symbolic-link-something-not"))

    def _regular_ok(self, p: Path, st: os.stat_result) -> bool:
        """False (and a note) for a large file that is mostly holes: its content was never written."""
        if st.st_size < SPARSE_CHECK_BYTES:
            return True
        on_disk = getattr(st, "st_blocks", None)
        if on_disk is None or on_disk * 512 >= st.st_size // 2:
            return True
        data = data_bytes(p, st.st_size)
        if data is None or data >= st.st_size // 2:
            return True
        self.note(p, dq("discover.sparse-file", size=_size(st.st_size), size2=_size(data)))
        return False

    def files(self, d: Path) -> list[Path]:
        return self.listdir(d)[0]

    def dirs(self, d: Path) -> list[Path]:
        return self.listdir(d)[1]

    def file(self, d: Path, name: str) -> Optional[Path]:
        return next((p for p in self.files(d) if p.name == name), None)

    def subdir(self, d: Path, name: str) -> Optional[Path]:
        return next((p for p in self.dirs(d) if p.name == name), None)


def data_bytes(p: Path, size: int) -> Optional[int]:
    """Bytes of `p` that hold data (SEEK_DATA / SEEK_HOLE), or None where the file system cannot tell."""
    if not hasattr(os, "SEEK_DATA"):
        return None
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        total, pos = 0, 0
        for _ in range(10_000):
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:  # ENXIO: no data after pos
                break
            end = os.lseek(fd, start, os.SEEK_HOLE)
            total += end - start
            pos = end
            if pos >= size:
                break
        else:
            return None
        return total
    except OSError:
        return None
    finally:
        os.close(fd)
