"""Writing the report safely: the only code that creates, replaces or removes output files and folders.

Over 500 lines: one module on purpose: staging, the swap, the manifest of our files, user files carried over,
stale folders and the lock are one protocol over the same folder; each step depends on the others' invariants.

* A report folder is built in a staging folder beside it and swapped into place at the end, so a failed or killed
  run never leaves a half-written report over a good one. When the folder cannot be renamed (it is a mount point,
  a CI artifact volume) the report is staged inside it and moved in file by file instead.
* Files and folders are created with the user's umask (colleagues and web servers can read a shared report).
* `.msreport` (the marker) lists every file the report wrote. When a report is regenerated, only those are
  replaced or removed: files a user added to the report folder are kept (carried into the new report, as hard
  links, before the swap), because deleting a user's file is never an acceptable side effect of a rebuild. A user
  file standing exactly where the new report writes a file is refused with a clear message rather than overwritten.
* Staging folders carry their process id in their name (and a marker inside); the next run removes the stale ones
  whose process is dead (a run killed with -9), and puts back a previous report left aside by such a kill.
* `output_lock` serialises runs writing the same output: the second fails at once with a one-line message.
* Every failure to write (read-only file system, full disk, /proc, no permission) is an `OutputError`: one line,
  exit code 2.
* `json_text` is the one JSON writer (summary.json, chart data, page data): values computed in analysis that are
  not finite (a ratio over zero, an overflow) are written as `null`, never `NaN` / `Infinity` (invalid JSON that
  would stop a page's charts) and never a crash in `json.dumps(allow_nan=False)`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import math
import os
import re
import secrets
import shutil
import socket
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Optional

from reportgen import __version__
from reportgen.errors import OutputError
from reportgen.i18n import lazy
from reportgen.urls import INDEX

log = logging.getLogger("msreport")

MARKER = ".msreport"
STAGING_MARK = ".msreport-staging"
GENERATOR_TAG = b'name="generator" content="msreport'
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG, errno.EACCES, errno.EPERM, errno.EIO,
                 errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.EEXIST, errno.EINVAL, errno.EMLINK}
_NO_RENAME = {errno.EBUSY, errno.EXDEV, errno.EPERM, errno.EACCES, errno.EINVAL}


def finite_json(value: Any) -> Any:
    """`value` with every non-finite float (NaN, +-inf; numpy's too) replaced by None, containers copied."""
    if isinstance(value, float) or type(value).__name__.startswith("float"):
        try:
            f = float(value)
        except (TypeError, ValueError):
            return value
        return f if math.isfinite(f) else None
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(v) for v in value]
    return value


def json_text(value: Any, **kw: Any) -> str:
    """`json.dumps(value, allow_nan=False, **kw)`; non-finite numbers become null (see `finite_json`).

    The common case (nothing to clean) costs one dumps; only a value that fails is walked and cleaned."""
    kw.setdefault("default", str)
    try:
        return json.dumps(value, allow_nan=False, **kw)
    except ValueError:
        return json.dumps(finite_json(value), allow_nan=False, **kw)


def _why(e: OSError) -> str:
    return e.strerror or str(e)


