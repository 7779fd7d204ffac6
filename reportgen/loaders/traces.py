"""Streaming Chrome / Kineto traces (`trace_events`): a JSON list or `{"traceEvents": [...]}`, gzip allowed,
nesting bounded before the parser sees it, events with unusable `ts` / `dur` left out and counted, huge fields
named; and the one entry for a trace that broke off (`trace_cut`).

Two readers give the same events and the same data-quality entries: a trace up to FAST_MAX_BYTES is parsed whole
by orjson (the reading then costs the parse and a type test an event: the chunk guards and the generator chain of
the stream are gone: 15-35 % of a torch_npu trace_view.json's read; building the events is the rest), a larger one
-- or one orjson refuses or reads otherwise than yajl: NaN, an integer beyond int64, a cut-off file, bytes that are
not UTF-8, nesting past orjson's 1,024 levels -- is streamed by ijson as before.

A reader that takes an event's fields by `get(key)` or a batch's columns only asks for `typed` events: a trace read
whole that msgspec decodes into the closed schema of `trace_typed.TraceEvent` (gc-free structs; ts / dur bounded as
the screening keeps them) comes as one typed batch -- ~3x faster than orjson's dicts, no screening pass, the same
values (`trace_typed` lists the differences checked) -- and any other the way above.

Loaders that read millions of events take them a batch at a time (`trace_batches`: the whole list of a trace read
whole, BATCH events of a streamed one), each batch's fields as columns (`Events.col`), so the per-event work is a
few C-level passes over lists (`TraceDoor.events`, `timeline.summarize_trace`, `step_ops.read_step_ops`); and
with the cyclic collector paused (`gc_paused`), whose passes over the new objects cost ~1/4 of a parse."""

from __future__ import annotations

import gzip
import math
import os
import re
from contextlib import contextmanager
from itertools import repeat
from pathlib import Path
from typing import Iterator, Optional

import ijson
import numpy as np
import orjson

from reportgen.dataquality import dq
from reportgen.pools import gc_paused
from reportgen.jsonguard import CHUNK, DepthGuard
from reportgen.loaders.files import open_binary
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.screen import MAX_FIELD_CHARS
from reportgen.loaders.trace_batch import Events
from reportgen.loaders.trace_typed import TYPED_MAX_BYTES, typed_events
from reportgen.numbers import MAX_ABS_NUMBER, MAX_INT


TRACE_ERRORS = (ijson.JSONError, ValueError, OSError, EOFError)  # what `trace_events` raises on a broken trace


def trace_cut(log: IssueLog, path: Path, err: BaseException, used: str) -> None:
    """The one report of a trace that broke off while it was streamed (`except TRACE_ERRORS as err`): the loader
    keeps what it read (loaders never raise) and `used` says what that part gives."""
    log.add(path, dq("trace.cut-short", err=type(err).__name__, err2=str(err)[:120], used=used), "error")


FAST_MAX_BYTES = 16 * 1024 * 1024
# A trace up to this many bytes (gunzipped) is parsed whole (`_whole`). Its events take ~4.3x the file in memory in a
# real trace (15.7 MB for torch_npu's 3.6 MB trace_view.json), ~32x at worst (`[[],[],...]`: a 64-byte list for 2
# bytes): a pathological file costs a worker ~0.5 GB at most (goal: < 1 GB a process); a larger one is streamed.
BOM = b"\xef\xbb\xbf"


def trace_events(path: Path, log: Optional[IssueLog] = None, typed: bool = False) -> Iterator[dict]:
    """The events of a Chrome trace: a JSON list, or an object with `traceEvents` (gzip allowed).

    Only regular files are opened; a trace nested absurdly deep is refused before the parser sees the chunk
    (`jsonguard.DepthGuard`); events whose `ts` or `dur` is non-finite or out of range are left out -- counted in
    one data-quality entry on `log` when given (the loader that summarises the file passes it), as is a huge field
    (a string longer than MAX_FIELD_CHARS: `_QuoteWatch`). Raises ijson.JSONError / ValueError /
    OSError / EOFError on a broken file (after yielding what was read), so the loaders' handlers name the file.
    A trace up to FAST_MAX_BYTES that orjson parses is read whole (`_whole`), with the same events and entries.
    `typed`: the events may be `trace_typed.TraceEvent`s (read with `get(key)` only), as `trace_batches`.
    """
    for batch in trace_batches(path, log, typed):
        yield from batch.events


BATCH = 8192  # events a batch on the streamed path (a few MB of objects)


_SHARED: Optional[dict] = None  # path -> its whole-read batch, inside `shared_reads`


