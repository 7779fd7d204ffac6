"""Streaming Chrome-trace readers shared by the loaders (timeline, host steps, overlap, step operators).

The discovery peeks (rank ids, world size) live in `reportgen.discover.peek`: discovery imports nothing from the
loaders.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Iterator

import ijson


def open_maybe_gzip(path: Path):
    if path.name.endswith(".gz"):
        return gzip.open(path, "rb")
    return open(path, "rb")


def trace_events(path: Path) -> Iterator[dict]:
    """Stream the events of a Chrome trace: a JSON list, or an object with `traceEvents` (gzip allowed).

    Raises ijson.JSONError / ValueError / OSError / EOFError on a broken file, after yielding what was read.
    """
    with open_maybe_gzip(path) as f:
        first = f.read(1)
        while first and first in b" \t\r\n":
            first = f.read(1)
        f.seek(0)
        prefix = "item" if first == b"[" else "traceEvents.item"
        for e in ijson.items(f, prefix, use_float=True):
            if isinstance(e, dict):
                yield e
