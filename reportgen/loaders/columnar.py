"""The fast path of `common.read_frame`: a clean CSV parsed and screened column-wise with pyarrow (C++).

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
import re
from pathlib import Path
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    import pandas as pd

FAST_MAX_BYTES = 1 << 30  # larger files take the careful (streaming-friendlier) path
_STRICT_NUMBER = r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$"  # `common._NUMBER`, anchored (RE2 syntax)


def read_clean(path: Path, columns: tuple[str, ...], optional: tuple[str, ...], screen: bool,
               stamp_re: "re.Pattern[str]", duration_re: "re.Pattern[str]") -> Optional["pd.DataFrame"]:
    """The frame `read_frame` would return for a clean file, or None (then the careful path decides)."""
    try:
        return _read_clean(path, columns, optional, screen, stamp_re, duration_re)
    except Exception:  # noqa: BLE001 - any surprise: the careful path reads the file and names the problem
        return None


def _read_clean(path: Path, columns, optional, screen, stamp_re, duration_re):
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyarrow import csv as pacsv

    from reportgen.loaders.common import (BAD_TOKENS, MAX_ABS_NUMBER, NA_TOKENS, _numeric_by_header, clean_cell,
                                          open_file)

    with open_file(path, "rb") as f:
        data = f.read(FAST_MAX_BYTES + 1)
    if len(data) > FAST_MAX_BYTES or not data.endswith(b"\n"):
        return None  # huge, empty, or cut off mid-row: the careful path
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    end = data.find(b"\n")
    first = data[:end].decode("utf-8")  # strict: invalid UTF-8 goes the careful way
    header = next(csv.reader([first]), [])
    names = [clean_cell(h) for h in header]
    if not any(names) or len(set(names)) != len(names):
        return None
    if any(c not in names and c not in optional for c in columns):
        return None
    stamps = [n for n in names if stamp_re.search(n) and n not in columns]
    want = [i for i, n in enumerate(names) if n in columns or n in stamps]
    if not want:
        return None
    rows = data.count(b"\n") - 1
    if rows < 1:
        return None
    bad = [0]

    def invalid(_row) -> str:
        bad[0] += 1
        return "skip"

    keys = [f"c{i}" for i in range(len(names))]
    table = pacsv.read_csv(
        pa.BufferReader(data),
        read_options=pacsv.ReadOptions(column_names=keys, skip_rows=1, use_threads=False),
        parse_options=pacsv.ParseOptions(invalid_row_handler=invalid),
        convert_options=pacsv.ConvertOptions(include_columns=[keys[i] for i in want],
                                             column_types={keys[i]: pa.string() for i in want},
                                             strings_can_be_null=False, quoted_strings_can_be_null=False))
    if bad[0] or table.num_rows != rows:
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
                if n_strict or _numeric_by_header(names[i], n_strict + other):
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
