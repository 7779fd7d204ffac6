"""Robust readers shared by the loaders: every problem becomes a `DataIssue`, never an exception."""

from __future__ import annotations

import csv
import errno
import fcntl
import gzip
import io
import json
import math
import mmap
import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Optional

import ijson

from reportgen.discover.peek import read_capped
from reportgen.model import DataIssue
from reportgen.numbers import MAX_ABS_NUMBER, MAX_INT, NA_TOKENS, clean_cell, to_float, to_int  # noqa: F401 - re-exported
from reportgen.jsonguard import CHUNK as JSON_CHUNK, DepthGuard, JsonTooDeep

if TYPE_CHECKING:
    import pandas as pd

MAX_JSON_BYTES = 256 * 1024 * 1024  # whole-file JSON reads; bigger files must be streamed
MAX_JSON_DEPTH = 200  # nesting of a whole-file JSON read; profiler files nest < 10 deep
MAX_TEXT_BYTES = 8 * 1024 ** 3  # a text file larger than this is not read at all
MAX_LINE_BYTES = 64 * 1024 * 1024  # a CSV whose first lines are longer is not a CSV
BAD_TOKENS = frozenset(("NAN", "INF", "-INF", "+INF", "INFINITY", "-INFINITY", "+INFINITY"))
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


class IssueLog:
    """Collects the data-quality issues of one loading job, with paths relative to the run root."""

    def __init__(self, root: Path, rank: Optional[int] = None) -> None:
        self.root = root
        self.rank = rank  # the rank being loaded (named in the door's entries: loaders.schema)
        self.shapes: dict[str, frozenset] = {}  # key paths of the small JSON files read (schema.json_shape)
        self.issues: list[DataIssue] = []
        _RUN_ROOTS[os.path.abspath(root)] = None
        while len(_RUN_ROOTS) > 256:  # bounded; the newest run folders are kept
            del _RUN_ROOTS[next(iter(_RUN_ROOTS))]

    def rel(self, path: Path) -> str:
        try:
            return Path(path).relative_to(self.root).as_posix()
        except ValueError:
            return Path(path).name

    def add(self, path: Path, problem: str, severity: str = "warning", kind: str = "") -> None:
        """One entry; with a problem class (`kind`, the door's entries: loaders.schema) it names the rank loaded."""
        ranks = (int(self.rank),) if kind and self.rank is not None else ()
        self.issues.append(DataIssue(self.rel(path), problem, severity, ranks, kind=kind))


# --- opening files: regular files only, never blocking ----------------------------------------------


_RUN_ROOTS: dict[str, None] = {}  # run folders being loaded (registered by IssueLog): links out are refused


def _outside_link(path: Path) -> bool:
    """True when `path` lies in a run folder but resolves (through a symbolic link) outside it."""
    ap = os.path.abspath(path)
    roots = [r for r in _RUN_ROOTS if ap.startswith(r.rstrip(os.sep) + os.sep)]
    if not roots:
        return False
    rr = os.path.realpath(max(roots, key=len))  # the innermost run folder holding the path
    rp = os.path.realpath(path)
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


def open_file(path: Path, mode: str = "r", **kw: Any):
    """`open()` for loaders: only regular files, and a FIFO never blocks (it is opened non-blocking, checked
    with fstat and refused). Raises `NotRegularFile` (an OSError whose strerror names the kind) otherwise."""
    if any(c in mode for c in "wax+"):
        raise ValueError("loaders open files for reading only")
    if _outside_link(path):
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
    if _outside_link(path):
        log.add(path, "a symbolic link out of the run folder; not followed", "error")
        return False
    try:
        st = os.stat(path)
    except OSError as e:
        log.add(path, f"cannot read the file: {e.strerror or e}", "error")
        return False
    if not stat.S_ISREG(st.st_mode):
        log.add(path, f"{_kind(st.st_mode)}, not a regular file; not read", "error")
        return False
    return True