@contextmanager
def shared_reads() -> Iterator[None]:
    """Inside this block a trace read whole without a log (`trace_batches(path)`: no data-quality entry depends on
    the reading) is parsed once: the next reading of the same path gets the same batch (`Events`: its events and
    the columns read so far; readers only read them). For one rank's passes that read its trace one after the
    other (the execution view's `step_ops.trace_layout` then `read_step_ops`); the batches are dropped at the
    block's end."""
    global _SHARED
    outer, _SHARED = _SHARED, {}
    try:
        yield
    finally:
        _SHARED = outer


def trace_batches(path: Path, log: Optional[IssueLog] = None, typed: bool = False,
                  plain: bool = False) -> Iterator[Events]:
    """`trace_events`, a batch at a time (`Events`): the whole list of a trace read whole, BATCH events at a time
    from the stream. The same events, exception and data-quality entries; on a broken stream the part read is
    yielded before the exception is raised. Inside `shared_reads`, a trace read whole without a log is read once.
    `typed` (readers that take an event's fields by `get(key)` or the batch's columns only): a trace (a JSON list,
    Kineto's object) up to `trace_typed.TYPED_MAX_BYTES` msgspec decodes whole comes as one typed batch
    (`trace_typed`); `plain` (a trace whose events are usually plain: `trace_typed.PlainEvent`): as such when each
    is (`Events.plain`)."""
    shared = _SHARED if log is None else None
    key = (os.fspath(path), typed, plain)
    if shared is not None and key in shared:
        yield shared[key]
        return
    dropped: list = []
    huge: list = []
    odd: list = []  # entries of the event list that are not an object (null, a string): [count, first]
    root = log.root if log is not None else None
    try:
        whole = _whole(path, root, typed, plain)
        if whole is None:
            yield from _batched(_trace_events(path, dropped, huge, root, odd), BATCH)
        else:
            data, start, events = whole
            whole = None
            _watch_whole(data, start, huge)
            del data  # (the events stay: the loader reads them)
            fast = events if type(events) is Events else _screen_all(events)
            if fast is not None:
                if shared is not None:
                    shared[key] = fast
                yield fast
            else:
                yield from _batched(_screen(events, dropped, odd), max(1, len(events)))
    finally:
        if log is not None and odd:
            log.add(path, dq("trace.events-not-object", odd=odd[0], odd2=odd[1]), "warning", "schema drift")
        if log is not None and dropped:
            log.add(path, dq("trace.trace-event-non-finite", dropped=dropped[0], dropped2=dropped[1]))
        if log is not None and huge:
            log.add(path, dq("trace.string-longer-than-characters", max_field_chars=format(MAX_FIELD_CHARS, ","),
                             huge=huge[1]), "warning", "schema drift")


_WS = re.compile(rb"[ \t\r\n]*")
# where an integer token may begin: digits -> "0", "[", ",", ":" and whitespace -> "d", "-" kept, the rest -> " "
_TOKENS = bytes(48 if 48 <= c <= 57 else 100 if c in b"[,: \t\r\n" else c if c == 45 else 32 for c in range(256))
_RUN19 = b"0" * 19  # 19 digits in a row, translated
_LEADING_LONG = re.compile(rb"[ \t\r\n]*-?[0-9]{19}")
_ESCAPED_ASCII = re.compile(rb"\\u00[2-7][0-9a-fA-F]")  # a printable ASCII character written as \u00XX


def _whole(path: Path, root: Optional[Path], typed: bool = False,
           plain: bool = False) -> Optional[tuple[bytes, int, list | Events]]:
    """(the file's bytes, the offset after a BOM, the entries of its event list) when the trace is small enough
    (FAST_MAX_BYTES) and orjson reads it to what the streamed reader (`_trace_events`) yields; else None (stream).
    Opening raises as the streamed reader does (not a regular file, a link out of the run folder).

    Where orjson and ijson (yajl) differ, the file is streamed: orjson refuses NaN / Infinity, bytes that are not
    UTF-8, a lone surrogate escape, a cut-off file and nesting past 1,024 levels (the stream's own bound,
    `jsonguard.MAX_STREAM_DEPTH`, is higher, so a file orjson reads is never refused by `DepthGuard`); it reads an
    integer beyond int64 (which yajl refuses: a run of 19+ digits is checked); and where the stream picks the events
    by their path ("traceEvents.item"), a second key spelt "traceEvents" (a duplicate, "traceEvents.item", an escaped
    letter) is left to it. `typed`: the events as `trace_typed.TraceEvent`s when msgspec reads the file whole into
    them (`trace_typed.typed_events`: the same values, screened; `plain`: as `PlainEvent`s when each is one): then
    one typed batch (`Events`) in place of the entries; else orjson's dicts as above."""
    data = _read_small(path, root, TYPED_MAX_BYTES if typed else FAST_MAX_BYTES)
    if data is None:
        return None
    start = 3 if data[:3] == BOM else 0
    if typed:
        events = typed_events(data, start, plain)
        if events is not None:  # (screened by the decoder: every ts and dur `_usable`)
            return data, start, Events(events, whole=True, typed=True)
        if len(data) > FAST_MAX_BYTES:  # (read for the typed path, too large for orjson's dicts: streamed)
            return None
    end = _WS.match(data, start).end()
    try:
        with gc_paused():
            doc = orjson.loads(memoryview(data)[start:] if start else data)
    except orjson.JSONDecodeError:
        return None
    if _int_beyond_int64(data, start):
        return None
    first = data[end:end + 1]
    if first == b"[":
        return data, start, doc
    if not isinstance(doc, dict):
        return data, start, []  # a number or a string: nothing under "traceEvents"
    if b"\\u00" in data and _ESCAPED_ASCII.search(data):
        return None
    n = data.count(b'"traceEvents')
    if n == 0:
        return data, start, []
    events = doc.get("traceEvents")
    if n == 1 and type(events) is list:
        return data, start, events
    return None


