"""Screening values at the door: which cells are usable numbers (finite, in range, not text, not a negative
duration), which CSV rows to drop for an unusable number or as an exact duplicate, and how long a field may be.
Every row dropped is counted in one data-quality entry naming the file, line, column and value."""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Optional

from reportgen.dataquality import dq
from reportgen.loaders.issuelog import IssueLog
from reportgen.numbers import MAX_ABS_NUMBER, NA_TOKENS, clean_cell, to_float

if TYPE_CHECKING:
    import pandas as pd

BAD_TOKENS = frozenset(("NAN", "INF", "-INF", "+INF", "INFINITY", "-INFINITY", "+INFINITY"))
NUMBER_RE = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
MAX_FIELD_CHARS = 64 * 1024  # a string (trace event name, JSON key or value) longer than this is named


def number_problem(value: Any) -> Optional[str]:
    """Why a cell of a numeric column is not a usable number (None when it is a number or a missing mark)."""
    s = clean_cell(str(value))
    u = s.upper()
    if u in NA_TOKENS:
        return None
    if u in BAD_TOKENS:
        return "not a finite number"
    if not NUMBER_RE.fullmatch(s):
        return "text in a numeric column"
    v = to_float(s)
    if math.isnan(v):
        return "out of range"
    return None


def _is_number(s: str) -> bool:
    return bool(NUMBER_RE.fullmatch(s)) and not math.isnan(to_float(s))


# A header that names a number (a unit in parentheses, a duration): decides for a column whose one or two cells
# are too few to give a majority (a one-row file with text in its only `Duration(us)` cell). Words such as "size",
# "time" or "cost" alone are not enough: `output_queue_size`, `full_kernel_time`, `communication_operator_cost`
# hold lists, names and JSON in real files.
NUMERIC_HEADER_RE = re.compile(r"\((us|ms|ns|s|%|kb|mb|gb|b|byte|bytes|per-step)\)\s*$|(^|[^a-z])(duration|elapsed)"
                             r"([^a-z]|$)", re.I)
FEW_CELLS = 2  # at most this many cells in a column: the header decides whether it is numeric


def numeric_by_header(name: str, n_cells: int) -> bool:
    return 0 < n_cells <= FEW_CELLS and bool(NUMERIC_HEADER_RE.search(name))


def _numeric_columns(header: list[str], columns: list[list[str]]) -> list[int]:
    """Columns most of whose cells are numbers (the rest: missing marks, garbage): those are screened; a column
    of one or two cells is screened when its header names a number (`NUMERIC_HEADER_RE`)."""
    out = []
    for i, cells in enumerate(columns):
        num = bad = text = 0
        for c, k in Counter(cells).items():  # (a cell's kind depends on its text alone: each text judged once)
            s = clean_cell(c)
            if s.upper() in NA_TOKENS:
                continue
            if _is_number(s):
                num += k
            elif s.upper() in BAD_TOKENS or NUMBER_RE.fullmatch(s):
                bad += k
            else:
                text += k
        # number-shaped cells that are unusable (inf, nan, 1e400, 30 digits) count as numbers here: a one-row file
        # whose only cell in a column is 30 digits long is a numeric column with a bad value, not a text column
        if num + bad and num + bad >= 2 * text or i < len(header) and numeric_by_header(header[i], num + bad + text):
            out.append(i)
    return out


DURATION_RE = re.compile(r"(^|[^a-z])(dur|duration|elapse|elapsed|cost|execution_time|total_time|task_duration)"
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
    durations = {i for i in idx if DURATION_RE.search(header[i])}
    if _plain(rows, idx, durations):
        idx = []  # every numeric cell a usable number (the usual file): no cell to look at one by one
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
        log.add(path, dq("screen.unusable-numbers-more" if n_bad > 3 else "screen.unusable-numbers", n_bad=n_bad,
                         problems="; ".join(problems)))
    if dups:
        where = ", ".join(str(n) for n in dups[:5]) + (" ..." if len(dups) > 5 else "")
        log.add(path, dq("screen.duplicated-row-identical-earlier", dups=len(dups), where=where))
    return kept


def plain_number(digit: str = r"\d") -> str:
    """The pattern of a cell `NUMBER_RE` takes (its digits `digit`: `[0-9]` for what pyarrow reads), spaces or tabs
    around it, written so that a match never backtracks into an earlier cell (one way to read each number, atomic)."""
    return rf"(?>[ \t]*[+-]?(?:{digit}+(?:\.{digit}*)?|\.{digit}+)(?:[eE][+-]?{digit}+)?[ \t]*)"


def cells_column(cell: str) -> "re.Pattern[str]":
    """Cells joined by line breaks, each matching the atomic pattern `cell`: a column of 1,000 cells that fails on
    its last is refused in linear time."""
    return re.compile(rf"(?:{cell}\n)*+{cell}")


_PLAIN_CELLS = cells_column(plain_number())  # cells joined by line breaks, each a number


def _plain(rows: list[tuple[int, list[str]]], idx: list[int], durations: set[int]) -> bool:
    """True when `number_problem` has nothing to say about any cell of the columns `idx` (each a number as
    `NUMBER_RE` writes it, spaces or tabs around it, within MAX_ABS_NUMBER) and no duration is negative: one match
    and one pass of `float` over them all, not a check per cell. False: the cells are looked at one by one."""
    cells = [c[i] for _, c in rows for i in idx if i < len(c)]
    if not cells:
        return True
    joined = "\n".join(cells)
    if joined.count("\n") != len(cells) - 1 or not _PLAIN_CELLS.fullmatch(joined):
        return False  # (a line break inside a cell: one by one)
    vals = list(map(float, cells))
    if not max(map(abs, vals)) <= MAX_ABS_NUMBER:
        return False
    return not durations or min((float(c[i]) for _, c in rows for i in durations if i < len(c)), default=0.0) >= 0


STAMP_RE = re.compile(r"start|timestamp|begin|\bts\b", re.I)


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
            looks = raw.str.fullmatch(NUMBER_RE.pattern).fillna(False) | raw.str.upper().isin(BAD_TOKENS)
            n_ok, n_text = int(ok.sum()), int((~na & ~looks).sum())
            if (not n_ok or n_ok < 2 * n_text) and not numeric_by_header(str(c), int((~na).sum())):
                continue
        wrong = (~ok & ~na).to_numpy().copy()
        if DURATION_RE.search(str(c)):
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
        log.add(path, dq("screen.unusable-numbers-more" if len(problems) < int(bad.sum()) else
                         "screen.unusable-numbers", n_bad=int(bad.sum()), problems="; ".join(problems)))
        out = df[~bad]
    dup = out.duplicated(keep="first") if dedupe else pd.Series(False, index=out.index)
    if dup.any():
        log.add(path, dq("screen.duplicated-row-identical-earlier-2", dup=int(dup.sum())))
        out = out[~dup.to_numpy()]
    if out is not df:
        out = out.reset_index(drop=True)
    return out

