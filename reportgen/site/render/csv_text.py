"""The CSV downloads' text: every cell as `csv_value` writes it, the file as `csv.writer` would (built column by
column: a large run writes millions of cells)."""

from __future__ import annotations

import csv
import hashlib
import io
import math
import pickle
import re
from itertools import chain
from typing import Optional

import numpy as np

from reportgen.site.plan.page import LazyRows


def csv_value(v):
    """A CSV cell: whole floats as integers (a count is `208`, not `208.0`); other floats with the digits the data
    carries, 9 significant digits or 6 decimals, whichever keeps more (ms totals of nanosecond durations keep every
    nanosecond; `8.552121000000003` becomes `8.552121`, summation noise dropped). Timestamps and other numbers of
    12+ digits keep their shortest repr. `tests/test_size.py` checks the round trip."""
    if type(v) is float:
        a = abs(v)
        if a < 1000.0:  # (NaN fails every comparison: below)
            return int(v) if v.is_integer() else f"{v:.9g}"  # fewer than 4 integer digits: 9 significant
        if not math.isfinite(v):
            return v
        if v.is_integer() and a < 1e15:
            return int(v)
        digits = max(9, math.floor(math.log10(a)) + 1 + 6)
        return repr(v) if digits >= 17 else f"{v:.{digits}g}"
    if isinstance(v, float) and not isinstance(v, bool):  # a float subclass (numpy float64): the same rule
        return csv_value(float(v))
    return v


def _csv_field(v) -> str:
    """What `csv.writer` writes for a cell holding `v` (after `csv_value`): floats as their repr, else str."""
    v = csv_value(v)
    return v if isinstance(v, str) else repr(v) if isinstance(v, float) else str(v)


_CSV_SPECIAL = re.compile('[,"\r\n]').search  # a field holding one of these is quoted (csv.QUOTE_MINIMAL)


def _csv_quoted(field: str) -> str:
    return '"' + field.replace('"', '""') + '"' if _CSV_SPECIAL(field) else field


def csv_text(columns: list[dict], rows) -> str:
    """A download's CSV, as `csv.writer` writes it: a header of the columns' labels, then a line per row (rows of
    dicts, or a `LazyRows` that gives its table column by column). Built column by column, each cell as
    `csv_value` writes it (its commonest cases inline: a large run writes millions of cells), a column scanned
    once for characters that need quotes."""
    return table_csv(columns, *csv_table(columns, rows))


class CodedColumn:
    """A table column of labels given as codes into a list of distinct values (`values[codes]`, an object array),
    as a run's operator frames hold them: the CSV store's fingerprint reads the codes and the values' digest
    (`key`, of the whole list, made once) instead of every cell (a rank's 1,600 operator names, on every page of a
    large run); the CSV and any reader of the table see the values, as a list would give them."""

    __slots__ = ("codes", "values", "key")

    def __init__(self, codes: np.ndarray, values: np.ndarray, key: Optional[bytes]) -> None:
        self.codes, self.values, self.key = codes, values, key

    def tolist(self) -> list:
        return self.values[self.codes].tolist()

    def __len__(self) -> int:
        return len(self.codes)

    def __iter__(self):
        return iter(self.tolist())

    def __getitem__(self, i):
        return self.values[self.codes[i]].tolist() if isinstance(i, slice) else self.values[self.codes[i]]


class SourcedRows(LazyRows):
    """A download's table, column by column, built only when its CSV is written (`LazyRows`), with `source`: a
    digest of everything its cells are made from but msreport's code (a rank's operators as they were sealed,
    `sealed.Sealed.digest`; a rank's communication operators by the analysis' cache key and their groups' labels),
    or None. The CSV store finds a table's file by its source
    without building the table (`csv_store.CsvStore.gz`): two tables of one source must hold the same cells."""

    def __init__(self, fn, source: Optional[bytes]) -> None:
        super().__init__(fn, columns=True)
        self.source = source


