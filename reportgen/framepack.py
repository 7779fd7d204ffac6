"""Frames in a compact pickled form: a rank's summary crosses a process boundary (a worker to the main process) and
is stored in the rank cache (`rankcache`) as a pickle, and a 1,024-rank run holds a thousand of them (issue 33).

Over 500 lines: one format, its writing (`pack`, the texts' table) and its reading (`unpack`, `table`, `chunks`,
`columns_of`, `stack`: a few columns read, frames stacked, without building each frame) share the packed tuple's
layout and the chunks' codes.

`pack(frame, texts)` turns a frame into plain arrays: float, integer and boolean columns as one 2-D array per dtype,
nullable integers and pandas' `str` columns as their arrays, and text columns (object columns holding only `str`, NaN
or None) as int32 codes into `texts` (`Texts`), a table shared by every frame packed with it (a rank's operator names
are written once for its operators and its collective instances). `unpack(packed, table(payload))` builds the same
frame back (the same columns, dtypes, values and index) straight from those blocks, and every text is `sys.intern`ed:
the ranks of a run share one copy of each operator name, group and key in memory instead of one per rank. The table is
pickled in chunks (the texts of one group, say), and a chunk another rank had already is not decoded nor interned
again. A frame this cannot represent exactly (another index, other dtypes, duplicate or non-text column names, an
object column holding anything but texts) is kept as it is, so packing never changes a value.
"""

from __future__ import annotations

import io
import math
import pickle
import sys
from typing import Any, Optional

import numpy as np
import pandas as pd

try:  # pandas >= 2.3: a frame from ready blocks, without the per-column checks of the dict constructor
    from pandas.api.internals import create_dataframe_from_blocks as _from_blocks
except ImportError:  # pragma: no cover - older pandas: the dict constructor (the same frame, slower)
    _from_blocks = None

_NAN, _NONE = 0, 1  # the codes of a missing text: NaN (the loaders' missing value) and None; texts from 2
_PLAIN = {np.dtype("float64"), np.dtype("int64"), np.dtype("bool")}
_OBJECT = np.dtype("object")
_STR = {str}


def _codes(values: np.ndarray, texts: "Texts") -> Optional[np.ndarray]:
    """int32 codes of an object column into `texts` (grown as needed; a text's code is its place in the table + 2,
    `_NAN` and `_NONE` the missing ones); None when a value is not a `str`, NaN (a float) or None (a list, say)."""
    if len(values) > 64 and set(map(type, values)) == _STR:  # texts the table has (a chunk): looked up, no hashing
        try:
            return np.fromiter(map(texts.index.__getitem__, values), dtype=np.int32, count=len(values)) + 2
        except KeyError:
            pass
    try:
        codes, uniques = pd.factorize(values, use_na_sentinel=True)  # a hash table in C; None and NaN: -1
    except TypeError:  # (a value that cannot be hashed)
        return None
    uniques = uniques.tolist()
    if not set(map(type, uniques)) <= _STR:
        return None
    get = texts.index.get
    found = [get(u) for u in uniques]  # most texts are in the table already (a group's chunk)
    if None in found:
        code = texts.code
        found = [code(u) if i is None else i for u, i in zip(uniques, found)]
    ids = np.array(found, dtype=np.int32) + 2
    out = ids.take(codes) if len(ids) else np.zeros(len(codes), dtype=np.int32)
    missing = np.flatnonzero(codes < 0)
    if len(missing):
        for i in missing.tolist():
            v = values[i]
            if v is None:
                out[i] = _NONE
            elif type(v) is float and v != v:
                out[i] = _NAN
            else:  # pd.NA, NaT, a NumPy NaN: kept as they are (the frame is not packed)
                return None
    return out


