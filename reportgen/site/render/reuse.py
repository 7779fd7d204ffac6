"""The files of the report being replaced that the new report writes again byte for byte, hard-linked into the
staged report instead of written (issue 33, the rebuild): a rebuild in another language writes every rank's CSV
downloads and trace copies again as they were, a rebuild with other thresholds most pages too. A new file costs
~0.45 ms of CPU to create on some file systems (ext4 on a cloud disk: ~1.4 s for a 1,024-rank site's ~3,100
files), a link ~0.02 ms; and the old report's removal after the swap frees no blocks for a linked file.

A file is linked only when the earlier report's file at the same path, reached through folders inside the report
(none a link), is a regular file holding exactly the bytes about to be written (read and compared), and the link
made is to the very file compared (same inode). Anything else writes the file as always. The earlier report is
never written: a staged path that exists is unlinked before it is written (a linked file is never written into).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import Optional


class Previous:
    """The report at `out` that the build staged in `tmp` replaces (none there, or `out` a link: nothing linked)."""

    def __init__(self, out: Path, tmp: Path) -> None:
        self.root: Optional[str] = None
        self.tmp = os.path.abspath(tmp)
        self._dirs: dict[str, bool] = {}
        with contextlib.suppress(OSError):
            if stat.S_ISDIR(os.lstat(out).st_mode):
                self.root = os.path.realpath(out)

    def _folder_ok(self, rel_dir: str) -> bool:
        """The earlier report's folder `rel_dir` is inside it (no link on the way)."""
        ok = self._dirs.get(rel_dir)
        if ok is None:
            assert self.root is not None
            want = os.path.join(self.root, rel_dir) if rel_dir else self.root
            ok = self._dirs[rel_dir] = os.path.realpath(want) == os.path.normpath(want)
        return ok

    def write(self, target: Path, rel: str, data: bytes) -> bool:
        """A link at `target` (the staged file of report path `rel`) to the earlier report's file when it holds
        the bytes `data`; False: nothing done."""
        return self.root is not None and not rel.startswith(("/", "..")) and self._link(target, rel, data)

    def _link(self, target: Path, rel: str, data: bytes) -> bool:
        if not self._folder_ok(os.path.dirname(rel)):
            return False
        old = os.path.join(self.root, rel)  # type: ignore[arg-type]
        if os.path.abspath(old).startswith(self.tmp + os.sep):
            return False  # (the staging folder inside the report, a mount point written in place)
        try:
            fd = os.open(old, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return False
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size != len(data):
                return False
            with os.fdopen(os.dup(fd), "rb") as f:
                if f.read(len(data) + 1) != data:
                    return False
            os.link(old, target, follow_symlinks=False)
            got = os.lstat(target)
            if (got.st_ino, got.st_dev) != (st.st_ino, st.st_dev):  # (replaced meanwhile: not what was compared)
                os.unlink(target)
                return False
            return True
        except OSError:
            return False
        finally:
            os.close(fd)


def _fresh(target: Path) -> Path:
    """`target`, a file already there unlinked first (never written into: it may be a link to the earlier report's
    file)."""
    if os.path.lexists(target):
        os.unlink(target)
    return target


_active: Optional[Previous] = None


@contextlib.contextmanager
def use(previous: Optional[Previous]):
    """`put` links from `previous` inside the block (and in page writers forked inside it)."""
    global _active
    prev, _active = _active, previous
    try:
        yield previous
    finally:
        _active = prev


def put(target: Path, rel: str, data: bytes) -> None:
    """`data` at the staged file `target` (report path `rel`): linked from the active earlier report when it holds
    the same bytes, else written."""
    _fresh(target)
    if _active is None or not _active.write(target, rel, data):
        target.write_bytes(data)


def put_text(target: Path, rel: str, text: str) -> None:
    """`put` of a text, written as `Path.write_text(text, encoding="utf-8")` writes it (compared as its UTF-8
    bytes where lines end in "\\n": elsewhere never linked)."""
    _fresh(target)
    if _active is None or os.linesep != "\n" or not _active.write(target, rel, text.encode("utf-8")):
        target.write_text(text, encoding="utf-8")
