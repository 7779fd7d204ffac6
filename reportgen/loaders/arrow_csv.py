"""The pyarrow fast path of the careful CSV readers (`tables.read_frame`, `tables.read_typed`): a clean CSV parsed
and screened column-wise with pyarrow (C++).

Profiler CSVs of a big run are large (`kernel_details.csv`: 20,000+ rows per rank) and almost always clean. This
module reads the wanted columns with `pyarrow.csv`, checks them with pyarrow compute (every numeric cell a finite,
in-range number, no negative duration, no duplicated row when the frame has a timestamp) and returns the same
frame of strings the careful path returns. It never logs: on anything irregular (a row with the wrong number of
fields, a cut-off last line, blank or odd lines, a bad number, a duplicated row, invalid UTF-8, a BOM-less
oddity pyarrow rejects) it returns None and `read_frame` takes the careful pandas path, which names the problem
in data quality exactly as before. So the fast path can only be faster, never different.
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Optional

from reportgen.discover.peek import read_capped
from reportgen.loaders.files import MAX_LINE_BYTES, open_file
from reportgen.loaders.screen import (BAD_TOKENS, NUMBER_RE, NUMERIC_HEADER_RE, cells_column, numeric_by_header,
                                      plain_number)
from reportgen.numbers import MAX_ABS_NUMBER, NA_TOKENS, clean_cell

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

FAST_MAX_BYTES = 1 << 30  # larger files take the careful (streaming-friendlier) path
_STRICT_NUMBER = r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$"  # `screen.NUMBER_RE`, anchored (RE2 syntax)


def read_clean(path: Path, columns: tuple[str, ...], optional: tuple[str, ...], screen: bool,
               stamp_re: "re.Pattern[str]", duration_re: "re.Pattern[str]", root: Optional[Path] = None
               ) -> Optional["pd.DataFrame"]:
    """The frame `read_frame` would return for a clean file, or None (then the careful path decides)."""
    try:
        return _read_clean(path, columns, optional, screen, stamp_re, duration_re, root)
    except Exception:  # noqa: BLE001 - any surprise: the careful path reads the file and names the problem
        return None


class _Clean(NamedTuple):
    """A CSV that passed the checks both fast readers make before parsing (see `_open_clean`)."""

    data: bytes
    names: list
    stamps: list
    want: list
    rows: int
    quoted: bool
    raw: bytes  # the file's bytes as read (`data` is them without a BOM)


_UNQUOTED = {"quote_char": False, "double_quote": False}


def _open_clean(path: Path, columns, optional, stamp_re, root: Optional[Path]) -> Optional[_Clean]:
    """The file's bytes and header when a fast reader may try it: not huge, ending in a line break (not cut off),
    strict UTF-8 header with distinct names, every required column there, at least one row; else None."""
    with open_file(path, "rb", root=root) as f:
        data = raw = read_capped(f, FAST_MAX_BYTES)
    if len(data) > FAST_MAX_BYTES or not data.endswith(b"\n"):
        return None  # huge, empty, or cut off mid-row: the careful path
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    end = data.find(b"\n")
    if end > MAX_LINE_BYTES or b"\x00" in data:
        return None  # what `files.text_guard` refuses (and names) too: the careful path
    key = (data[:end], columns, optional, stamp_re)
    head = _HEADERS.get(key)
    if head is None:
        head = _header(data[:end], columns, optional, stamp_re)
        if len(_HEADERS) > 1024:
            _HEADERS.clear()
        _HEADERS[key] = head
    if not head:
        return None
    names, stamps, want = head
    rows = _lines(data) - 1
    if rows < 1:
        return None
    return _Clean(data, names, stamps, want, rows, b'"' in data, raw)


_HEADERS: dict = {}  # (a header line, the columns asked for) -> `_header`'s answer (every rank's file has the same)


def _header(line: bytes, columns, optional, stamp_re) -> tuple:
    """(names, time stamp columns, the places of the columns to read) of a CSV header line, or () when a fast reader
    may not read the file: no name, a name twice, a required column missing, nothing to read. Raises on invalid
    UTF-8 (strict: the careful way)."""
    header = next(csv.reader([line.decode("utf-8")]), [])
    names = [clean_cell(h) for h in header]
    if not any(names) or len(set(names)) != len(names):
        return ()
    if any(c not in names and c not in optional for c in columns):
        return ()
    stamps = [n for n in names if stamp_re.search(n) and n not in columns]
    want = [i for i, n in enumerate(names) if n in columns or n in stamps]
    return (names, stamps, want) if want else ()


_LINE_CHUNK = 1 << 16


def _lines(data: bytes) -> int:
    """`data.count(b"\n")`; past 64 KB by numpy, 64 KB at a time into one small buffer (no file-sized mask to
    allocate: a 2 MB kernel_details.csv 0.80 -> 0.21 ms)."""
    if len(data) < _LINE_CHUNK:
        return data.count(b"\n")
    import numpy as np

    arr, buf, n = np.frombuffer(data, np.uint8), np.empty(_LINE_CHUNK, bool), 0
    for i in range(0, len(arr), _LINE_CHUNK):
        part = arr[i:i + _LINE_CHUNK]
        n += int(np.count_nonzero(np.equal(part, 10, out=buf[:len(part)])))
    return n


def _distinct(stamps: "np.ndarray") -> bool:
    """Whether the numbers are all distinct (NaNs count as one value, as `np.unique` counts them). A column that
    strictly grows (time stamps in file order, the usual profiler CSV) is proved distinct in one pass instead of a
    sort (20,800 kernel start times: 0.63 -> 0.01 ms)."""
    import numpy as np

    if len(stamps) < 2 or bool((stamps[1:] > stamps[:-1]).all()):
        return True
    return len(np.unique(stamps)) == len(stamps)


def _first_order(codes: "np.ndarray", n: int) -> bool:
    """Whether `codes` number `n` values 0..n-1 in order of first appearance, each used (a new code is always the
    largest so far plus one): what `pandas.factorize` would make of them is then `codes` themselves."""
    import numpy as np

    if not len(codes):
        return n == 0
    run = np.maximum.accumulate(codes)
    return bool(codes[0] == 0 and run[-1] == n - 1 and (codes[1:] <= run[:-1] + 1).all())


def _parse(clean: _Clean, kinds: dict, **convert):
    """pyarrow's parse of the `kinds` columns (keys `c<i>`), or None when a row is irregular (wrong field count,
    blank lines, line breaks inside values: the row count differs)."""
    import pyarrow as pa
    from pyarrow import csv as pacsv

    bad = [0]

    def invalid(_row) -> str:
        bad[0] += 1
        return "skip"

    keys = [f"c{i}" for i in range(len(clean.names))]
    table = pacsv.read_csv(
        pa.BufferReader(clean.data),
        read_options=pacsv.ReadOptions(column_names=keys, skip_rows=1, use_threads=False,
                                       block_size=max(1 << 20, len(clean.data) + 1)),
        # a file without a quote needs no quote handling (the usual profiler CSV): 8 % off the parse
        parse_options=pacsv.ParseOptions(invalid_row_handler=invalid, **({} if clean.quoted else _UNQUOTED)),
        # an ASCII text is valid UTF-8: the per-cell check of the text columns is skipped (0.07 ms to tell on a
        # 2 MB kernel_details.csv, ~0.5 ms of its parse saved); any other text is checked as before
        convert_options=pacsv.ConvertOptions(include_columns=list(kinds), column_types=kinds,
                                             strings_can_be_null=False, quoted_strings_can_be_null=False,
                                             check_utf8=not clean.data.isascii(), **convert))
    return None if bad[0] or table.num_rows != clean.rows else table


def _read_clean(path: Path, columns, optional, screen, stamp_re, duration_re, root):
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    clean = _open_clean(path, columns, optional, stamp_re, root)
    if clean is None:
        return None
    names, stamps, want = clean.names, clean.stamps, clean.want
    keys = [f"c{i}" for i in range(len(names))]
    table = _parse(clean, {keys[i]: pa.string() for i in want})
    if table is None:
        return None  # bad rows, blank lines or line breaks inside values: the careful path counts them
    if screen:
        na_tokens = pa.array(sorted(NA_TOKENS), pa.string())
        bad_tokens = pa.array(sorted(BAD_TOKENS), pa.string())
        for i in want:
            col = table.column(keys[i])
            raw = pc.utf8_trim_whitespace(col)
            upper = pc.utf8_upper(raw)
            na = pc.is_in(upper, value_set=na_tokens)
            strict = pc.match_substring_regex(raw, _STRICT_NUMBER)
            n_strict = pc.sum(strict).as_py() or 0
            other = pc.sum(pc.and_not(pc.invert(strict), na)).as_py() or 0
            if pc.any(pc.is_in(upper, value_set=bad_tokens)).as_py():
                return None
            if other:
                if n_strict or numeric_by_header(names[i], n_strict + other):
                    return None  # a numeric column with text in it (or a tiny unit column): the careful path
                continue  # a text column
            if not n_strict:
                continue
            vals = pc.cast(pc.if_else(strict, raw, pa.scalar(None, pa.string())), pa.float64())
            finite = pc.and_(pc.is_finite(vals), pc.less_equal(pc.abs(vals), MAX_ABS_NUMBER))
            if (pc.sum(pc.invert(finite)).as_py() or 0) > 0:
                return None
            if duration_re.search(names[i]) and pc.any(pc.less(vals, 0)).as_py():
                return None
        stamped = [keys[i] for i in want if stamp_re.search(names[i])]
        if stamps or any(stamp_re.search(c) for c in columns):
            # identical rows have identical timestamps: distinct stamps prove there is no duplicate (cheap)
            if not stamped or len(pc.unique(table.column(stamped[0]))) != table.num_rows:
                cols = [keys[i] for i in want]
                if table.select(cols).group_by(cols, use_threads=False).aggregate([]).num_rows != table.num_rows:
                    return None  # duplicated rows: the careful path counts them once and says so
    out = {names[i]: table.column(keys[i]).to_pandas() for i in want if names[i] not in stamps}
    return pd.DataFrame(out)


# --- typed columns: the hot loaders' fast path ------------------------------------------------------------------


class Coded(NamedTuple):
    """A text column as codes per row (0..n-1, numbered in order of first appearance, as `pandas.factorize`) and
    the distinct stripped values."""

    codes: "np.ndarray"
    uniques: list


_NULLS = [v for t in ("", "N/A", "NA", "None", "NULL", "-", "--") for v in dict.fromkeys((t, t.upper(), t.lower()))]


def read_typed(path: Path, text: tuple[str, ...], numeric: tuple[str, ...], optional: tuple[str, ...],
               stamp_re: "re.Pattern[str]", duration_re: "re.Pattern[str]", root: Optional[Path] = None,
               raw: Optional[list] = None) -> Optional[dict]:
    """`{column: Coded}` for the `text` columns and `{column: float64 array}` for the `numeric` ones of a clean
    CSV, equal to what `tables.typed_from_frame` makes of the careful path's frame; None on anything irregular
    (then the careful path reads the file and names the problem). Stricter than `read_clean`: a text column with
    a number-like or non-finite cell, or a numeric column with an empty / N/A cell, takes the careful path too.
    Text columns are dictionary-encoded while parsing, so their screening and grouping work on the distinct
    values, not on every row. `raw`: a list the file's bytes as read are appended to when the columns are returned
    (the door's duplicate check reads them instead of the file)."""
    try:
        return _read_typed(path, text, numeric, optional, stamp_re, duration_re, root, raw)
    except Exception:  # noqa: BLE001 - any surprise: the careful path reads the file and names the problem
        return None


def _read_typed(path, text, numeric, optional, stamp_re, duration_re, root, raw=None):
    columns = (*text, *numeric)
    clean = _open_clean(path, columns, optional, stamp_re, root)
    if clean is None:
        return None
    out = _typed_columns(clean, text, columns, stamp_re, duration_re)
    if out is not None and raw is not None:
        raw.append(clean.raw)
    return out


def _typed_columns(clean: _Clean, text, columns, stamp_re, duration_re) -> Optional[dict]:
    import numpy as np
    import pyarrow as pa

    names, stamps, want = clean.names, clean.stamps, clean.want
    keys = [f"c{i}" for i in range(len(names))]
    # numbers (and time stamps) parsed as float64 while reading; the usual spellings of a missing value (empty,
    # N/A, NULL, -, ...) become NaN as the careful path makes them; any other text fails the whole read (the
    # careful path), and "nan" / "inf" parse but are refused below
    if len(clean.data) <= SMALL_BYTES:
        small = _read_small(clean, text, columns, stamp_re, duration_re)
        if small is not None:
            return small
    kinds = {keys[i]: pa.dictionary(pa.int32(), pa.string()) if names[i] in text else pa.float64() for i in want}
    table = _parse(clean, kinds, null_values=_NULLS)
    if table is None:
        return None
    out: dict = {}
    for i in want:
        name, col = names[i], table.column(keys[i])
        if name in text:
            if NUMERIC_HEADER_RE.search(name):
                return None  # a unit in the header: the careful path decides what the column is
            col = col.unify_dictionaries() if col.num_chunks > 1 else col
            chunks = col.chunks or [pa.array([], pa.dictionary(pa.int32(), pa.string()))]
            values = [v.strip() for v in chunks[0].dictionary.to_pylist()]
            for v in values:
                u = v.upper()
                if u in BAD_TOKENS or (u not in NA_TOKENS and NUMBER_RE.fullmatch(v)):
                    return None  # numbers in a text column: the careful path
            if not values:
                out[name] = Coded(np.zeros(0, np.int64), [])
                continue
            idx = np.concatenate([c.indices.to_numpy(zero_copy_only=False) for c in chunks]).astype(np.int64)
            distinct = {}
            stripped = np.array([distinct.setdefault(v, len(distinct)) for v in values], dtype=np.int64)
            if len(distinct) == len(values) and _first_order(idx, len(values)):
                # pyarrow numbered the values as they came (one chunk: the usual file) and stripping merged none:
                # its indices are already the codes below (20,800 kernel names: 0.1 ms less a column)
                out[name] = Coded(idx, values)
                continue
            row = stripped[idx]
            first = np.full(len(distinct), len(row), dtype=np.int64)
            np.minimum.at(first, row, np.arange(len(row), dtype=np.int64))
            seen = np.flatnonzero(first < len(row))
            order = seen[np.argsort(first[seen], kind="stable")]  # codes in order of first appearance
            remap = np.empty(len(distinct), dtype=np.int64)
            remap[order] = np.arange(len(order))
            uniques = list(distinct)
            out[name] = Coded(remap[row], [uniques[j] for j in order])
        else:
            arr = col.to_numpy(zero_copy_only=False)  # missing cells: NaN
            missing = col.is_null().to_numpy(zero_copy_only=False) if col.null_count else None
            if missing is not None and name not in columns:
                return None  # a time stamp with a gap: the careful path's duplicate check sees the text
            present = arr if missing is None else arr[~missing]
            if not np.all(np.isfinite(present)) or (len(present) and np.abs(present).max() > MAX_ABS_NUMBER):
                return None
            if duration_re.search(name) and (arr[~np.isnan(arr)] < 0).any():
                return None
            if name in columns:
                out[name] = arr
    stamped = [keys[i] for i in want if stamp_re.search(names[i])]
    if stamps or any(stamp_re.search(c) for c in columns):
        # identical rows have identical stamps: distinct stamps prove there is no duplicate. Equal floats from
        # different texts ("1.0", "1.00") count as equal here, which can only send a clean file the careful way
        if not stamped or not _distinct(table.column(stamped[0]).to_numpy()):
            cols = [keys[i] for i in want]
            plain = table.select(cols).cast(pa.schema([(k, pa.string() if pa.types.is_dictionary(table.schema.field(
                k).type) else pa.float64()) for k in cols]))
            if plain.group_by(cols, use_threads=False).aggregate([]).num_rows != table.num_rows:
                return None  # duplicated rows: the careful path counts them once and says so
    return out


# --- small files: the same columns without pyarrow ---------------------------------------------------------------

SMALL_BYTES = 8 * 1024  # op_statistic.csv, operator_memory.csv, step phases: a pyarrow parse costs ~0.15 ms to set up
# a cell pyarrow reads as float64 (spaces and tabs around it trimmed), in the forms `screen.NUMBER_RE` takes
_PLAIN_NUMBER = re.compile(r"[ \t]*[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[ \t]*")
# the same cells joined by line breaks, each read one way only and atomic: never backtracking into an earlier cell
_PLAIN = plain_number("[0-9]")
_PLAIN_COLUMN = cells_column(_PLAIN)
_NULL_CELLS = frozenset(_NULLS)
# cells each a plain number or a null spelling as written (the longer spellings tried first: "--" before "-")
_NUMBER_OR_NULL = "(?>" + "|".join([_PLAIN, *(re.escape(t) for t in sorted(_NULL_CELLS, key=len, reverse=True))]) + ")"
_NUMBER_OR_NULL_COLUMN = cells_column(_NUMBER_OR_NULL)


def _read_small(clean: _Clean, text, columns, stamp_re, duration_re) -> Optional[dict]:
    """`_read_typed`'s columns of a small unquoted CSV, read with str.split: the same codes, uniques and numbers;
    None (then pyarrow reads it) on anything this reader does not take as pyarrow would: a carriage return, a
    blank line, a row of another width, invalid UTF-8, a number-column cell that is neither a plain number nor a
    null spelling, a time stamp that repeats or is missing."""
    import numpy as np

    data, names, want = clean.data, clean.names, clean.want
    if b"\r" in data or clean.quoted:
        return None
    try:
        lines = data.decode("utf-8").split("\n")[1:-1]  # (the header; the text after the last line break: empty)
    except UnicodeDecodeError:
        return None
    width = len(names)
    rows = [line.split(",") for line in lines]
    if len(rows) != clean.rows or "" in lines or any(len(r) != width for r in rows):
        return None  # a blank line or a row of another width: pyarrow decides (it counts them)
    by_column = list(zip(*rows))
    out: dict = {}
    stamped = None
    for i in want:
        name, cells = names[i], by_column[i]
        if name in text:
            if NUMERIC_HEADER_RE.search(name):
                return None
            distinct: dict = {}
            codes = [distinct.setdefault(c.strip(), len(distinct)) for c in cells]
            for v in distinct:
                u = v.upper()
                if u in BAD_TOKENS or (u not in NA_TOKENS and NUMBER_RE.fullmatch(v)):
                    return None  # numbers in a text column: the careful path
            out[name] = Coded(np.array(codes, dtype=np.int64), list(distinct))
            continue
        joined = "\n".join(cells)
        if _PLAIN_COLUMN.fullmatch(joined):  # every cell a plain number (the usual column): one match
            vals = list(map(float, cells))
            if max(map(abs, vals)) > MAX_ABS_NUMBER or (duration_re.search(name) and min(vals) < 0):
                return None  # (an overflow to infinity is over the limit too)
            arr = np.array(vals, dtype=np.float64)
            if stamp_re.search(name) and stamped is None:
                stamped = arr
            if name in columns:
                out[name] = arr
            continue
        if not _NUMBER_OR_NULL_COLUMN.fullmatch(joined):
            return None  # a cell that is neither a plain number nor a null spelling
        arr = np.array([math.nan if c in _NULL_CELLS else float(c) for c in cells], dtype=np.float64)
        nan = np.isnan(arr)
        if name not in columns and nan.any():
            return None  # a time stamp with a gap
        present = arr[~nan]
        if not np.all(np.isfinite(present)) or (len(present) and np.abs(present).max() > MAX_ABS_NUMBER):
            return None
        if duration_re.search(name) and (present < 0).any():
            return None
        if stamp_re.search(name) and stamped is None:
            stamped = arr
        if name in columns:
            out[name] = arr
    if clean.stamps or any(stamp_re.search(c) for c in columns):
        if stamped is None or not _distinct(stamped):
            return None  # maybe duplicated rows: pyarrow's path counts them
    return out