class Texts:
    """The text table of frames packed together: the texts in order, each text's code its first place. The table
    can start with chunks (`add_chunk`: the texts of one group, say, every one of them even where an earlier chunk
    has it, so that the chunk is the same on every rank that has the group); `payload` is what is pickled, and
    `table` reads it back, each distinct chunk decoded and interned once per process."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.texts: list[str] = []
        self.cuts: list[int] = []

    def add_chunk(self, texts: list[str]) -> None:
        for t in texts:
            self.index.setdefault(t, len(self.texts))
            self.texts.append(t)
        self.cuts.append(len(self.texts))

    def add_chunks(self, chunks: list[list[str]]) -> None:
        """`add_chunk` of each (a table that holds nothing yet: its index built in one pass)."""
        if self.texts:
            for c in chunks:
                self.add_chunk(c)
            return
        for c in chunks:
            self.texts.extend(c)
            self.cuts.append(len(self.texts))
        n = len(self.texts)  # a text's code is its first place: the later places written first, then overwritten
        self.index = dict(zip(reversed(self.texts), range(n - 1, -1, -1)))

    def code(self, text: str) -> int:
        i = self.index.get(text)
        if i is None:
            i = self.index[text] = len(self.texts)
            self.texts.append(text)
        return i

    def payload(self) -> list:
        """The chunks (and the texts added after them, as the last), each one string with the texts joined by NUL
        (a chunk that is empty or holds a NUL: a tuple)."""
        out, start = [], 0
        for end in [*self.cuts, len(self.texts)]:
            chunk = self.texts[start:end]
            joined = "\x00".join(chunk)
            out.append(joined if chunk and joined.count("\x00") == len(chunk) - 1 else tuple(chunk))
            start = end
        return out


def chunks_by(columns: list[tuple[np.ndarray, np.ndarray]]) -> list[list[str]]:
    """The texts of `columns` ((texts, groups) pairs of object arrays, row by row) gathered per group: each group's
    distinct `str` texts in the order they come (the pairs in order, then the rows), the groups in the order they
    first come; a row whose group is not a `str` is left out. One chunk per group for `Texts.add_chunks`: every rank
    of a group has the same chunk (the names of its operators), read once by `table`. A sort and a hash table per
    group (C) instead of a dict operation per text."""
    return chunks_and_codes(columns)[0]


def chunks_and_codes(columns: list[tuple[np.ndarray, np.ndarray]]) -> tuple[list[list[str]], Optional[list]]:
    """(`chunks_by(columns)`, each column's codes into a table that starts with those chunks: `Texts.add_chunks` on
    an empty table; what `pack` would find, read off the chunks instead of looked up text by text), the codes None
    unless every text and group is a `str`."""
    pairs = [(t, g) for t, g in columns if len(t)]
    if not pairs:
        return [], None
    texts = np.concatenate([t for t, _ in pairs]) if len(pairs) > 1 else pairs[0][0]
    # the group arrays, each once (a frame's group column pairs with each of its text columns)
    distinct = list({id(g): g for _, g in pairs}.values())
    types = {*map(type, texts)}.union(*(map(type, g) for g in distinct))
    if any(t is not str and issubclass(t, str) for t in types):
        return _chunks_one_by_one(pairs), None  # a `str` subclass equals a `str` (one hash key) but is left out
    all_str = types == _STR
    codes, uniques = _group_codes([g for _, g in pairs], distinct)  # groups in the order they first come
    keep = np.array([type(u) is str for u in uniques.tolist()] + [False], dtype=bool)  # (code -1: the last)
    order = np.argsort(codes, kind="stable")
    ends = np.searchsorted(codes, np.arange(len(uniques) + 1), side="left", sorter=order)
    out = []
    rows = np.empty(len(texts), dtype=np.int32) if all_str else None
    base = 2  # (the table's first two codes: the missing texts, `_NAN` and `_NONE`)
    for k in range(len(uniques)):
        if not keep[k]:
            continue
        at = order[ends[k]:ends[k + 1]]
        if rows is not None:  # a group's texts in the order they come, and each row's place among them
            local, seg = pd.factorize(texts.take(at))
            rows[at] = local + base
            seg = seg.tolist()
            base += len(seg)
            out.append(seg)
            continue
        seg = dict.fromkeys(texts.take(at).tolist())
        if not set(map(type, seg)) <= _STR:
            seg = {t: None for t in seg if type(t) is str}
        out.append(list(seg))
    if rows is None:
        return out, None
    cuts = np.cumsum([len(t) for t, _ in columns])[:-1]
    return out, np.split(rows, cuts)


def _group_codes(groups: list[np.ndarray], distinct: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """`pd.factorize(np.concatenate(groups), use_na_sentinel=True)` with each distinct array of `groups` (by
    identity) factorised once: its codes renumbered into the concatenation's (the values in the order they first
    come over the arrays in order), then laid end to end."""
    if len(distinct) == len(groups):
        return pd.factorize(np.concatenate(groups) if len(groups) > 1 else groups[0], use_na_sentinel=True)
    index: dict = {}
    own: dict[int, np.ndarray] = {}
    values: list = []
    for g in groups:
        if id(g) in own:
            continue
        c, u = pd.factorize(g, use_na_sentinel=True)
        to = np.empty(len(u) + 1, dtype=np.intp)  # (the last: code -1 stays -1)
        to[-1] = -1
        for i, v in enumerate(u.tolist()):
            j = index.get(v)
            if j is None:
                j = index[v] = len(values)
                values.append(v)
            to[i] = j
        own[id(g)] = to[c]
    codes = np.concatenate([own[id(g)] for g in groups])
    return codes, np.array(values + [None], dtype=object)[:-1]  # (a 1-D array whatever the values)


def _chunks_one_by_one(pairs: list) -> list[list[str]]:
    """`chunks_by`, a dict operation per text."""
    per: dict = {}
    for texts, groups in pairs:
        for t, g in zip(texts.tolist(), groups.tolist()):
            if type(g) is str:
                d = per.setdefault(g, {})
                if type(t) is str:
                    d[t] = None
    return [list(d) for d in per.values()]


def pack(frame: Any, texts: Texts, known: Optional[dict] = None) -> Any:
    """`frame` as a tuple of plain arrays (see the module), or `frame` itself when it is not a DataFrame or cannot
    be packed exactly. `known`: {column: its codes into `texts`} where the caller has them (`chunks_and_codes`)."""
    if type(frame) is not pd.DataFrame:
        return frame
    idx = frame.index
    cols = frame.columns.tolist()  # (not list(): a text Index iterates pyarrow value by value, ~3x slower)
    if (type(idx) is not pd.RangeIndex or idx.start != 0 or idx.step != 1 or idx.name is not None
            or any(type(c) is not str for c in cols) or len(set(cols)) != len(cols) or frame.columns.name is not None
            or type(frame.columns) is not pd.Index or frame.attrs or frame.flags.allows_duplicate_labels is not True):
        return frame
    plain: dict[np.dtype, list[int]] = {}
    coded: list[tuple[int, np.ndarray]] = []
    arrays: list[tuple[int, Any]] = []  # nullable integers, pandas' `str` columns: their arrays as they are
    values = column_arrays(frame)
    for i, (v, dt) in enumerate(zip(values, [a.dtype for a in values])):  # (`frame.dtypes`: a Series, ~15 us)
        if dt in _PLAIN:
            plain.setdefault(dt, []).append(i)
        elif dt == _OBJECT:  # texts (anything else in it: the frame is kept as it is)
            codes = known.get(cols[i]) if known else None
            if codes is None or len(codes) != len(v):
                codes = _codes(np.asarray(v), texts)
            if codes is None:
                return frame
            coded.append((i, codes))
        elif isinstance(dt, (pd.Int64Dtype, pd.StringDtype)):
            arrays.append((i, v))
        else:
            return frame
    # own, writable copies (a column may be a read-only view, and a read-only array unpickles read-only: the frame
    # would refuse an assignment later)
    blocks = [(np.array(ix, dtype=np.intp), np.array([np.asarray(values[i], dtype=dt) for i in ix]))
              for dt, ix in plain.items()]
    return ("framepack", 2, len(idx), (tuple(cols), _tag(frame.columns.dtype)), blocks, coded, arrays)


def column_arrays(frame: pd.DataFrame) -> list:
    """Each column's values as the frame stores them (a NumPy array or an extension array), in order: the frame's
    own iterator (~25x faster than a Series per column), else each column's Series."""
    it = getattr(frame, "_iter_column_arrays", None)
    if it is not None:
        return list(it())
    out = []  # pragma: no cover - pandas without the iterator
    for i in range(frame.shape[1]):
        s = frame.iloc[:, i]
        out.append(s.array if isinstance(s.dtype, pd.api.extensions.ExtensionDtype) else s.to_numpy())
    return out