def _read_small(path: Path, root: Optional[Path], limit: int = FAST_MAX_BYTES) -> Optional[bytes]:
    """The bytes of the trace at `path` (gunzipped) when they are `limit` or fewer, else None (as when a gzip is
    broken: the stream names it). Opening raises as the streamed reader does."""
    f = open_binary(path, root)
    try:
        if isinstance(f, gzip.GzipFile):
            raw = f.fileobj
            size = os.fstat(raw.fileno()).st_size
            size = int.from_bytes(os.pread(raw.fileno(), 4, size - 4), "little") if size >= 4 else 0
            if size > limit:
                return None  # (gzip's trailer: the size of the last member, mod 2^32; the read below checks it)
        else:
            size = os.fstat(f.fileno()).st_size
            if size > limit:
                return None
        # what the size says and a byte, then the rest up to the bound when there is more (a gzip of several members,
        # a file that grew): what one read of limit + 1 gives, without allocating that much first (~4 ms a trace)
        data = f.read(size + 1)
        if len(data) > size:
            data += f.read(limit + 1 - len(data))
    except Exception:  # noqa: BLE001 -- a broken gzip (OSError, EOFError, zlib.error): the stream names it
        return None
    finally:
        f.close()
    return data if len(data) <= limit else None


def _int_beyond_int64(data: bytes, start: int) -> bool:
    """True when `data` may hold an integer token of 2^63 or more in magnitude (yajl refuses it, -2^63 too; orjson
    reads it): a run of 19+ digits after "[", ",", ":" or whitespace (and an optional "-") that no "." or exponent
    follows. Digits in strings ("HostToDevice40004068119343529983", ids written as text) follow a letter or a quote
    and are passed over; a string with such a run after a space counts (the file is then streamed: the same
    result, slower)."""
    t = data.translate(_TOKENS)
    n = len(t)
    if t.find(_RUN19) < 0:  # (the usual trace: no run of 19 digits at all: one scan instead of two)
        return False
    for pat in (b"d" + b"0" * 19, b"d-" + b"0" * 19):
        i = t.find(pat)
        while i >= 0:
            a = i + len(pat) - 19
            e = a + 19
            while e < n and t[e] == 48:
                e += 1
            # 20 digits or more: at least 10^19 > 2^63 (and int() of a run past 4,300 digits would raise)
            if data[e:e + 1] not in (b".", b"e", b"E") and (e - a > 19 or int(data[a:e]) >= 2 ** 63):
                return True
            i = t.find(pat, e)
    return _LEADING_LONG.match(data, start) is not None  # a long number that is the whole document: streamed


def _watch_whole(data: bytes, start: int, huge: list) -> None:
    """`_QuoteWatch` over a file read whole: the reads the streamed reader makes (through `DepthGuard`: its probe
    of the first bytes, then CHUNK-byte pieces, each lengthened byte by byte while it ends in a backslash), each
    piece of MAX_FIELD_CHARS bytes or more without a quote counted, at the offset the watch would name."""
    n, seen = len(data), 0  # seen: the bytes read through the watch (its count is not rewound by a seek)

    def read(p: int, k: int) -> int:
        nonlocal seen
        e = min(p + k, n)
        if e - p >= MAX_FIELD_CHARS and data.find(b'"', p, e) < 0:
            if huge:
                huge[0] += 1
            else:
                huge[:] = [1, f"{e - p:,} bytes without a quote at byte {seen:,}"]
        seen += e - p
        while p < e < n and data[e - 1] == 0x5C:  # one more byte while the piece ends in a backslash
            e += 1
            seen += 1
        return e

    read(0, 3)
    p = start
    while True:  # the stream's probe for the first character, byte by byte over whitespace
        q = read(p, 1)
        if q == p or data[p:q] not in b" \t\r\n":
            break
        p = q
    p = start
    while True:
        q = read(p, CHUNK)
        if q == p:
            return
        p = q


