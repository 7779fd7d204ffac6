"""Streaming Chrome / Kineto traces (`trace_events`): a JSON list or `{"traceEvents": [...]}`, gzip allowed,
nesting bounded before the parser sees it, events with unusable `ts` / `dur` left out and counted, huge fields
named; and the one entry for a trace that broke off (`trace_cut`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Iterator, Optional

import ijson

from reportgen.dataquality import dq
from reportgen.jsonguard import DepthGuard
from reportgen.loaders.files import open_binary
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.screen import MAX_FIELD_CHARS
from reportgen.numbers import MAX_ABS_NUMBER, MAX_INT


TRACE_ERRORS = (ijson.JSONError, ValueError, OSError, EOFError)  # what `trace_events` raises on a broken trace


def trace_cut(log: IssueLog, path: Path, err: BaseException, used: str) -> None:
    """The one report of a trace that broke off while it was streamed (`except TRACE_ERRORS as err`): the loader
    keeps what it read (loaders never raise) and `used` says what that part gives."""
    log.add(path, dq("trace.cut-short", err=type(err).__name__, err2=str(err)[:120], used=used), "error")


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
    odd: list = []  # entries of the event list that are not an object (null, a string): [count, first]
    try:
        yield from _trace_events(path, dropped, huge, log.root if log is not None else None, odd)
    finally:
        if log is not None and odd:
            log.add(path, dq("trace.events-not-object", odd=odd[0], odd2=odd[1]), "warning", "schema drift")
        if log is not None and dropped:
            log.add(path, dq("trace.trace-event-non-finite", dropped=dropped[0], dropped2=dropped[1]))
        if log is not None and huge:
            log.add(path, dq("trace.string-longer-than-characters", max_field_chars=format(MAX_FIELD_CHARS, ","),
                             huge=huge[1]), "warning", "schema drift")


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
        try:
            lim_f, lim_i = MAX_ABS_NUMBER, MAX_INT
            for e in ijson.items(f, prefix, use_float=True):
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
        except (RecursionError, MemoryError) as e:
            raise ValueError(f"trace nested too deeply or too large to stream ({type(e).__name__})") from None