def is_packed(x: Any) -> bool:
    """`x` is a frame as `pack` packed it."""
    return type(x) is tuple and len(x) == 7 and x[0] == "framepack" and x[1] == 2


def unpack(packed: Any, tab: Optional[np.ndarray]) -> Any:
    """The frame `pack` was given; `table` is `table(texts.payload())` for the texts it was packed with. Anything
    that is not a packed frame is returned as it is."""
    if not is_packed(packed):
        return packed
    return from_pieces(pieces(packed, tab))


def pieces(packed: Any, tab: Optional[np.ndarray]) -> tuple[int, tuple, list]:
    """What `unpack` builds the frame of (its rows, (column names, their dtype), its blocks: (values, columns)),
    the frame not built: pieces of frames of one layout are stacked at once (`stack`)."""
    _, _, n, names, blocks, coded, arrays = packed
    parts: list[tuple[Any, np.ndarray]] = [(values, ix) for ix, values in blocks]
    if coded:
        if tab is None:
            raise ValueError("a packed frame's texts without their table")
        codes = np.vstack([c for _, c in coded])  # the table starts with NaN and None (`table`)
        parts.append((tab.take(codes), np.array([i for i, _ in coded], dtype=np.intp)))
    parts += [(a, np.array([i], dtype=np.intp)) for i, a in arrays]
    return n, names, parts