def _read_only(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _blocking_file(path: Path) -> Optional[Path]:
    """The first component of `path` that exists and is not a folder (a file standing where a folder must be)."""
    p = Path(os.path.abspath(path))
    for part in reversed([p, *p.parents]):
        if part.exists() and not part.is_dir():
            return part
        if not part.exists():
            return None
    return None


def refusal(out: Path, folder: Path, e: Optional[OSError] = None) -> OutputError:
    """The one-line error for an output that cannot be written: the path the user gave, and why in words (the
    folder that refused it, read-only, permissions, a file in the way, a virtual file system, a full disk)."""
    code = e.errno if e is not None else None
    blocking = _blocking_file(out) if code in (None, errno.EEXIST, errno.ENOTDIR) else None
    if blocking is not None and blocking != Path(os.path.abspath(out)):
        why = lazy("{path} is a file, not a folder", path=str(blocking))
    elif code == errno.EROFS or (code in (None, errno.EACCES, errno.EPERM) and _read_only(folder)):
        why = lazy("{folder} is on a read-only file system", folder=str(folder))
    elif code in (None, errno.EACCES, errno.EPERM):
        why = lazy("no permission to create files in {folder}", folder=str(folder))
    elif code == errno.ENOENT and folder.is_dir():
        why = lazy("{folder} does not accept new files ({why})", folder=str(folder), why=_why(e))  # /proc, /sys: the folder exists, creating fails
    elif code in (errno.ENOSPC, errno.EDQUOT):
        why = lazy("{why} on the device holding {folder}", why=_why(e), folder=str(folder))
    else:
        why = _why(e) if e is not None else lazy("not writable")
    return OutputError(lazy("cannot write the report to {out}: {why}", out=str(out), why=why))


def _stale_re(name: str) -> re.Pattern:
    return re.compile(r"^\." + re.escape(name) + r"\.(?P<kind>tmp|old)-(?P<pid>\d+)(?:-[0-9a-f]+)?$")


# --- checks ------------------------------------------------------------------------------------------------------


def check_output(out: Path, run_root: Path, single_file: bool) -> None:
    """Refuse an output that would hide the run, a foreign folder, or a file msreport did not write."""
    out_r, root_r = out.resolve(), run_root.resolve()
    if out_r == root_r or root_r.is_relative_to(out_r):
        raise OutputError(lazy("output {out} would contain the run folder {run}; choose another output path", out=str(out),
                                run=str(run_root)))
    if single_file:
        if out.is_dir():
            raise OutputError(lazy("{out} is a folder; --single-file needs a file name such as report.html", out=str(out)))
        if out.exists() and not _written_by_us(out):
            raise OutputError(lazy("{out} exists and was not written by msreport; refusing to overwrite it", out=str(out)))
        return
    if out.exists() and not out.is_dir():
        raise OutputError(lazy("{out} exists and is not a folder", out=str(out)))
    if out.is_dir() and not (out / MARKER).exists() and any(_visible(out)):
        raise OutputError(lazy("{out} exists, is not empty and is not an msreport report; refusing to overwrite it",
                                out=str(out)))


def _visible(d: Path) -> Iterator[Path]:
    """Entries of `d`, leaving out msreport's own lock and staging entries (a mount point written in place)."""
    for p in d.iterdir():
        if p.name.startswith(".msreport.") or p.name == MARKER:
            continue
        yield p


def _written_by_us(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return GENERATOR_TAG in f.read(4096)
    except OSError:
        return False


def ensure_parent(out: Path) -> None:
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise refusal(out, _existing(out.parent), e) from None
    if is_mount(out):  # written in place: the mount point itself must take files
        if not os.access(out, os.W_OK | os.X_OK) or _read_only(out):
            raise refusal(out, out)
    elif not os.access(out.parent, os.W_OK | os.X_OK) or _read_only(out.parent):
        raise refusal(out, out.parent)


def _existing(folder: Path) -> Path:
    """`folder` or its nearest existing parent (the one that refused a new sub-folder)."""
    p = folder
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


# --- writing files -----------------------------------------------------------------------------------------------


def write_text(path: Path, text: str) -> None:
    """Write a file inside a staging folder (created with the user's umask)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def atomic_write(path: Path, text: str) -> None:
    """Replace `path` with `text` in one rename; the temporary file carries the pid (stale ones are removed)."""
    ensure_parent(path)
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # mode filtered by the umask
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise OutputError(lazy("cannot write {path}: {why}", path=str(path), why=_why(e))) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_marker(folder: Path) -> None:
    """The marker of a report folder being staged (`MARKER`, "msreport <version>"); the manifest is added when the
    folder is swapped into place."""
    (folder / MARKER).write_text(f"msreport {__version__}\n", encoding="utf-8")


def write_index_files(out: Path, html: str, summary_text: str, *, single_file: bool) -> Path:
    """The landing page and combined summary of several runs (`out`: the staged folder, or the HTML file)."""
    if single_file:
        atomic_write(out, html)
        atomic_write(out.with_name(out.stem + ".summary.json"), summary_text)
        return out
    write_text(out / INDEX, html)
    write_text(out / "summary.json", summary_text)
    write_text(out / MARKER, f"msreport {__version__}\n")
    return out / INDEX


# --- the lock ------------------------------------------------------------------------------------------------------


def lock_path(out: Path) -> Path:
    if is_mount(out):
        return out / ".msreport.lock"
    return out.parent / f".{out.name}.lock"


@contextmanager
def output_lock(out: Path):
    """Hold an exclusive lock on `out` for the whole run; fail at once if another run holds it."""
    ensure_parent(out)
    path = lock_path(out)
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as e:
            raise refusal(out, path.parent, e) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            try:
                holder = os.pread(fd, 64, 0).decode(errors="replace").strip()
            except OSError:
                holder = ""
            os.close(fd)
            msg = (lazy("another msreport (pid {pid}) is writing {out}; wait for it to finish or choose another "
                        "output", pid=holder, out=str(out)) if holder.isdigit() else
                   lazy("another msreport is writing {out}; wait for it to finish or choose another output",
                        out=str(out)))
            raise OutputError(msg) from None
        try:  # the file we locked must still be the one at `path` (a finishing run unlinks it)
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except OSError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        clean_stale(out)
        yield path
    finally:
        with contextlib.suppress(OSError):
            path.unlink()
        os.close(fd)


# --- removing a tree -------------------------------------------------------------------------------------------------

REMOVE_THREADS = 16
REMOVE_MIN_FILES = 64  # fewer files: removed one by one (threads cost more than they save)


def remove_tree(top: Path) -> None:
    """`shutil.rmtree(top, ignore_errors=True)`, the files unlinked by several threads at once (issue 33: a report
    replaced by a rebuild). A file whose blocks are on disk waits ~3 ms in `unlink` on a file system mounted with
    online discard (cloud disks): a 1,024-rank report's ~3,100 files took ~9 s one by one, ~0.3 s from 16 threads
    (the file system serves the waits together). The files are reached through their folders' descriptors
    (`os.fwalk`, links not followed), as `shutil.rmtree` reaches them: a link planted inside the tree is removed,
    never what it points to; what is left (the folders) goes through `shutil.rmtree`."""
    if not os.path.isdir(top) or os.path.islink(top):
        shutil.rmtree(top, ignore_errors=True)
        return
    fds: list[int] = []
    names: list[tuple[int, str]] = []
    try:
        for _, dirnames, filenames, dirfd in os.fwalk(top, follow_symlinks=False):
            links = [n for n in dirnames if stat.S_ISLNK(os.lstat(n, dir_fd=dirfd).st_mode)]
            if filenames or links:
                fd = os.dup(dirfd)  # (fwalk closes its descriptor when it moves on)
                fds.append(fd)
                names.extend((fd, n) for n in (*filenames, *links))
    except OSError:
        pass
    try:
        if len(names) >= REMOVE_MIN_FILES:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(REMOVE_THREADS) as ex:
                for _ in ex.map(_unlink_at, names, chunksize=16):
                    pass
        else:
            for item in names:
                _unlink_at(item)
    finally:
        for fd in fds:
            os.close(fd)
    shutil.rmtree(top, ignore_errors=True)


def _unlink_at(item: tuple[int, str]) -> None:
    with contextlib.suppress(OSError):
        os.unlink(item[1], dir_fd=item[0])


# --- stale leftovers of killed runs --------------------------------------------------------------------------------


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _staging_owner(d: Path) -> Optional[tuple[str, int]]:
    try:
        host, _, pid = (d / STAGING_MARK).read_text(encoding="utf-8").strip().partition(" ")
        return host, int(pid)
    except (OSError, ValueError):
        return None


def clean_stale(out: Path) -> list[Path]:
    """Remove staging folders and files of `out` left by dead msreport processes on this host (and put a previous
    report back if a kill left it aside). Returns what was removed."""
    removed: list[Path] = []
    pattern = _stale_re(out.name)
    places = [(out.parent, pattern)]
    if out.suffix.lower() in (".html", ".htm"):  # single file: its summary is written beside it the same way
        places.append((out.parent, _stale_re(out.stem + ".summary.json")))
    if out.is_dir():
        places.append((out, re.compile(r"^\.msreport\.(?P<kind>tmp)-(?P<pid>\d+)-[0-9a-f]+$")))
    host = socket.gethostname()
    for folder, pat in places:
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            continue
        for p in entries:
            m = pat.match(p.name)
            if not m or _pid_alive(int(m.group("pid"))):
                continue
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                owner = _staging_owner(p)
                if m.group("kind") == "tmp" and owner is not None and owner[0] != host:
                    continue  # another host's run (shared file system): not ours to judge
                if m.group("kind") == "old":
                    if not (p / MARKER).exists():
                        continue
                    if not out.exists():  # killed between the two renames: the previous report comes back
                        os.replace(p, out)
                        log.info("put back the previous report left aside by a killed run (%s)", p.name)
                        continue
                remove_tree(p)
            elif stat.S_ISREG(st.st_mode) and m.group("kind") == "tmp":
                p.unlink(missing_ok=True)
            else:
                continue
            removed.append(p)
    if removed:
        log.info("removed %d stale staging folder(s) of killed runs: %s", len(removed),
                 ", ".join(p.name for p in removed[:5]))
    return removed


# --- staging and the swap --------------------------------------------------------------------------------------------


def _make_staging(folder: Path, prefix: str) -> Path:
    for _ in range(100):
        tmp = folder / f"{prefix}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            os.mkdir(tmp, 0o777)  # mode filtered by the umask, unlike mkdtemp's 0700
        except FileExistsError:
            continue
        (tmp / STAGING_MARK).write_text(f"{socket.gethostname()} {os.getpid()}\n", encoding="utf-8")
        return tmp
    raise OutputError(lazy("cannot create a staging folder in {folder}", folder=str(folder)))


@contextmanager
def staged_folder(out: Path):
    """Yield a staging folder for `out`; on success it becomes `out`, on failure it is removed."""
    ensure_parent(out)
    in_place = is_mount(out)
    try:
        tmp = _make_staging(out, ".msreport") if in_place else _make_staging(out.parent, f".{out.name}")
    except OSError as e:
        raise refusal(out, out if in_place else out.parent, e) from None
    try:
        try:
            yield tmp
            _finish(tmp, out, in_place)
        except OSError as e:
            if e.filename is not None and not _under(Path(e.filename), tmp) and not _under(Path(e.filename), out):
                raise
            if e.errno not in _WRITE_ERRNOS and e.filename is None:
                raise
            raise OutputError(lazy("cannot write the report to {out}: {why}", out=str(out), why=_why(e))) from None
    except BaseException:
        remove_tree(tmp)
        raise


def _under(p: Path, d: Path) -> bool:
    try:
        Path(os.path.abspath(p)).relative_to(os.path.abspath(d))
        return True
    except ValueError:
        return False


def _files_under(d: Path, skip: tuple[str, ...] = ()) -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(d):
        rel_dir = os.path.relpath(dirpath, d)
        if rel_dir == ".":
            dirnames[:] = [n for n in dirnames if n not in skip]
        for n in filenames + [x for x in dirnames if os.path.islink(os.path.join(dirpath, x))]:
            rel = n if rel_dir == "." else f"{rel_dir}/{n}".replace(os.sep, "/")
            if rel not in skip:
                out.append(rel)
    return sorted(out)


def read_manifest(out: Path) -> Optional[set[str]]:
    """The files an earlier report wrote (from its marker), or None for a report older than the manifest."""
    try:
        lines = (out / MARKER).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    if "# files" not in lines:
        return None
    return set(lines[lines.index("# files") + 1:]) | {MARKER}


def _write_manifest(tmp: Path) -> set[str]:
    files = [f for f in _files_under(tmp) if f not in (MARKER, STAGING_MARK)]
    (tmp / STAGING_MARK).unlink(missing_ok=True)
    (tmp / MARKER).write_text(f"msreport {__version__}\n# files\n" + "".join(f + "\n" for f in files),
                              encoding="utf-8")
    return set(files) | {MARKER}


def _user_files(out: Path, ours_new: set[str]) -> list[str]:
    """Files in the existing report folder that msreport did not write."""
    if not out.is_dir():
        return []
    old = read_manifest(out)
    skip = tuple(p.name for p in out.iterdir() if p.name.startswith(".msreport."))
    found = _files_under(out, skip=skip)
    if old is None:  # a report written before manifests: what the new report writes again is ours
        return [f for f in found if f not in ours_new]
    return [f for f in found if f not in old]


def _carry(out: Path, tmp: Path, user: list[str]) -> None:
    """Hard-link the user's files into the new report (a copy where links are not possible)."""
    for rel in user:
        src, dst = out / rel, tmp / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(src, dst, follow_symlinks=False)
        except OSError:
            if os.path.islink(src):
                os.symlink(os.readlink(src), dst)
            elif os.path.isfile(src):
                shutil.copy2(src, dst)


def _finish(tmp: Path, out: Path, in_place: bool) -> None:
    ours_new = _write_manifest(tmp)
    user = _user_files(out, ours_new)
    clash = [f for f in user if f in ours_new]
    if clash:
        raise OutputError(lazy("{out} holds files msreport did not write where the new report writes ({files}); "
                               "move them away and run again", out=str(out), files=", ".join(clash[:3])))
    if user:
        whose = ("you added" if read_manifest(out) is not None
                 else "the new report does not write (the earlier report kept no list of its files)")
        log.info("kept %d file(s) %s in %s: %s%s", len(user), whose, out, ", ".join(user[:5]),
                 " ..." if len(user) > 5 else "")
    if not in_place:
        _carry(out, tmp, user)
        try:
            _swap_into_place(tmp, out)
            return
        except OSError as e:
            if e.errno not in _NO_RENAME or not out.is_dir():
                raise
            log.info("%s cannot be replaced (%s); writing into it instead", out, _why(e))
            for rel in user:  # the carried links are not needed when writing in place
                with contextlib.suppress(OSError):
                    (tmp / rel).unlink()
    _write_into(tmp, out, ours_new)


def _swap_into_place(tmp: Path, out: Path) -> None:
    old = None
    if out.exists():
        old = out.parent / f".{out.name}.old-{os.getpid()}"
        if old.exists():
            remove_tree(old)
        os.replace(out, old)
    try:
        os.replace(tmp, out)
    except BaseException:
        if old is not None:
            os.replace(old, out)
        raise
    if old is not None:  # (the user's link given as the output: the link goes, not what it pointed to)
        if old.is_symlink():
            old.unlink()
        else:
            remove_tree(old)


def _write_into(tmp: Path, out: Path, ours_new: set[str]) -> None:
    """Write the staged report into the existing folder `out` (which cannot be renamed): our old files out,
    the new ones in, the user's files untouched. The marker goes last."""
    old = read_manifest(out) or set()
    # first mark every file about to be touched as ours, so an interrupted write leaves a folder msreport owns
    interim = sorted((old | ours_new) - {MARKER})
    (out / MARKER).write_text(f"msreport {__version__}\n# files\n" + "".join(f + "\n" for f in interim),
                              encoding="utf-8")
    for rel in sorted(old - ours_new):
        p = out / rel
        with contextlib.suppress(OSError):
            if not p.is_dir() or p.is_symlink():
                p.unlink()
        parent = p.parent
        while parent != out and _under(parent, out):
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent
    for rel in sorted(ours_new - {MARKER}):
        src, dst = tmp / rel, out / rel
        if dst.is_dir() and not dst.is_symlink():
            shutil.rmtree(dst)
        dst.parent.mkdir(parents=True, exist_ok=True)
        _move(src, dst)
    _move(tmp / MARKER, out / MARKER)
    remove_tree(tmp)


def _move(src: Path, dst: Path) -> None:
    try:
        os.replace(src, dst)
    except OSError as e:
        if e.errno != errno.EXDEV:
            raise
        shutil.copy2(src, dst)


def is_mount(path: Path) -> bool:
    """A mount point, bind mounts included (os.path.ismount misses a bind mount of the same file system)."""
    if not path.is_dir():
        return False
    if os.path.ismount(path):
        return True
    real = os.path.realpath(path)
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split()
                if len(parts) > 4 and parts[4].encode().decode("unicode_escape") == real:
                    return True
    except OSError:
        pass
    return False