def read_text(path: Path, log: Optional[IssueLog] = None, limit: int = MAX_JSON_BYTES) -> Optional[str]:
    """A whole (small) text file, decoded leniently; None (logged when `log` is given) when it cannot be read,
    is not a regular file, is larger than `limit` or holds binary data (NUL bytes)."""
    try:
        with open_file(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > limit:
                if log is not None:
                    log.add(path, f"file is {size / 1e6:.0f} MB, too large to read whole; skipped", "warning")
                return None
            data = f.read(limit + 1)
    except OSError as e:
        if log is not None:
            log.add(path, f"cannot read the file: {e.strerror or e}", "error")
        return None
    if b"\x00" in data:
        if log is not None:
            off = data.index(b"\x00")
            log.add(path, f"binary data (NUL byte at offset {off}) in a text file; not read", "error")
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
            with open_file(path, "rb") as f:
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
        log.add(path, f"bytes that are not UTF-8 (line {at[0]}, byte {at[1]:,}); read as \ufffd, the text "
                  "around them may be garbled", "warning", "encoding")


def nul_offset(path: Path) -> Optional[int]:
    """Offset of the first NUL byte of a file (binary garbage in a text file), scanned without loading it."""
    try:
        with open_file(path, "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                return None
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                i = m.find(b"\x00")
                return None if i < 0 else i
    except (OSError, ValueError):
        return None


def _text_guard(path: Path, log: IssueLog) -> bool:
    """Checks before a text (CSV) file is parsed: a regular file, not absurdly large, no binary garbage, and
    line breaks within the first MAX_LINE_BYTES. Every refusal is logged."""
    try:
        with open_file(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            newline, seen = False, 0
            while seen < min(size, MAX_LINE_BYTES) and not newline:  # 1 MB at a time, up to the first line break
                chunk = f.read(1 << 20)
                if not chunk:
                    break
                seen += len(chunk)
                newline = b"\n" in chunk or b"\r" in chunk
    except OSError as e:
        log.add(path, f"cannot read the file: {e.strerror or e}", "error")
        return False
    if size > MAX_TEXT_BYTES:
        log.add(path, f"file is {size / 1e9:.1f} GB, larger than the {MAX_TEXT_BYTES / 1e9:.0f} GB a text file may "
                "be; not read", "error")
        return False
    off = nul_offset(path)
    if off is not None:
        log.add(path, f"binary data (NUL byte at offset {off:,} of {size:,}) in a text file; not read "
                "(file corrupt or not a CSV?)", "error")
        return False
    if size > MAX_LINE_BYTES and not newline:
        log.add(path, f"no line break in the first {MAX_LINE_BYTES // 2 ** 20} MB; not a CSV, not read", "error")
        return False
    return True


def _tail_cut(path: Path) -> bool:
    """True when a non-empty text file does not end with a line break (written partly, cut off)."""
    try:
        with open_file(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return False
            f.seek(size - 1)
            return f.read(1) not in (b"\n", b"\r")
    except OSError:
        return False


# --- numbers -------------------------------------------------------------------------------------


def number_problem(value: Any) -> Optional[str]:
    """Why a cell of a numeric column is not a usable number (None when it is a number or a missing mark)."""
    s = clean_cell(str(value))
    u = s.upper()
    if u in NA_TOKENS:
        return None
    if u in BAD_TOKENS:
        return "not a finite number"
    if not _NUMBER.fullmatch(s):
        return "text in a numeric column"
    v = to_float(s)
    if math.isnan(v):
        return "out of range"
    return None


def _is_number(s: str) -> bool:
    return bool(_NUMBER.fullmatch(s)) and not math.isnan(to_float(s))


# A header that names a number (a unit in parentheses, a duration): decides for a column whose one or two cells
# are too few to give a majority (a one-row file with text in its only `Duration(us)` cell). Words such as "size",
# "time" or "cost" alone are not enough: `output_queue_size`, `full_kernel_time`, `communication_operator_cost`
# hold lists, names and JSON in real files.
_NUMERIC_HEADER = re.compile(r"\((us|ms|ns|s|%|kb|mb|gb|b|byte|bytes|per-step)\)\s*$|(^|[^a-z])(duration|elapsed)"
                             r"([^a-z]|$)", re.I)
FEW_CELLS = 2  # at most this many cells in a column: the header decides whether it is numeric


def _numeric_by_header(name: str, n_cells: int) -> bool:
    return 0 < n_cells <= FEW_CELLS and bool(_NUMERIC_HEADER.search(name))


def _numeric_columns(header: list[str], columns: list[list[str]]) -> list[int]:
    """Columns most of whose cells are numbers (the rest: missing marks, garbage): those are screened; a column
    of one or two cells is screened when its header names a number (`_NUMERIC_HEADER`)."""
    out = []
    for i, cells in enumerate(columns):
        num = bad = text = 0
        for c in cells:
            s = clean_cell(c)
            if s.upper() in NA_TOKENS:
                continue
            if _is_number(s):
                num += 1
            elif s.upper() in BAD_TOKENS or _NUMBER.fullmatch(s):
                bad += 1
            else:
                text += 1
        # number-shaped cells that are unusable (inf, nan, 1e400, 30 digits) count as numbers here: a one-row file
        # whose only cell in a column is 30 digits long is a numeric column with a bad value, not a text column
        if num + bad and num + bad >= 2 * text or i < len(header) and _numeric_by_header(header[i], num + bad + text):
            out.append(i)
    return out


_DURATION = re.compile(r"(^|[^a-z])(dur|duration|elapse|elapsed|cost|execution_time|total_time|task_duration)"
                       r"([^a-z]|$)", re.I)


def screen_rows(path: Path, log: IssueLog, header: list[str], rows: list[tuple[int, list[str]]],
                numeric: Optional[Iterable[str]] = None) -> list[tuple[int, list[str]]]:
    """The numeric normaliser at the door for CSV rows: in the numeric columns (given, or inferred: most cells
    are numbers), a non-finite (`inf`, `nan`), out-of-range (`1e400`, 30-digit integers) or text value, or a
    negative duration, drops its row with a data-quality entry naming file, line, column and value. Exact
    duplicate rows (same cells, so same operator and timestamps) are counted once, also with an entry."""
    if not rows:
        return rows
    width = len(header)
    if numeric is None:
        cols = [[cells[i] if i < len(cells) else "" for _, cells in rows] for i in range(width)]
        idx = _numeric_columns(header, cols)
    else:
        want = set(numeric)
        idx = [i for i, h in enumerate(header) if h in want]
    durations = {i for i in idx if _DURATION.search(header[i])}
    kept: list[tuple[int, list[str]]] = []
    problems: list[str] = []
    n_bad = 0
    seen: set[tuple[str, ...]] = set()
    dups: list[int] = []
    for line, cells in rows:
        why = None
        for i in idx:
            if i >= len(cells):
                continue
            p = number_problem(cells[i])
            if p is None and i in durations:
                v = to_float(cells[i])
                if v < 0:
                    p = "negative duration"
            if p is not None:
                why = f"line {line}, column {header[i]!r}: {clean_cell(cells[i])[:40]!r} ({p})"
                break
        if why is not None:
            n_bad += 1
            if len(problems) < 3:
                problems.append(why)
            continue
        key = tuple(cells)
        if key in seen:
            dups.append(line)
            continue
        seen.add(key)
        kept.append((line, cells))
    if n_bad:
        log.add(path, f"{n_bad} row(s) with an unusable number skipped: " + "; ".join(problems)
                + (" ..." if n_bad > 3 else ""))
    if dups:
        where = ", ".join(str(n) for n in dups[:5]) + (" ..." if len(dups) > 5 else "")
        log.add(path, f"{len(dups)} duplicated row(s) (identical to an earlier row: same operator and times) "
                f"counted once (line {where})")
    return kept


_STAMP = re.compile(r"start|timestamp|begin|\bts\b", re.I)


def screen_frame(path: Path, log: IssueLog, df: "pd.DataFrame", numeric: Optional[Iterable[str]] = None,
                 first_line: int = 2, dedupe: bool = True) -> "pd.DataFrame":
    """`screen_rows` for a frame of strings read by `read_frame` (vectorised). Duplicates are only looked for
    when `dedupe` (the frame holds a timestamp column, so identical rows are the same event twice)."""
    import numpy as np
    import pandas as pd

    if df is None or not len(df):
        return df
    cols = list(numeric) if numeric is not None else list(df.columns)
    bad = np.zeros(len(df), dtype=bool)
    problems: list[str] = []
    for c in cols:
        if c not in df.columns:
            continue
        raw = df[c].astype(str).str.strip().str.strip("\t")
        na = raw.str.upper().isin(NA_TOKENS) | df[c].isna()
        vals = pd.to_numeric(raw.where(~na), errors="coerce")
        ok = vals.notna() & np.isfinite(vals.fillna(0)) & (vals.abs() <= MAX_ABS_NUMBER)
        if numeric is None:  # a numeric column: most cells are numbers (non-finite / overflowing ones aside)
            looks = raw.str.fullmatch(_NUMBER.pattern).fillna(False) | raw.str.upper().isin(BAD_TOKENS)
            n_ok, n_text = int(ok.sum()), int((~na & ~looks).sum())
            if (not n_ok or n_ok < 2 * n_text) and not _numeric_by_header(str(c), int((~na).sum())):
                continue
        wrong = (~ok & ~na).to_numpy().copy()
        if _DURATION.search(str(c)):
            wrong |= (ok & (vals < 0)).to_numpy()
        if wrong.any():
            i = int(np.flatnonzero(wrong)[0])
            if len(problems) < 3:
                v = str(df[c].iloc[i])
                why = number_problem(v) or "negative duration"
                problems.append(f"line {first_line + i} (about), column {c!r}: {v[:40]!r} ({why})")
            bad |= wrong
    out = df
    if bad.any():
        log.add(path, f"{int(bad.sum())} row(s) with an unusable number skipped: " + "; ".join(problems)
                + (" ..." if len(problems) < int(bad.sum()) else ""))
        out = df[~bad]
    dup = out.duplicated(keep="first") if dedupe else pd.Series(False, index=out.index)
    if dup.any():
        log.add(path, f"{int(dup.sum())} duplicated row(s) (identical to an earlier row: same operator and times) "
                "counted once")
        out = out[~dup.to_numpy()]
    if out is not df:
        out = out.reset_index(drop=True)
    return out


def read_csv_rows(path: Path, log: IssueLog, numeric: Optional[Iterable[str]] = None, screen: bool = True
                  ) -> Optional[tuple[list[str], list[tuple[int, list[str]]]]]:
    """Read a CSV into (header, [(line_no, cells)]). Rows with the wrong width are reported and dropped; a file
    cut off mid-row is reported as truncated; with `screen` the numeric normaliser (`screen_rows`, numeric
    columns given or inferred) drops rows with unusable numbers and counts duplicated rows once.

    Returns None (with an issue logged) when the file cannot be read or has no header.
    """
    if not _text_guard(path, log):
        return None
    note_undecodable(path, log)
    try:
        with open_file(path, newline="", encoding="utf-8-sig", errors="replace") as f:
            reader = csv.reader(f)
            try:
                header = next(reader)
            except StopIteration:
                log.add(path, "file is empty", "error")
                return None
            except csv.Error as e:
                log.add(path, f"cannot parse the header: {e}", "error")
                return None
            header = [clean_cell(h) for h in header]
            while header and header[-1] == "":
                header.pop()
            if not header:
                log.add(path, "header line is empty", "error")
                return None
            rows: list[tuple[int, list[str]]] = []
            bad: list[int] = []
            line = 1
            last_short = None
            while True:
                try:
                    cells = next(reader)
                except StopIteration:
                    break
                except csv.Error as e:
                    log.add(path, f"line {reader.line_num}: {e}; rest of the file skipped "
                            f"({len(rows)} row(s) read)", "error")
                    break
                line += 1
                if not cells or all(not c.strip() for c in cells):
                    continue
                while len(cells) > len(header) and clean_cell(cells[-1]) == "":
                    cells = cells[:-1]
                if len(cells) != len(header):
                    bad.append(reader.line_num)
                    last_short = reader.line_num if len(cells) < len(header) else None
                    continue
                last_short = None
                rows.append((reader.line_num, cells))
            if last_short is not None and bad and bad[-1] == last_short and _tail_cut(path):
                bad.pop()
                log.add(path, f"file ends mid-row (truncated?): {len(rows)} complete row(s) read; the cut-off last "
                        f"row (line {last_short}) has a wrong number of fields and was skipped")
            if bad:
                where = ", ".join(str(n) for n in bad[:5]) + (" ..." if len(bad) > 5 else "")
                log.add(path, f"{len(bad)} row(s) with a wrong number of fields (line {where}); "
                        "those rows were skipped (file truncated or corrupt?)")
            if screen:
                rows = screen_rows(path, log, header, rows, numeric)
            from reportgen.loaders.schema import door_rows

            return header, door_rows(path, log, header, rows)
    except OSError as e:
        log.add(path, f"cannot read the file: {e.strerror or e}", "error")
        return None
    except MemoryError:
        log.add(path, "file too large to read; skipped", "error")
        return None


class _JsonNumbers:
    """json.load hooks: non-finite and out-of-range numbers become None and are counted."""

    def __init__(self) -> None:
        self.bad: list[str] = []

    def _note(self, s: str) -> None:
        if len(self.bad) < 3:
            self.bad.append(s[:40])
        else:
            self.bad.append("")

    def constant(self, s: str) -> None:
        self._note(s)
        return None

    def float(self, s: str) -> Optional[float]:
        try:
            v = float(s)
        except (ValueError, OverflowError):
            v = math.inf
        if not math.isfinite(v) or abs(v) > MAX_ABS_NUMBER:
            self._note(s)
            return None
        return v

    def int(self, s: str) -> Optional[int]:
        if len(s) > 20:
            self._note(s)
            return None
        v = int(s)
        if abs(v) > MAX_INT:
            self._note(s)
            return None
        return v


def read_json(path: Path, log: IssueLog) -> Any:
    """`_read_json`, and the key paths of a small document kept on `log` for the cross-rank schema check."""
    data = _read_json(path, log)
    if isinstance(data, dict) and getattr(log, "shapes", None) is not None:
        from reportgen.loaders.schema import json_shape

        shape = json_shape(data)
        if shape is not None:
            log.shapes[log.rel(path)] = shape
    return data


def _note_huge_string(path: Path, log: IssueLog, raw: bytes) -> None:
    """One entry when a JSON file holds a string (key or value) longer than MAX_FIELD_CHARS (a huge field). Without
    escapes every quote opens or closes a string, so the strings are the odd pieces between quotes (C speed); a
    file with escapes, or larger than 32 MB, is not looked at."""
    if len(raw) > 32 * 1024 * 1024 or len(raw) < MAX_FIELD_CHARS or b"\\" in raw:
        return
    pos = 0
    for i, piece in enumerate(raw.split(b'"')):
        if i % 2 and len(piece) > MAX_FIELD_CHARS:
            line = raw.count(b"\n", 0, pos) + 1
            log.add(path, f"a string of {len(piece):,} characters (longer than {MAX_FIELD_CHARS:,}) at "
                      f"byte {pos:,} (line {line}); read as written", "warning", "schema drift")
            return
        pos += len(piece) + 1


def _read_json(path: Path, log: IssueLog) -> Any:
    """Read a whole JSON file; return None with an issue on any problem. Non-finite (`NaN`, `Infinity`) and
    out-of-range numbers (`1e400`, 30-digit integers) become None with an entry; nesting deeper than the parser
    allows, or a file too large, is named and skipped."""
    try:
        with open_file(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                log.add(path, "file is empty", "error")
                return None
            if size > MAX_JSON_BYTES:
                log.add(path, f"file is {size / 1e6:.0f} MB, too large to read whole; skipped", "warning")
                return None
            raw = read_capped(f, MAX_JSON_BYTES)
    except OSError as e:
        log.add(path, f"cannot read the file: {e.strerror or e}", "error")
        return None
    _note_huge_string(path, log, raw)
    fast = _fast_json(raw)  # a clean file: orjson (C), the same values; anything odd: the careful path below
    if fast is not _MISS:
        return fast
    nums = _JsonNumbers()
    note_undecodable(path, log, raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw)
    try:
        text = raw.decode("utf-8-sig", errors="replace")
        del raw
        data = json.loads(text, parse_constant=nums.constant, parse_float=nums.float, parse_int=nums.int)
    except json.JSONDecodeError as e:
        log.add(path, f"not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})", "error")
        return None
    except RecursionError:
        log.add(path, "JSON nested too deeply to read; skipped", "error")
        return None
    except (MemoryError, ValueError) as e:
        log.add(path, f"cannot parse the JSON ({type(e).__name__}); skipped", "error")
        return None
    if _depth_exceeds(data, MAX_JSON_DEPTH):
        log.add(path, f"JSON nested more than {MAX_JSON_DEPTH} levels deep; skipped", "error")
        return None
    if nums.bad:
        shown = ", ".join(repr(b) for b in nums.bad if b)
        log.add(path, f"{len(nums.bad)} non-finite or out-of-range number(s) ({shown}) read as missing")
    return data


_MISS = object()


def _fast_json(raw: bytes) -> Any:
    """`raw` parsed by orjson when the careful reader would return the same value with no entry: valid UTF-8,
    standard JSON, every number finite and in range, nesting within MAX_JSON_DEPTH. Else `_MISS`."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a dependency; the careful path still works without it
        return _MISS
    if not _nesting_within(raw, MAX_JSON_DEPTH):  # orjson crashes the process (SIGSEGV) on ~100,000 levels
        return _MISS
    try:
        data = orjson.loads(raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw)
    except (orjson.JSONDecodeError, RecursionError, MemoryError):
        return _MISS
    if not isinstance(data, (dict, list)):
        return _MISS if _unusable(data) else data
    return data if _numbers_usable(data) else _MISS


def _numbers_usable(data: Any) -> bool:
    """No number in `data` (orjson's output: NaN cannot occur, overflow to inf can) is non-finite or beyond
    MAX_ABS_NUMBER / MAX_INT: an explicit stack with exact type tests (bool is not int here), no call per value."""
    lim_f, lim_i = MAX_ABS_NUMBER, MAX_INT
    stack = [data]
    pop, push = stack.pop, stack.append
    while stack:
        v = pop()
        for x in (v.values() if type(v) is dict else v):
            t = type(x)
            if t is float:
                if not -lim_f <= x <= lim_f:  # False for NaN and inf too
                    return False
            elif t is int:
                if not -lim_i <= x <= lim_i:
                    return False
            elif t is dict or t is list:
                push(x)
    return True


_NOT_MARKS = bytes(b for b in range(256) if b not in b'"[]{}')


def _nesting_within(raw: bytes, limit: int) -> bool:
    """True when the brackets of `raw` (outside strings) never nest deeper than `limit` (C-speed count)."""
    if b"\\" not in raw:
        # no escapes: every quote opens or closes a string, exactly as a JSON parser reads it (up to where it
        # fails), so the brackets between even and odd quotes are the ones outside strings (4x the guard's speed)
        outside = b"".join(raw.translate(None, _NOT_MARKS).split(b'"')[::2])
        if outside.count(b"[") + outside.count(b"{") <= limit:
            return True
        import numpy as np

        a = np.frombuffer(outside, dtype=np.uint8)
        return int(np.cumsum(np.where((a == 0x5B) | (a == 0x7B), 1, -1)).max()) <= limit
    return _guarded_nesting_within(raw, limit)


def _guarded_nesting_within(raw: bytes, limit: int) -> bool:
    """`_nesting_within` for any bytes (escapes too): the streaming guard's count, chunk by chunk."""
    guard = DepthGuard(io.BytesIO(raw), limit)
    try:
        while guard.read(JSON_CHUNK):
            pass
    except JsonTooDeep:
        return False
    return True


def _unusable(x: Any) -> bool:
    """A JSON number the careful reader would turn into None (non-finite, out of range)."""
    if isinstance(x, float):
        return not math.isfinite(x) or abs(x) > MAX_ABS_NUMBER
    return isinstance(x, int) and not isinstance(x, bool) and abs(x) > MAX_INT


def _depth_exceeds(data: Any, limit: int) -> bool:
    stack = [(data, 1)]
    while stack:
        v, d = stack.pop()
        if d > limit:
            return True
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values() if isinstance(x, (dict, list)))
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v if isinstance(x, (dict, list)))
    return False


def read_frame(path: Path, log: IssueLog, columns: tuple[str, ...], optional: tuple[str, ...] = (),
               screen: bool = True, door: bool = True) -> Optional["pd.DataFrame"]:
    """Read the named columns of a (possibly large) CSV as strings with pandas' C parser.

    Header cells are stripped (torch_npu writes stray tabs). Rows with the wrong number of fields are skipped and
    counted in a data-quality entry, a cut-off last row is reported as truncation, and with `screen` the numeric
    normaliser drops rows with unusable numbers and counts duplicated rows once. Returns None (with an issue)
    when the file or a required column is missing.
    """
    import pandas as pd

    from reportgen.loaders.columnar import read_clean

    # a clean file: pyarrow, the same frame (the fast reader refuses whatever `_text_guard` would refuse)
    guarded = not _guard_after(path)
    if guarded and not _text_guard(path, log):
        return None
    from reportgen.loaders.schema import door_frame

    fast = read_clean(path, columns, optional, screen, _STAMP, _DURATION)
    if fast is not None:
        return door_frame(path, log, fast) if door else fast
    if not guarded and not _text_guard(path, log):
        return None
    note_undecodable(path, log)
    try:
        with open_file(path, encoding="utf-8-sig", errors="replace", newline="") as f:
            header = next(csv.reader([f.readline()]), [])
            n_lines = 0
            last = ""
            for line in f:
                if line.strip():
                    n_lines += 1
                    last = line
    except OSError as e:
        log.add(path, f"cannot read the file: {e.strerror or e}", "error")
        return None
    except csv.Error as e:
        log.add(path, f"cannot parse the header: {e}", "error")
        return None
    names = [clean_cell(h) for h in header]
    if not any(names):
        log.add(path, "file is empty", "error")
        return None
    missing = [c for c in columns if c not in names and c not in optional]
    if missing:
        log.add(path, f"missing column(s) {', '.join(missing)}; not read", "error")
        return None
    stamps = [n for n in names if _STAMP.search(n) and n not in columns]  # for duplicate detection only
    want = [i for i, n in enumerate(names) if n in columns or n in stamps]
    cut = False
    if last and _tail_cut(path):
        try:
            cells = next(csv.reader([last]), [])
        except csv.Error:
            cells = []
        while len(cells) > len(names) and clean_cell(cells[-1]) == "":
            cells = cells[:-1]
        cut = len(cells) < len(names)
    try:
        with open_file(path, "rb") as f:
            df = pd.read_csv(f, encoding="utf-8-sig", encoding_errors="replace", header=0, names=names,
                             usecols=want, dtype=str, on_bad_lines="skip", skip_blank_lines=True,
                             keep_default_na=False)
    except (ValueError, pd.errors.ParserError, OSError, MemoryError) as e:
        log.add(path, f"cannot parse the file: {str(e)[:200]}", "error")
        return None
    if cut and len(df):
        df = df.iloc[:-1]
        n_lines -= 1
        log.add(path, f"file ends mid-row (truncated?): {len(df)} complete row(s) read, the cut-off last row "
                "skipped")
    if len(df) < n_lines:
        log.add(path, f"{n_lines - len(df)} row(s) with a wrong number of fields were skipped "
                "(file truncated or corrupt?)")
    if screen:
        df = screen_frame(path, log, df, dedupe=bool(stamps) or any(_STAMP.search(c) for c in columns))
    extra = [c for c in df.columns if c in stamps]
    df = df.drop(columns=extra) if extra else df
    return door_frame(path, log, df) if door else df


GUARD_AFTER_BYTES = 64 * 1024 * 1024  # a smaller CSV is tried by the fast reader before `_text_guard` reads it


def _guard_after(path: Path) -> bool:
    """True when `path` may go to a fast reader before `_text_guard`: small enough that reading it whole costs
    little even when it is garbage (a 1 GB file of NUL bytes is refused by the guard first, without loading it)."""
    try:
        return os.stat(path).st_size <= GUARD_AFTER_BYTES
    except OSError:
        return False


def read_typed(path: Path, log: IssueLog, text: tuple[str, ...], numeric: tuple[str, ...],
               optional: tuple[str, ...] = ()) -> Optional[dict]:
    """The columns of a (possibly large) CSV ready to aggregate: `{column: Coded}` for the `text` columns (codes per
    row and the distinct stripped values) and `{column: float64 array}` for the `numeric` ones (NaN where a cell is
    not a number). A clean file is parsed by pyarrow (`columnar.read_typed`); anything else goes through
    `read_frame`'s careful path, whose rows and data-quality entries it keeps exactly. None as `read_frame`."""
    from reportgen.loaders.columnar import read_typed as fast_typed

    # a clean file first: the fast reader refuses everything `_text_guard` would (and more), so the guard's
    # extra pass over the file is paid only by files that go the careful way, where it names the problem
    if not _guard_after(path) and not _text_guard(path, log):
        return None
    from reportgen.loaders.schema import door_typed

    fast = fast_typed(path, text, numeric, optional, _STAMP, _DURATION)
    if fast is not None:
        return door_typed(path, log, fast)
    # a file the strict reader refused: the frame path
    df = read_frame(path, log, (*text, *numeric), optional, door=False)
    return None if df is None else door_typed(path, log, typed_from_frame(df, text, numeric))


def typed_from_frame(df: "pd.DataFrame", text: tuple[str, ...], numeric: tuple[str, ...]) -> dict:
    """`read_typed`'s columns from a frame of strings (the careful path): text stripped and factorized in order of
    first appearance, numbers parsed (NaN where a cell is not one)."""
    import numpy as np
    import pandas as pd

    from reportgen.loaders.columnar import Coded

    out: dict = {}
    for c in text:
        if c in df:
            codes, uniques = pd.factorize(df[c].astype(str).str.strip(), use_na_sentinel=False)
            out[c] = Coded(np.asarray(codes, dtype=np.int64), list(uniques))
    for c in numeric:
        if c in df:
            out[c] = pd.to_numeric(df[c].astype(str).str.strip(), errors="coerce").to_numpy(dtype="float64")
    return out


# --- streamed traces -------------------------------------------------------------------------------



def open_binary(path: Path):
    """A regular file opened for binary reading, gunzipped when named `.gz` (FIFOs etc. refused, never block)."""
    f = open_file(path, "rb")
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


TRACE_ERRORS = (ijson.JSONError, ValueError, OSError, EOFError)  # what `trace_events` raises on a broken trace


def trace_cut(log: IssueLog, path: Path, err: BaseException, used: str) -> None:
    """The one report of a trace that broke off while it was streamed (`except TRACE_ERRORS as err`): the loader
    keeps what it read (loaders never raise) and `used` says what that part gives."""
    log.add(path, f"trace could not be read to the end ({type(err).__name__}: {str(err)[:120]}); {used}", "error")


def trace_events(path: Path, log: Optional[IssueLog] = None) -> Iterator[dict]:
    """Stream the events of a Chrome trace: a JSON list, or an object with `traceEvents` (gzip allowed).

    Only regular files are opened; a trace nested absurdly deep is refused before the parser sees the chunk
    (`jsonguard.DepthGuard`); events whose `ts` or `dur` is non-finite or out of range are left out -- counted in
    one data-quality entry on `log` when given (the loader that summarises the file passes it), as is a huge field
    (a string longer than MAX_FIELD_CHARS: `_QuoteWatch`). Raises ijson.JSONError / ValueError /
    OSError / EOFError on a broken file (after yielding what was read), so the loaders' handlers name the file.
    """
    dropped: list = []
    huge: list = []
    try:
        yield from _trace_events(path, dropped, huge)
    finally:
        if log is not None and dropped:
            log.add(path, f"{dropped[0]} trace event(s) with a non-finite or out-of-range ts/dur left out "
                    f"(first: {dropped[1]})")
        if log is not None and huge:
            log.add(path, f"a string longer than {MAX_FIELD_CHARS:,} characters in the trace (a huge field; "
                      f"first: {huge[1]}); read as written", "warning", "schema drift")


MAX_FIELD_CHARS = 64 * 1024  # a trace event's name, category or phase longer than this is named


def note_unusable_events(log: IssueLog, path: Path, n: int) -> None:
    """One entry for the complete ("X") events a trace loader left out because `ts` / `dur` is missing, text or
    negative (non-finite ones are counted by `trace_events`)."""
    if n:
        log.add(path, f"{n} complete event(s) without a usable ts/dur (missing, text or negative) left out")


class _QuoteWatch:
    """A binary file whose reads are watched for a huge string: a piece of CHUNK bytes (64 KB) or more with no quote
    lies inside a string longer than that (trace events hold quotes every few dozen bytes). C-speed `in` test."""

    def __init__(self, f, huge: Optional[list]) -> None:
        self.f, self.huge, self.pos = f, huge, 0

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n)
        if self.huge is not None and len(data) >= MAX_FIELD_CHARS and b'"' not in data:
            if self.huge:
                self.huge[0] += 1
            else:
                self.huge[:] = [1, f"{len(data):,} bytes without a quote at byte {self.pos:,}"]
        self.pos += len(data)
        return data

    def __getattr__(self, name: str):
        return getattr(self.f, name)


def _trace_events(path: Path, dropped: list, huge: Optional[list] = None) -> Iterator[dict]:

    raw = _QuoteWatch(open_binary(path), huge)
    with DepthGuard(raw) as f:
        start = 3 if f.read(3) == b"\xef\xbb\xbf" else 0  # a BOM is skipped, not parsed
        f.seek(start)
        first = f.read(1)
        while first and first in b" \t\r\n":
            first = f.read(1)
        f.seek(start)
        prefix = "item" if first == b"[" else "traceEvents.item"
        try:
            for e in ijson.items(f, prefix, use_float=True):
                if not isinstance(e, dict):
                    continue
                ok = True
                for k in ("ts", "dur"):
                    v = e.get(k)
                    if isinstance(v, float) and (not math.isfinite(v) or abs(v) > MAX_ABS_NUMBER):
                        ok = False
                    elif isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_INT:
                        ok = False
                if ok:
                    yield e
                elif dropped:
                    dropped[0] += 1
                else:
                    dropped[:] = [1, f"ts={e.get('ts')!r}, dur={e.get('dur')!r}"[:80]]
        except (RecursionError, MemoryError) as e:
            raise ValueError(f"trace nested too deeply or too large to stream ({type(e).__name__})") from None


def check_json_numbers(path: Path, log: IssueLog, data: Any, keys: Iterable[str],
                       required: Iterable[str] = ()) -> None:
    """The numeric normaliser for JSON values read by key, by the family's schema (`schema.JSON_SCHEMAS`, found
    by file name; a key it does not list is a number >= 0): a value under one of `keys` that is not a usable
    number (text, a boolean, null, a negative or out-of-range value) gets an entry naming the file, the key and
    the value (the loader reads it as missing), and a `required` key that is absent is named (schema drift)."""
    from reportgen.loaders.schema import Door, json_family

    if not isinstance(data, dict):
        return
    fam = json_family(path)
    door = Door(log, path)
    for k in keys:
        if k in data:
            door.field(data, k, "top level", fam)
    missing = [k for k in required if k not in data]
    if missing:
        door.note(f"expected key(s) {', '.join(repr(k) for k in missing)} missing (read as missing)", "top level",
                  "warning", "schema drift")
    door.close()