def stack(frames: list) -> Optional[pd.DataFrame]:
    """`pd.concat([unpack(p, tab) ...], ignore_index=True)` of `pieces` of frames of one layout (the same columns in
    the same blocks of the same dtypes), built at once: the frame pd.concat gives, its blocks too (a block per run of
    adjacent columns that one block holds in every frame: a block layout changes the last digits of pandas'
    reductions); None where they are not of one layout or the frame cannot be built so."""
    if not frames or _from_blocks is None:
        return None
    names = frames[0][1]
    lay = [(ix.tobytes(), v.dtype, v.ndim) for v, ix in frames[0][2]]
    if any(f[1] != names or [(ix.tobytes(), v.dtype, v.ndim) for v, ix in f[2]] != lay for f in frames):
        return None
    if len(frames) == 1:  # (pd.concat keeps a lone frame's blocks)
        return from_pieces(frames[0])
    where = {int(i): (j, k) for j, (_, ix) in enumerate(frames[0][2]) for k, i in enumerate(ix.tolist())}
    runs: list[tuple[int, list, list]] = []  # (block, its rows, the columns): adjacent columns of one block
    for i in range(len(names[0])):
        j, k = where[i]
        if runs and runs[-1][0] == j:
            runs[-1][1].append(k)
            runs[-1][2].append(i)
        else:
            runs.append((j, [k], [i]))
    parts = []
    for j, rows, cols in runs:
        got = [f[2][j][0] for f in frames]
        if got[0].ndim == 2:
            at = slice(rows[0], rows[-1] + 1) if rows == list(range(rows[0], rows[0] + len(rows))) else rows
            values = np.concatenate(got if rows == list(range(len(got[0]))) else [v[at] for v in got], axis=1)
        else:
            values = type(got[0])._concat_same_type(got)
        parts.append((values, np.array(cols, dtype=np.intp)))
    return from_pieces((sum(f[0] for f in frames), names, parts))


def from_pieces(p: tuple) -> pd.DataFrame:
    """The frame of `pieces` (`unpack`'s)."""
    n, (names, dtype), parts = p
    index, columns = _range(n), _columns(names, dtype)
    if _from_blocks is not None:
        return _from_blocks(parts, index=index, columns=columns)
    out: dict[int, Any] = {}  # pragma: no cover - older pandas
    for v, ix in parts:
        for j, i in enumerate(ix):
            out[int(i)] = v if v.ndim == 1 else v[j]
    return pd.DataFrame({columns[i]: out[i] for i in range(len(columns))}, index=index, columns=columns, copy=False)