def values_key(values: np.ndarray) -> Optional[bytes]:
    """A `CodedColumn`'s `key`: a digest of its distinct values, exactly (each value's type and text, as a
    pickled list: 1, 1.0 and "1" differ), or None when one is not a plain value (its column is then never
    fingerprinted)."""
    cells = values.tolist()
    if not set(map(type, cells)) <= {str, int, float, bool, type(None)}:
        return None
    return hashlib.sha256(pickle.dumps(cells, protocol=pickle.HIGHEST_PROTOCOL)).digest()


def csv_table(columns: list[dict], rows) -> tuple[dict, int]:
    """A download's rows as (key -> one value per row, the count of rows): a `LazyRows` gives its table column by
    column; rows of dicts are read column by column."""
    if isinstance(rows, LazyRows) and rows.columns:
        table = rows.fn()
        return table, len(next(iter(table.values()), ()))
    rows = list(rows)
    return {k: [r.get(k) for r in rows] for k in (c["key"] for c in columns)}, len(rows)


def table_csv(columns: list[dict], table: dict, n: int) -> str:
    """`csv_text` of the table `csv_table` gives."""
    keys = [c["key"] for c in columns]
    if len(keys) < 2:  # (csv writes a lone empty field as "")
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow([c["label"] for c in columns])
        w.writerows([["" if v is None else csv_value(v) for v in vals] for vals in zip(*[table.get(k) or [None] * n
                                                                                          for k in keys])]
                    if keys else [[]] * n)
        return buf.getvalue()
    cols = [_cells(table.get(k), n) for k in keys]
    fmts, args = [], []
    for col in cols:
        if type(col) is _PlainFloats:
            kinds = {float}
        else:
            kinds = set(map(type, col))
        if n and kinds == {float} and (type(col) is _PlainFloats or _plain_floats(col)):
            fmts.append("%.9g")  # the commonest column: every cell "%.9g" (formatted in C, below)
            args.append(col)
            continue
        if kinds == {str}:  # a column of texts (names, labels): the cells as they are
            cells = col if type(col) is list else list(col)
        else:
            cells = ["" if v is None else v if (t := type(v)) is str else str(v) if t is int else
                     ((str(int(v)) if v.is_integer() else f"{v:.9g}") if t is float and -1000.0 < v < 1000.0 else
                      _csv_field(v)) for v in col]
        if _CSV_SPECIAL("\x00".join(cells)):
            quoted = {f: _csv_quoted(f) for f in set(cells)}  # (a label column repeats a few values)
            cells = [quoted[f] for f in cells]
        fmts.append("%s")
        args.append(cells)
    header = ",".join(_csv_quoted(str(c["label"])) for c in columns)
    n = min(map(len, args))  # columns of unequal length: the rows all of them hold (as zip, and csv.writer, did)
    if not n:
        return header + "\r\n"
    # one %-format over the whole table: the rows are joined (and the float cells written) in C
    return header + "\r\n" + ((",".join(fmts) + "\r\n") * n) % tuple(chain.from_iterable(zip(*args)))


class _PlainFloats(list):
    """A column of floats already known to pass `_plain_floats` (from a float64 array)."""


def _cells(col, n: int) -> list:
    """A table column as a list: a float64 array as `num_column` gives it (a value that is not finite is missing:
    None), its values known plain when they all are (checked vectorised)."""
    if isinstance(col, CodedColumn):
        return col.tolist()
    if isinstance(col, np.ndarray):
        if col.dtype.kind != "f":
            return col.tolist()
        if len(col) and bool(np.all(np.abs(col) < 1000.0)) and not bool(np.any(np.signbit(col) & (col == 0.0))):
            return _PlainFloats(col.tolist())
        out = col.tolist()
        for i in np.flatnonzero(~np.isfinite(col)).tolist():
            out[i] = None
        return out
    return col or [None] * n


def _plain_floats(col: list) -> bool:
    """A column of floats (none a subclass: the caller checks): every cell with |v| < 1000 and not -0.0: then
    `csv_value`'s cell is "%.9g" of it (a whole float's "%.9g" is its integer; a NaN fails the comparison, -0.0
    would be written "-0")."""
    a = np.asarray(col, dtype=np.float64)
    return bool(np.all(np.abs(a) < 1000.0)) and not bool(np.any(np.signbit(a) & (a == 0.0)))
