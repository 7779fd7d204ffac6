"""A batch of a trace's events read a column at a time (`Events`: what `traces.trace_batches` yields), and the
columns' numbers (`floats`, `num`: text and numbers read as the loaders read a ts or a dur)."""

from __future__ import annotations

import math
from itertools import compress, repeat
from operator import eq
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from reportgen.loaders.trace_typed import FIELDS, is_plain
from reportgen.numbers import MAX_ABS_NUMBER, to_float


class Events:
    """A batch of a trace's events (the objects `trace_events` yields, in order) and their fields as columns, each read
    once (`col`) by whoever needs it first: the door, then the loader. A column holds `event.get(key)` of each event."""

    __slots__ = ("events", "_cols", "whole", "typed", "plain")

    def __init__(self, events: list, cols: Optional[dict] = None, whole: bool = False, typed: bool = False) -> None:
        self.events = events
        self._cols = cols or {}
        self.whole = whole  # every event of the trace (no batch before or after it)
        self.typed = typed  # the events are `trace_typed.TraceEvent`s (else dicts)
        # ... `trace_typed.PlainEvent`s: every phase and name text, every pid and tid a whole number 0 .. 2^63 - 1
        self.plain = typed and is_plain(events)

    def __len__(self) -> int:
        return len(self.events)

    def col(self, key: str) -> list:
        return self._memo(key, lambda: self._read(self.events, key))

    def _read(self, ev: list, key: str) -> list:  # (typed: the schema is closed, no event had a key outside it)
        if not self.typed:
            return list(map(dict.get, ev, repeat(key)))
        read = _TYPED_READERS.get(key)
        return read(ev) if read is not None else [None] * len(ev)

    def _memo(self, key, make):  # (a column or what is derived from columns, made once)
        return self._cols[key] if key in self._cols else self._cols.setdefault(key, make())

    def where(self, ph: str) -> list:
        """The positions of the events whose phase is `ph` ("M": a few metadata events), in order."""
        return self._memo((1, ph), lambda: _positions(self.col("ph"), ph))

    def phase(self, ph: str) -> list:
        """True for each event whose phase is `ph` ("X", "M"), False for the others."""
        return self._memo((None, ph), lambda: list(map(eq, self.col("ph"), repeat(ph))))

    def xcol(self, key: str) -> list:
        """`col(key)` of the complete ("X") events, in order, read once (from them alone while `col(key)` is unread)."""
        return self._memo((2, key), lambda: list(compress(self.col(key), self.phase("X"))) if key in self._cols else
                          self._read(self._memo((2, None), lambda: list(compress(self.events, self.phase("X")))), key))

    def xtypes(self, key: str) -> set:
        """The types of `xcol(key)`'s values (read once)."""
        return self._memo((3, key), lambda: set(map(type, self.xcol(key))))

    def xfloats(self, key: str) -> np.ndarray:
        """`floats` of `xcol(key)` (read once: the door's duplicate test and the loader's times)."""
        return self._memo((4, key), lambda: floats(self.xcol(key), self.xtypes(key)))


# a field of every typed event, by a list comprehension per field (its attribute read specialised by the interpreter
# to the struct's slot: ~2x `map(attrgetter(key), events)`, ~0.15 ms a column of 12,000 events)
_TYPED_READERS = {
    "ph": lambda ev: [e.ph for e in ev], "name": lambda ev: [e.name for e in ev],
    "pid": lambda ev: [e.pid for e in ev], "tid": lambda ev: [e.tid for e in ev],
    "ts": lambda ev: [e.ts for e in ev], "dur": lambda ev: [e.dur for e in ev],
    "cat": lambda ev: [e.cat for e in ev], "id": lambda ev: [e.id for e in ev],
    "bp": lambda ev: [e.bp for e in ev], "s": lambda ev: [e.s for e in ev],
    "args": lambda ev: [e.args for e in ev]}
assert set(_TYPED_READERS) == FIELDS  # (every field of the closed schema: a new one needs its reader here)


def _positions(col: list, v) -> list:
    """The positions of `v` in `col` (list.index: a C-speed scan to each, no column of truth values made)."""
    out, i = [], -1
    try:
        while True:
            i = col.index(v, i + 1)
            out.append(i)
    except ValueError:
        return out


def floats(vals: list, types: Optional[set] = None) -> np.ndarray:
    """`num` of every value, as an array: text through Arrow's parser when it reads every string (fast_float,
    correctly rounded: the value float() gives; what it refuses -- whitespace, "1_000", "+.5e", other digits --
    is read one by one), numbers as they are; then NaN outside +-MAX_ABS_NUMBER. `types`: the values' types when
    known (`Events.xtypes`)."""
    if not vals:
        return np.empty(0)
    if types is None:
        types = set(map(type, vals))
    a = None
    if types == {str}:
        try:
            a = pc.cast(pa.array(vals, pa.string()), pa.float64()).to_numpy(zero_copy_only=False)
        except Exception:  # noqa: BLE001 -- text Arrow does not read (ArrowInvalid; a lone surrogate: an encode error)
            a = None
    elif types <= {float, type(None)}:
        a = np.array(vals, dtype=float)  # (None: NaN, as to_float reads it)
    if a is None:
        return np.array(list(map(num, vals)), dtype=float)
    bad = ~(np.abs(a) <= MAX_ABS_NUMBER)
    if bad.any():
        a = a.copy()  # (Arrow's array is read-only)
        a[bad] = np.nan
    return a


def num(v) -> float:
    """`numbers.to_float`, its usual cases first (text and floats: millions of events a trace); the same values."""
    if type(v) is str or type(v) is float:
        try:
            f = float(v)
        except ValueError:
            return to_float(v)
        return f if -MAX_ABS_NUMBER <= f <= MAX_ABS_NUMBER else math.nan  # (NaN and infinities too)
    return to_float(v)