def layout(packed: Any) -> Any:
    """What the frame `packed` (`pack`'s) is made of without its rows: its column names and the dtype of each
    column (plain data: small to pickle, hashable); `empty(layout(p))` is `unpack(p, table).iloc[:0]`. Anything
    that is not a packed frame is returned as it is."""
    if not is_packed(packed):
        return packed
    _, _, _, names, blocks, coded, arrays = packed
    return ("layout", names, tuple((tuple(ix.tolist()), v.dtype.str) for ix, v in blocks),
            tuple(i for i, _ in coded), tuple((i, a.dtype) for i, a in arrays))


def empty(lay: Any) -> Any:
    """The frame of `layout` `lay` with no rows: one frame per layout in this process (read-only by contract: the
    frames a rank's analysis has released, `model.Communication.release_sealed`)."""
    if not (type(lay) is tuple and len(lay) == 5 and lay[0] == "layout"):
        return lay
    got = _INDEXES.get(lay)
    if got is None:
        _, names, blocks, coded, arrays = lay
        packed = ("framepack", 2, 0, names,
                  [(np.array(ix, dtype=np.intp), np.empty((len(ix), 0), dtype=np.dtype(dt))) for ix, dt in blocks],
                  [(i, np.empty(0, dtype=np.int32)) for i in coded],
                  [(i, pd.array([], dtype=dt)) for i, dt in arrays])
        got = unpack(packed, _MISSING if coded else None)
        if len(_INDEXES) > 4096:
            _INDEXES.clear()
        _INDEXES[lay] = got
    return got


class FramePickler(pickle.Pickler):
    """Every plain frame pickled packed (`pack`, with its own table: read ~4x faster, texts shared between ranks); a
    rank's communication frames come packed already (`model.Communication`)."""

    def reducer_override(self, obj):
        if type(obj) is pd.DataFrame:
            texts = Texts()
            packed = pack(obj, texts)
            if packed is not obj:
                return frame_from, (packed, texts.payload())
        return NotImplemented


def dumps(obj: Any) -> bytes:
    """`obj` pickled by `FramePickler` (a rank cache entry, a rank sent back by a worker, a `sealed.Sealed` object)."""
    buf = io.BytesIO()
    FramePickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buf.getvalue()


_INDEXES: dict = {}  # (column names, dtype) / a length -> the one Index of this process (immutable: shared by frames)


def frame(columns: dict) -> pd.DataFrame:
    """`pd.DataFrame(columns, copy=False)` (the same frame: columns, dtypes, values, one block per column), built
    from its blocks when every column is a 1-D NumPy array of numbers or booleans, a pandas extension array, a
    Series of either on the frame's RangeIndex (an object Series too: its objects, as the constructor keeps them),
    or a non-empty object array of `str` (the `str` array the constructor infers, made by `texts`):
    ~35 µs for 13 columns instead of ~150 µs of per-column checks. Anything else (lists, other object arrays the
    constructor would infer a dtype for, other names or indexes, unequal lengths) goes to the constructor."""
    parts = []
    n = None
    for i, v in enumerate(columns.values()):
        kinds = "fiub"
        if isinstance(v, pd.Series):
            idx = v.index
            if not (type(idx) is pd.RangeIndex and idx.start == 0 and idx.step == 1 and idx.name is None):
                return pd.DataFrame(columns, copy=False)
            v = v.array if isinstance(v.dtype, pd.api.extensions.ExtensionDtype) else v.to_numpy()
            kinds = "fiubO"  # (an object Series keeps its objects)
        elif type(v) is np.ndarray and v.dtype == _OBJECT and v.ndim == 1:
            v = texts(v)
            if v is None:
                return pd.DataFrame(columns, copy=False)
        if type(v) is np.ndarray and v.ndim == 1 and v.dtype.kind in kinds:
            m = len(v)
            v = v.reshape(1, -1)
        elif isinstance(v, pd.api.extensions.ExtensionArray) and v.ndim == 1:
            m = len(v)
        else:
            return pd.DataFrame(columns, copy=False)
        if n is None:
            n = m
        elif m != n:
            return pd.DataFrame(columns, copy=False)
        parts.append((v, np.array([i], dtype=np.intp)))
    names = tuple(columns)
    if _from_blocks is None or n is None or any(type(c) is not str for c in names):
        return pd.DataFrame(columns, copy=False)
    return _from_blocks(parts, index=_range(n), columns=_names(names))


