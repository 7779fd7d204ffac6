"""The careful CSV readers: rows as lists of cells (`read_csv_rows`), a frame of strings (`read_frame`) or typed
columns ready to aggregate (`read_typed`). Wrong-width rows, a cut-off last row, unusable numbers and duplicated
rows are named in data quality, never raised; a clean file takes the pyarrow fast path (`arrow_csv`), which
returns the same values or declines."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Optional

from reportgen.dataquality import dq
from reportgen.discover.peek import read_capped
from reportgen.loaders import arrow_csv
from reportgen.loaders.arrow_csv import Coded
from reportgen.loaders.files import guard_after, note_undecodable, open_file, tail_cut, text_guard
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.schema import door_frame, door_rows, door_typed
from reportgen.loaders.screen import DURATION_RE, STAMP_RE, screen_frame, screen_rows
from reportgen.numbers import clean_cell

if TYPE_CHECKING:
    import pandas as pd


def read_csv_rows(path: Path, log: IssueLog, numeric: Optional[Iterable[str]] = None, screen: bool = True
                  ) -> Optional[tuple[list[str], list[tuple[int, list[str]]]]]:
    """Read a CSV into (header, [(line_no, cells)]). Rows with the wrong width are reported and dropped; a file
    cut off mid-row is reported as truncated; with `screen` the numeric normaliser (`screen_rows`, numeric
    columns given or inferred) drops rows with unusable numbers and counts duplicated rows once.

    Returns None (with an issue logged) when the file cannot be read or has no header.
    """
    small = _small_text(path, log)
    if small is not None:  # read once: text_guard's, note_undecodable's and tail_cut's reads found nothing to say
        text, cut = small
        return _csv_rows(path, log, io.StringIO(text, newline=""), numeric, screen, lambda: cut)
    if not text_guard(path, log):
        return None
    note_undecodable(path, log)
    try:
        f = open_file(path, newline="", encoding="utf-8-sig", errors="replace", root=log.root)
    except OSError as e:
        log.add(path, dq("csv.cannot-read-file", strerror=e.strerror or e), "error")
        return None
    with f:  # (`_csv_rows` names what the reading raises)
        return _csv_rows(path, log, f, numeric, screen, lambda: tail_cut(path, log.root))


SMALL_TEXT_BYTES = 1 << 20  # a CSV up to this size is read once into memory by `read_csv_rows`


def _small_text(path: Path, log: IssueLog) -> Optional[tuple[str, bool]]:
    """(the text, whether it is cut off) of a small CSV that `text_guard` passes and `note_undecodable` has nothing
    to say about (a regular file, no NUL byte, strict UTF-8), read once; None: the usual path reads and judges it."""
    try:
        with open_file(path, "rb", root=log.root) as f:
            data = read_capped(f, SMALL_TEXT_BYTES)
        if not data or len(data) > SMALL_TEXT_BYTES or b"\x00" in data:
            return None
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return text[1:] if text.startswith("\ufeff") else text, data[-1:] not in (b"\n", b"\r")


def _csv_rows(path: Path, log: IssueLog, f, numeric, screen: bool, cut_off
              ) -> Optional[tuple[list[str], list[tuple[int, list[str]]]]]:
    """`read_csv_rows` on an open text stream `f`; `cut_off()`: whether the file does not end in a line break."""
    try:
        reader = csv.reader(f)
        try:
            header = next(reader)
        except StopIteration:
            log.add(path, dq("csv.file-empty"), "error")
            return None
        except csv.Error as e:
            log.add(path, dq("csv.cannot-parse-header", value=e), "error")
            return None
        header = [clean_cell(h) for h in header]
        while header and header[-1] == "":
            header.pop()
        if not header:
            log.add(path, dq("csv.header-line-empty"), "error")
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
                log.add(path, dq("csv.parse-error-rest-skipped", reader=reader.line_num, value=e, rows=len(rows)),
                        "error")
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
        if last_short is not None and bad and bad[-1] == last_short and cut_off():
            bad.pop()
            log.add(path, dq("csv.truncated-last-row-line", rows=len(rows), last_short=last_short))
        if bad:
            where = ", ".join(str(n) for n in bad[:5]) + (" ..." if len(bad) > 5 else "")
            log.add(path, dq("csv.wrong-field-count-lines", bad=len(bad), where=where))
        if screen:
            rows = screen_rows(path, log, header, rows, numeric)
        return header, door_rows(path, log, header, rows)
    except OSError as e:
        log.add(path, dq("csv.cannot-read-file", strerror=e.strerror or e), "error")
        return None
    except MemoryError:
        log.add(path, dq("csv.too-large"), "error")
        return None


def read_frame(path: Path, log: IssueLog, columns: tuple[str, ...], optional: tuple[str, ...] = (),
               screen: bool = True, door: bool = True) -> Optional["pd.DataFrame"]:
    """Read the named columns of a (possibly large) CSV as strings with pandas' C parser.

    Header cells are stripped (torch_npu writes stray tabs). Rows with the wrong number of fields are skipped and
    counted in a data-quality entry, a cut-off last row is reported as truncation, and with `screen` the numeric
    normaliser drops rows with unusable numbers and counts duplicated rows once. Returns None (with an issue)
    when the file or a required column is missing.
    """
    import pandas as pd

    # a clean file: pyarrow, the same frame (the fast reader refuses whatever `text_guard` would refuse)
    guarded = not guard_after(path)
    if guarded and not text_guard(path, log):
        return None
    fast = arrow_csv.read_clean(path, columns, optional, screen, STAMP_RE, DURATION_RE, root=log.root)
    if fast is not None:
        return door_frame(path, log, fast) if door else fast
    if not guarded and not text_guard(path, log):
        return None
    note_undecodable(path, log)
    try:
        with open_file(path, encoding="utf-8-sig", errors="replace", newline="", root=log.root) as f:
            header = next(csv.reader([f.readline()]), [])
            n_lines = 0
            last = ""
            for line in f:
                if line.strip():
                    n_lines += 1
                    last = line
    except OSError as e:
        log.add(path, dq("csv.cannot-read-file", strerror=e.strerror or e), "error")
        return None
    except csv.Error as e:
        log.add(path, dq("csv.cannot-parse-header", value=e), "error")
        return None
    names = [clean_cell(h) for h in header]
    if not any(names):
        log.add(path, dq("csv.file-empty"), "error")
        return None
    missing = [c for c in columns if c not in names and c not in optional]
    if missing:
        log.add(path, dq("csv.missing-columns", missing=", ".join(missing)), "error")
        return None
    stamps = [n for n in names if STAMP_RE.search(n) and n not in columns]  # for duplicate detection only
    want = [i for i, n in enumerate(names) if n in columns or n in stamps]
    cut = False
    if last and tail_cut(path, log.root):
        try:
            cells = next(csv.reader([last]), [])
        except csv.Error:
            cells = []
        while len(cells) > len(names) and clean_cell(cells[-1]) == "":
            cells = cells[:-1]
        cut = len(cells) < len(names)
    try:
        with open_file(path, "rb", root=log.root) as f:
            df = pd.read_csv(f, encoding="utf-8-sig", encoding_errors="replace", header=0, names=names,
                             usecols=want, dtype=str, on_bad_lines="skip", skip_blank_lines=True,
                             keep_default_na=False)
    except (ValueError, pd.errors.ParserError, OSError, MemoryError) as e:
        log.add(path, dq("csv.cannot-parse-file", value=str(e)[:200]), "error")
        return None
    if cut and len(df):
        df = df.iloc[:-1]
        n_lines -= 1
        log.add(path, dq("csv.truncated-last-row", df=len(df)))
    if len(df) < n_lines:
        log.add(path, dq("csv.wrong-field-count", n_lines=n_lines - len(df)))
    if screen:
        df = screen_frame(path, log, df, dedupe=bool(stamps) or any(STAMP_RE.search(c) for c in columns))
    extra = [c for c in df.columns if c in stamps]
    df = df.drop(columns=extra) if extra else df
    return door_frame(path, log, df) if door else df



def read_typed(path: Path, log: IssueLog, text: tuple[str, ...], numeric: tuple[str, ...],
               optional: tuple[str, ...] = ()) -> Optional[dict]:
    """The columns of a (possibly large) CSV ready to aggregate: `{column: Coded}` for the `text` columns (codes per
    row and the distinct stripped values) and `{column: float64 array}` for the `numeric` ones (NaN where a cell is
    not a number). A clean file is parsed by pyarrow (`arrow_csv.read_typed`); anything else goes through
    `read_frame`'s careful path, whose rows and data-quality entries it keeps exactly. None as `read_frame`."""
    # a clean file first: the fast reader refuses everything `text_guard` would (and more), so the guard's
    # extra pass over the file is paid only by files that go the careful way, where it names the problem
    if not guard_after(path) and not text_guard(path, log):
        return None
    raw: list = []
    fast = arrow_csv.read_typed(path, text, numeric, optional, STAMP_RE, DURATION_RE, root=log.root, raw=raw)
    if fast is not None:
        return door_typed(path, log, fast, raw[0] if raw else None)
    # a file the strict reader refused: the frame path
    df = read_frame(path, log, (*text, *numeric), optional, door=False)
    return None if df is None else door_typed(path, log, typed_from_frame(df, text, numeric))


def typed_from_frame(df: "pd.DataFrame", text: tuple[str, ...], numeric: tuple[str, ...]) -> dict:
    """`read_typed`'s columns from a frame of strings (the careful path): text stripped and factorized in order of
    first appearance, numbers parsed (NaN where a cell is not one)."""
    import numpy as np
    import pandas as pd

    out: dict = {}
    for c in text:
        if c in df:
            codes, uniques = pd.factorize(df[c].astype(str).str.strip(), use_na_sentinel=False)
            out[c] = Coded(np.asarray(codes, dtype=np.int64), list(uniques))
    for c in numeric:
        if c in df:
            out[c] = pd.to_numeric(df[c].astype(str).str.strip(), errors="coerce").to_numpy(dtype="float64")
    return out

