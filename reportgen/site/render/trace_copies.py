"""The gzipped trace copies kept between builds (issue 33, the rebuild): a report copies up to 16-32 ranks' traces
into the site (`builder._export_trace`), each read, converted and gzipped (`builder.TRACE_GZIP`: level 9, 6 for a
large trace; ~0.1-0.15 s of CPU for a 3.6 MB trace_view.json). The copy depends only on the trace file and on how
it is written, so a rebuild (another `--lang`, other thresholds) takes the bytes the last build wrote instead of
reading the trace again.

A copy is one rank cache entry (`rankcache.write_entry` / `read_entry`: atomic, CRC-checked, owner-checked) in the
build's cache folder, one per destination (a rank's copy replaces its old entry), keyed by msreport's code
(`rankcache.environment_key`), zlib's version, the gzip level, the conversion, the run folder, the source's path,
the path it resolves to (a link retargeted is another source) and its size, modification time and type as they
were BEFORE it was read (a trace rewritten while it is copied is copied again next time). No cache folder: no
entry, the trace copied as always. A damaged entry is a miss."""

from __future__ import annotations

import contextlib
import hashlib
import os
import zlib
from pathlib import Path
from typing import Optional

from reportgen import rankcache


def _run_tag(run_root: Path) -> str:
    return hashlib.sha256(os.path.abspath(run_root).encode()).hexdigest()[:8]


def entry_name(run_root: Path, dest: str) -> str:
    """The cache entry of the copy written at `dest` from the run at `run_root` (one per destination: a rank's
    copy replaces its old one; the runs of a folder of several runs share the cache folder)."""
    return f"trace-{_run_tag(run_root)}-{hashlib.sha256(dest.encode()).hexdigest()[:16]}.pkl"


def prune(run_root: Path, dests: list[str]) -> None:
    """Remove the kept copies of the run at `run_root` this build does not make (the ranks the findings name
    change): the folder keeps one build's copies of each run."""
    folder = rankcache.active()
    if folder is None:
        return
    keep = {entry_name(run_root, d) for d in dests}
    try:
        stale = [p for p in folder.glob(f"trace-{_run_tag(run_root)}-*.pkl") if p.name not in keep]
    except OSError:
        return
    for p in stale:
        with contextlib.suppress(OSError):
            p.unlink()


class Kept:
    """The kept copy of one trace export (`ex`: `TraceExport`) from `src` (inside `run_root`)."""

    def __init__(self, run_root: Path, src: Path, ex, level: int) -> None:
        folder = rankcache.active()
        self.path: Optional[Path] = None
        if folder is None:
            return
        self.stat = rankcache._stat_key(src)  # (path, None) when it cannot be stat-ed
        self.key = ("trace copy", rankcache.environment_key(), zlib.ZLIB_RUNTIME_VERSION, level, bool(ex.convert),
                    os.path.abspath(run_root), os.path.realpath(run_root), str(src), os.path.realpath(src),
                    self.stat, ex.dest)
        self.path = folder / entry_name(run_root, ex.dest)

    def get(self) -> Optional[bytes]:
        """The bytes the last build wrote for this copy (None: not kept, or kept for another key)."""
        if self.path is None:
            return None
        got = rankcache.read_entry(self.path, self.key)
        return got if isinstance(got, bytes) else None

    def put(self, written: Path) -> None:
        """Keep the copy just written at `written` (a source that could not be read stat-ed is not kept)."""
        if self.path is None or self.stat[1] is None:
            return
        try:
            data = written.read_bytes()
        except OSError:
            return
        rankcache.write_entry(self.path, self.key, data)