_PLAIN_TYPES = frozenset((str, type(None), float, int))


def _batched(events: Iterator[dict], size: int) -> Iterator[Events]:
    """`events` in batches of `size`; when reading them raises, the part read is yielded first."""
    batch: list = []
    try:
        for e in events:
            batch.append(e)
            if len(batch) >= size:
                yield Events(batch)
                batch = []
    except Exception:
        if batch:
            yield Events(batch)
        raise
    if batch:
        yield Events(batch)


def _screen_all(items: list) -> Optional[Events]:
    """The whole event list as one batch when `_screen` keeps every entry: every one an object whose `ts` and
    `dur` pass (the usual trace: a few type tests over the columns, which the batch keeps); else None."""
    if set(map(type, items)) <= {dict}:
        ts, dur = list(map(dict.get, items, repeat("ts"))), list(map(dict.get, items, repeat("dur")))
        if _usable(ts) and _usable(dur):
            return Events(items, {"ts": ts, "dur": dur}, whole=True)
    return None


def _usable(vals: list) -> bool:
    """True when `_screen` keeps every value: text, None, a float within MAX_ABS_NUMBER, an int within MAX_INT
    (exact types; anything else is left to `_screen`)."""
    types = set(map(type, vals))
    if not types <= _PLAIN_TYPES:
        return False
    if int in types:
        ints = vals if len(types) == 1 else [v for v in vals if type(v) is int]
        if not (-MAX_INT <= min(ints) and max(ints) <= MAX_INT):
            return False
    if float in types:
        fl = np.array(vals if len(types) == 1 else [v for v in vals if type(v) is float], dtype=float)
        if not bool((np.abs(fl) <= MAX_ABS_NUMBER).all()):  # (NaN fails)
            return False
    return True


def _screen(items, dropped: list, odd: Optional[list]) -> Iterator[dict]:
    """The entries of a trace's event list that are events: objects whose `ts` and `dur` are usable (text, None, or
    a finite number within range); the others counted in `odd` / `dropped`. An entry nested too deeply to read or
    show (RecursionError, MemoryError: from the parser, or the repr of a non-object entry) ends the list as a broken
    trace (ValueError), whichever reader gave the entries."""
    lim_f, lim_i = MAX_ABS_NUMBER, MAX_INT
    try:
        for e in items:
            if not isinstance(e, dict):
                if odd is not None:
                    odd[:] = [odd[0] + 1, odd[1]] if odd else [1, repr(e)[:40]]
                continue
            ts, dur = e.get("ts"), e.get("dur")
            t1, t2 = type(ts), type(dur)
            # the usual event: text or in-range plain numbers (exact type tests; anything else below)
            ok = ((t1 is str or ts is None or (t1 is float and -lim_f <= ts <= lim_f)
                   or (t1 is int and -lim_i <= ts <= lim_i))
                  and (t2 is str or dur is None or (t2 is float and -lim_f <= dur <= lim_f)
                       or (t2 is int and -lim_i <= dur <= lim_i)))
            if not ok:
                ok = True
                for v in (ts, dur):
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
    except (RecursionError, MemoryError) as err:
        raise ValueError(f"trace nested too deeply or too large to stream ({type(err).__name__})") from None


def note_unusable_events(log: IssueLog, path: Path, n: int) -> None:
    """One entry for the complete ("X") events a trace loader left out because `ts` / `dur` is missing, text or
    negative (non-finite ones are counted by `trace_events`)."""
    if n:
        log.add(path, dq("trace.complete-event-without-usable", n=n))


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


def _trace_events(path: Path, dropped: list, huge: Optional[list] = None, root: Optional[Path] = None,
                  odd: Optional[list] = None) -> Iterator[dict]:
    raw = _QuoteWatch(open_binary(path, root), huge)
    with DepthGuard(raw) as f:
        start = 3 if f.read(3) == b"\xef\xbb\xbf" else 0  # a BOM is skipped, not parsed
        f.seek(start)
        first = f.read(1)
        while first and first in b" \t\r\n":
            first = f.read(1)
        f.seek(start)
        prefix = "item" if first == b"[" else "traceEvents.item"
        yield from _screen(ijson.items(f, prefix, use_float=True), dropped, odd)


