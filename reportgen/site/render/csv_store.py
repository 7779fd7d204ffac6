"""The gzipped CSV downloads kept between builds (issue 33, the rebuild): a large run's rank pages each carry two
`.csv.gz` tables whose bytes are the same in every language and with any thresholds, and writing them (the cells'
text, then gzip at level 9) is ~30 % of a rank page's CPU. A table's bytes are found again by a fingerprint of
what they are made of -- the columns' keys and labels (as this build writes them: a translated header is another
table) and every cell, exactly (the arrays' dtype and bytes; lists of plain values pickled, so 1, 1.0 and "1"
differ) -- so a hit gives the very bytes `csv_text` and gzip would write. A table with any other kind of cell (a
lazily translated text, an object) is not fingerprinted: it is written as always. A table that names its source
(`csv_text.SourcedRows`: a rank's operators as sealed) is also found by that and its columns (`source_key`), before
any cell of it is made: a rebuild neither builds nor hashes a rank's operator table again (~0.12 ms a rank
page of the 256-rank realistic shape, 210 operators a rank; the communication operators' table (1,600 a rank) is
still fingerprinted: what it is made of is the whole run's analysis).

The store is one rank cache entry (`rankcache.write_entry` / `read_entry`: atomic, CRC-checked, owner-checked) in
the build's cache folder, keyed by msreport's code (`rankcache.environment_key`), zlib's version and the gzip
levels (`GzipLevels`), holding the tables the last build wrote. Forked page writers inherit it (`use`, set before the fork) and
send back what they added and used (`delta`); the build then writes it again (`save`) when that changed. No cache
folder: no store, every table written as always. A damaged store is a miss."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import pickle
import zlib
from pathlib import Path
from typing import NamedTuple, Optional, Union

import numpy as np

from reportgen import rankcache
from reportgen.site.render.csv_text import CodedColumn, SourcedRows, csv_table, table_csv

ENTRY = "csv-gz.pkl"  # in the rank cache folder
_PLAIN = frozenset((str, int, float, bool, type(None)))


class GzipLevels(NamedTuple):
    """The gzip level of a download by the size of its CSV text: `small` up to `large_bytes`, `large` above (the
    bytes of a table decide it, so a table is compressed alike on every build)."""

    small: int
    large: int
    large_bytes: int

    def level(self, n: int) -> int:
        return self.small if n <= self.large_bytes else self.large


def levels_of(levels: Union[int, GzipLevels]) -> GzipLevels:
    """`levels` as `GzipLevels` (an int: that level for every table)."""
    return levels if isinstance(levels, GzipLevels) else GzipLevels(levels, levels, 0)


def compress(text: str, levels: Union[int, GzipLevels]) -> bytes:
    """A CSV text gzipped (mtime 0: the same bytes on every build) at the level its size calls for."""
    data = text.encode("utf-8")
    return gzip.compress(data, compresslevel=levels_of(levels).level(len(data)), mtime=0)


class CsvStore:
    def __init__(self, folder: Optional[Path], levels: Union[int, GzipLevels]) -> None:
        self.folder, self.levels = folder, levels_of(levels)
        self.key = ("csv gz", 2, rankcache.environment_key(), zlib.ZLIB_RUNTIME_VERSION, tuple(self.levels))
        got = rankcache.read_entry(folder / ENTRY, self.key) if folder is not None else None
        ok = isinstance(got, tuple) and len(got) == 2 and all(isinstance(x, dict) for x in got)
        # the tables by fingerprint, and the fingerprint of the table of each source (`source_key`)
        self.old: dict[bytes, bytes] = got[0] if ok else {}  # type: ignore[index]
        self.old_sources: dict[bytes, bytes] = got[1] if ok else {}  # type: ignore[index]
        self.new: dict[bytes, bytes] = {}
        self.new_sources: dict[bytes, bytes] = {}
        self.used: set[bytes] = set()
        self.used_sources: set[bytes] = set()

    def gz(self, columns: list[dict], rows) -> bytes:
        """The download's gzipped CSV (`csv_text`, gzipped by `compress` at this store's levels)."""
        source = source_key(columns, rows.source) if isinstance(rows, SourcedRows) and rows.source else None
        if source is not None:
            got = self._get(self.old_sources.get(source) or self.new_sources.get(source))
            if got is not None:
                self.used_sources.add(source)
                return got
        table, n = csv_table(columns, rows)
        fp = fingerprint(columns, table, n)
        out = self._get(fp)
        if out is None:
            out = compress(table_csv(columns, table, n), self.levels)
            if fp is not None:
                self.new[fp] = out
                self.used.add(fp)
        if source is not None and fp is not None:
            self.used_sources.add(source)
            if self.old_sources.get(source) != fp:
                self.new_sources[source] = fp
        return out

    def holds(self, columns: list[dict], source: bytes) -> bool:
        """The store has the CSV of the table of `source` (`SourcedRows`) with these columns."""
        key = source_key(columns, source)
        fp = self.old_sources.get(key) or self.new_sources.get(key)
        return fp is not None and (fp in self.old or fp in self.new)

    def _get(self, fp: Optional[bytes]) -> Optional[bytes]:
        got = (self.old.get(fp) or self.new.get(fp)) if fp is not None else None
        if got is not None:
            self.used.add(fp)  # type: ignore[arg-type]
        return got

    def delta(self) -> tuple:
        """(tables added, fingerprints used, sources added, sources used) since the last call (a forked writer's
        share, for `merge`)."""
        out = (self.new, self.used, self.new_sources, self.used_sources)
        self.new, self.used, self.new_sources, self.used_sources = {}, set(), {}, set()
        return out

    def merge(self, got: tuple) -> None:
        new, used, new_sources, used_sources = got
        self.new.update(new)
        self.used |= used
        self.new_sources.update(new_sources)
        self.used_sources |= used_sources

    def save(self) -> None:
        """The tables this build wrote, for the next build (none other: the store never grows past one site), and
        the sources it found them by."""
        if self.folder is None or (not self.new and not self.new_sources and self.used == set(self.old)
                                   and self.used_sources == set(self.old_sources)):
            return
        keep = {fp: self.new.get(fp) or self.old[fp] for fp in self.used if fp in self.new or fp in self.old}
        sources = {k: fp for k in self.used_sources
                   if (fp := self.new_sources.get(k) or self.old_sources.get(k)) in keep}
        rankcache.write_entry(self.folder / ENTRY, self.key, (keep, sources))


def source_key(columns: list[dict], source: bytes) -> bytes:
    """The store's key of a table of `source` (`SourcedRows`): the source and the columns' keys and labels as this
    build writes them (a translated header is another file)."""
    h = hashlib.sha256(b"\0source\0" + source)
    h.update(pickle.dumps([(c["key"], str(c["label"])) for c in columns], protocol=pickle.HIGHEST_PROTOCOL))
    return h.digest()


def fingerprint(columns: list[dict], table: dict, n: int) -> Optional[bytes]:
    """What the table's CSV is made of, exactly (None: a cell of a kind that cannot be told so). SHA-256: hashed in
    hardware here, about twice blake2b's speed (a rank's 1,600 communication operators are ~130 KB to hash, on every
    page of a large run)."""
    h = hashlib.sha256()
    h.update(pickle.dumps((n, [(c["key"], str(c["label"])) for c in columns]), protocol=pickle.HIGHEST_PROTOCOL))
    for c in columns:
        col = table.get(c["key"])
        if isinstance(col, CodedColumn):  # (its values' digest and its codes: `csv_text.CodedColumn`)
            codes = col.codes
            if col.key is None or not isinstance(codes, np.ndarray) or codes.dtype.kind not in "iu" or codes.ndim != 1:
                return None
            h.update(b"\0coded" + col.key + codes.dtype.str.encode() + str(len(codes)).encode() + b"\0")
            h.update(np.ascontiguousarray(codes).tobytes())
        elif isinstance(col, np.ndarray):
            if col.dtype.kind not in "biuf" or col.ndim != 1:
                return None
            h.update(b"\0array" + col.dtype.str.encode() + str(len(col)).encode() + b"\0")
            h.update(np.ascontiguousarray(col).tobytes())
        elif isinstance(col, list) or col is None:
            if col and not set(map(type, col)) <= _PLAIN:
                return None
            h.update(b"\0list\0" + pickle.dumps(col, protocol=pickle.HIGHEST_PROTOCOL))
        else:
            return None
    return h.digest()


_active: Optional[CsvStore] = None


@contextlib.contextmanager
def use(store: Optional[CsvStore]):
    """`store` is where `gz_csv` looks inside the block (and in page writers forked inside it)."""
    global _active
    prev, _active = _active, store
    try:
        yield store
    finally:
        _active = prev


def active() -> Optional[CsvStore]:
    return _active


def holds(columns: list[dict], source: bytes) -> bool:
    """The active store has the CSV of the table of `source` (a page then plans only the rows it shows)."""
    return _active is not None and _active.holds(columns, source)


def gz_csv(columns: list[dict], rows, levels: Union[int, GzipLevels]) -> bytes:
    """The download's gzipped CSV: from the active store when it holds the same table, else written."""
    if _active is not None and _active.levels == levels_of(levels):
        return _active.gz(columns, rows)
    table, n = csv_table(columns, rows)
    return compress(table_csv(columns, table, n), levels)
