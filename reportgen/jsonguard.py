"""Bounds for streamed JSON (Chrome / Kineto traces): a file object wrapper that refuses absurd nesting.

ijson's parsers build the path ("prefix") of every event; a file that nests 200,000 arrays makes every prefix as
long as the nesting, so one 64 KB buffer costs gigabytes and minutes. Profiler traces nest fewer than 10 levels. The
wrapper hands the parser small chunks and keeps a running count of opened minus closed brackets (at C speed, by
`bytes.count`); past `MAX_STREAM_DEPTH` it raises `JsonTooDeep` (a ValueError, which the readers already treat as a
broken file). Brackets inside strings are counted too: they are balanced in real names, and the bound is far above
any real depth, so a drift never reaches it.
"""

from __future__ import annotations

import re
from typing import BinaryIO

MAX_STREAM_DEPTH = 2_000
CHUNK = 64 * 1024  # the largest piece handed to the parser (checked whole before the parser sees it)


class JsonTooDeep(ValueError):
    pass


_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_STRING_REST = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*"', re.S)  # the end of a string begun in an earlier chunk
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_NOT_MARKS = bytes(b for b in range(256) if b not in b'"[]{}')


class DepthGuard:
    """Wraps a binary file for ijson: `read(n)` returns at most CHUNK bytes and checks the running depth
    (brackets inside strings do not count; a string may span chunks)."""

    def __init__(self, raw: BinaryIO, limit: int = MAX_STREAM_DEPTH) -> None:
        self.raw = raw
        self.limit = limit
        self.depth = 0
        self.in_string = False

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(CHUNK if n is None or n < 0 or n > CHUNK else n)
        while data.endswith(b"\\"):  # never split an escape from what it escapes
            more = self.raw.read(1)
            if not more:
                break
            data += more
        if data:
            self._count(data)
        return data

    def _count(self, data: bytes) -> None:
        if b"\\" not in data:  # no escapes: every quote opens or closes a string (C-speed split, ~8x the regex)
            parts = data.translate(None, _NOT_MARKS).split(b'"')
            outside = b"".join(parts[1 if self.in_string else 0::2])
            if len(parts) % 2 == 0:  # an odd number of quotes: the chunk ends on the other side
                self.in_string = not self.in_string
            self._add(outside)
            return
        view = data
        if self.in_string:
            m = _STRING_REST.match(view)
            if m is None:
                return  # the whole chunk is inside one string
            view = view[m.end():]
            self.in_string = False
        outside = _STRING.sub(b"", view)
        q = outside.find(b'"')
        if q >= 0:  # a string that goes on in the next chunk
            outside, self.in_string = outside[:q], True
        self._add(outside)

    def _add(self, outside: bytes) -> None:
        """The running depth over `outside` (the chunk's bytes outside strings, quotes already gone)."""
        brackets = outside.translate(None, _NOT_BRACKETS)
        opened = brackets.count(b"[") + brackets.count(b"{")
        if self.depth + opened > self.limit:  # the running depth over this chunk (vectorised)
            import numpy as np

            a = np.frombuffer(brackets, dtype=np.uint8)
            if self.depth + int(np.cumsum(np.where((a == 0x5B) | (a == 0x7B), 1, -1)).max()) > self.limit:
                raise JsonTooDeep(f"JSON nested more than {self.limit} levels deep")
        self.depth += 2 * opened - len(brackets)

    def seek(self, pos: int, whence: int = 0) -> int:
        self.depth, self.in_string = 0, False
        return self.raw.seek(pos, whence)

    def close(self) -> None:
        self.raw.close()

    def __enter__(self) -> "DepthGuard":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