_TEXTS: list = []  # [the array class and dtype of the constructor's text columns] ([None]: not made here)


def texts(values: np.ndarray) -> Any:
    """The column `pd.DataFrame` makes of a non-empty object array of `str` (pandas >= 3: its `str` array, backed
    by pyarrow), made from a pyarrow array directly (~3 µs instead of ~20 µs of inference and conversion); None for
    anything else (an empty array, a value that is not a `str`) or where this pandas makes it otherwise (checked
    once against the constructor: then the constructor decides)."""
    if not _TEXTS:
        _TEXTS.append(_text_maker())
    make = _TEXTS[0]
    if make is None or not len(values) or not all(type(v) is str for v in values.tolist()):
        return None
    try:
        return make(values)
    except Exception:  # noqa: BLE001 - (a lone surrogate pyarrow cannot encode): the constructor decides
        return None


def _text_maker() -> Any:
    """A function making the constructor's text column from an object array of `str`, checked on a sample to give
    what the constructor gives (the same array class, dtype and pyarrow type), or None."""
    try:
        import pyarrow as pa

        sample = np.array(["a", "b", "a", "é"], dtype=object)
        want = next(iter(pd.DataFrame({"c": sample})._iter_column_arrays()))
        cls, dtype = type(want), want.dtype
        kind = want.__arrow_array__().type

        def make(values: np.ndarray) -> Any:
            return cls(pa.array(values, type=kind), dtype=dtype)

        got = make(sample)
        same = (isinstance(dtype, pd.StringDtype) and type(got) is cls and repr(got.dtype) == repr(dtype)
                and got.dtype == dtype and got.__arrow_array__().equals(want.__arrow_array__()) and got.equals(want))
        return make if same else None
    except Exception:  # noqa: BLE001 - an older pandas (object columns, another array class): the constructor
        return None


def _names(names: tuple) -> pd.Index:
    """The columns `pd.DataFrame` makes of these names (one Index object per distinct set of names)."""
    key = ("frame", names)
    got = _INDEXES.get(key)
    if got is None:
        got = pd.Index(list(names))
        if len(_INDEXES) > 4096:
            _INDEXES.clear()
        _INDEXES[key] = got
    return got


_TAGS: dict = {}  # the usual dtypes of column names -> a text that stands for them in a packed frame (hashed fast)


def _tag(dtype: Any) -> Any:
    if not _TAGS:
        _TAGS.update({_OBJECT: "object", pd.Index(["a"]).dtype: "text"})  # (pandas >= 3: `str`, else object)
    return _TAGS.get(dtype, dtype)


def _columns(names: tuple, tag: Any) -> pd.Index:
    """The columns of a packed frame: one Index object per distinct set of names (a rank's frames have the same
    columns as every other rank's: building one Index per frame was a third of reading a rank)."""
    key = (names, tag)
    got = _INDEXES.get(key)
    if got is None:
        dtype = {"object": _OBJECT, "text": pd.Index(["a"]).dtype}.get(tag, tag) if type(tag) is str else tag
        got = pd.Index(list(names), dtype=dtype)
        if len(_INDEXES) > 4096:
            _INDEXES.clear()
        _INDEXES[key] = got
    return got


def _range(n: int) -> pd.RangeIndex:
    got = _INDEXES.get(n)
    if got is None:
        got = pd.RangeIndex(n)
        if len(_INDEXES) > 4096:
            _INDEXES.clear()
        _INDEXES[n] = got
    return got


_CHUNKS: dict[str, np.ndarray] = {}  # a chunk's text -> its texts interned (this process)
_CHUNK_CHARS = [0]
MAX_CHUNK_CHARS = 64_000_000  # the chunks remembered: beyond this many characters, forgotten (and read again)


def _chunk(p: Any) -> np.ndarray:
    if type(p) is not str:
        return np.fromiter(map(sys.intern, p), dtype=object, count=len(p))
    got = _CHUNKS.get(p)
    if got is None:
        parts = p.split("\x00")
        got = np.fromiter(map(sys.intern, parts), dtype=object, count=len(parts))
        if _CHUNK_CHARS[0] + len(p) > MAX_CHUNK_CHARS:
            _CHUNKS.clear()
            _CHUNK_CHARS[0] = 0
        _CHUNKS[p] = got
        _CHUNK_CHARS[0] += len(p)
    return got


_MISSING = np.array([math.nan, None], dtype=object)


def table(payload: list, need: Optional[list] = None) -> np.ndarray:
    """`Texts.payload` as the object array `unpack` takes: NaN and None (the missing codes), then every text,
    `sys.intern`ed (one object per text in this process, whichever rank it came from); a chunk already read (the
    texts of a group another rank of it had) is not decoded again. `need`: codes into the table (arrays): only the
    chunks they fall in are decoded (`chunks`), the others' places None (a table for the frames of those codes)."""
    if need is None:
        return np.concatenate([_MISSING, *(_chunk(p) for p in payload)])
    return table_of(*chunks(payload, need))


def table_of(starts: np.ndarray, got: list) -> np.ndarray:
    """The table of `chunks`' chunks, a chunk not read its places None."""
    return np.concatenate([_MISSING, *(np.empty(n, dtype=object) if c is None else c
                                       for c, n in zip(got, np.diff(starts).tolist()))])


def chunks(payload: list, need: list, cache: Optional[dict] = None) -> tuple[np.ndarray, list]:
    """`table(payload)` chunk by chunk: each chunk's first place in the table (the table's length last), and the
    chunks that codes `need` (arrays) fall in, decoded as `table` decodes them (one array object per chunk text in
    this process), None for the others (not decoded). `cache`: a dict of the caller's that the chunks are decoded
    into instead, their texts not interned (one array object per chunk text while the caller holds it: ~0.6 µs a
    text less, where the texts are read once)."""
    known = _CHUNKS if cache is None else cache
    sizes = []
    for p in payload:  # (a chunk read before: its length; else its texts counted, not decoded)
        got = known.get(p) if type(p) is str or cache is not None else None
        sizes.append(len(got) if got is not None else (p.count("\x00") + 1) if type(p) is str else len(p))
    starts = np.cumsum([2, *sizes])
    seen = np.zeros(int(starts[-1]), dtype=bool)
    for c in need:
        if len(c) and (int(c.min()) < 0 or int(c.max()) >= len(seen)):
            raise ValueError("a code outside its table")
        seen[c] = True
    hit = np.zeros(len(payload) + 1, dtype=bool)
    hit[np.searchsorted(starts, np.flatnonzero(seen[2:]) + 2, side="right") - 1] = True
    if cache is None:
        return starts, [_chunk(p) if h else None for p, h in zip(payload, hit.tolist())]
    out = []
    for p, h in zip(payload, hit.tolist()):
        got = cache.get(p) if h else None
        if h and got is None:
            got = cache[p] = np.array(p.split("\x00") if type(p) is str else list(p), dtype=object).reshape(-1)
        out.append(got)
    return starts, out


def columns_of(packed: Any) -> Optional[dict]:
    """A packed frame's (`pack`'s) columns as it holds them, the frame not built: name -> ("plain", its row of its
    block), ("coded", its codes into the texts' table) or ("array", its array); None where `packed` is not one."""
    if not is_packed(packed):
        return None
    _, _, _, (names, _), blocks, coded, arrays = packed
    out = {names[i]: ("plain", values[j]) for ix, values in blocks for j, i in enumerate(ix.tolist())}
    out.update((names[i], ("coded", c)) for i, c in coded)
    out.update((names[i], ("array", a)) for i, a in arrays)
    return out


def frame_from(packed: Any, payload: list) -> Any:
    """`unpack` with the frame's own table (a frame packed alone: `rankcache`'s entries)."""
    return unpack(packed, table(payload))


__all__ = ["Texts", "chunks_and_codes", "chunks_by", "frame", "texts", "pack", "unpack", "pieces", "from_pieces", "stack", "table", "table_of", "chunks", "columns_of",
           "frame_from", "is_packed", "layout", "empty", "FramePickler", "dumps"]
