"""The gzipped trace copies kept between builds (issue 33, the rebuild): a report copies up to 16-32 ranks' traces
into the site (`export_trace`), each read, converted and gzipped (`TRACE_GZIP`: level 9, 6 for a
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
import gzip
import hashlib
import os
import zlib
from pathlib import Path
from typing import Optional

from reportgen import rankcache
from reportgen.loaders import timeline
from reportgen.loaders.files import data_bytes
from reportgen.site.render import reuse
from reportgen.site.render.csv_store import GzipLevels

# The copied traces (32 at most): level 9 is 6.1 % of a torch_npu trace_view.json against 7.4 % at level 3
# (270 -> 221 KB a 3.6 MB trace: 1.5 MB less) for ~55 ms more CPU a trace (~1.7 s over the page writers).
# A large trace (a GPU rank's Kineto trace: 20-500 MB of text) at level 6: 0.20 s against 0.76 s at level 9 for a
# 26.7 MB trace (1.69 against 1.51 MB); its size before it is read decides (`files.data_bytes`: a gzip's by its trailer).
TRACE_GZIP = GzipLevels(small=9, large=6, large_bytes=8 * 1024 * 1024)


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


def export_trace(run_root: Path, ex, tmp: Path) -> None:
    """Copy (or convert) a rank's trace into the site. The source path came from discovery, inside the run; the
    open is held to the run folder (`root=`: a symbolic link out of it is refused, an empty trace written).
    A `.gz` destination (`urls.trace_copy`: every copy) is written gzipped, mtime 0: the same bytes on every build,
    kept in the build's cache folder (`Kept`): a rebuild writes them again without reading the trace."""
    src = Path(os.path.abspath(run_root / ex.source))
    if not src.is_relative_to(os.path.abspath(run_root)):
        return  # never read outside the run folder ("..")
    target = tmp / ex.dest
    target.parent.mkdir(parents=True, exist_ok=True)
    # mtime 0: the same bytes on every build
    if ex.dest.endswith(".gz"):
        level = TRACE_GZIP.level(data_bytes([src]))
        kept = Kept(run_root, src, ex, level)  # (the source's state before it is read)
        data = kept.get()
        if data is not None:
            reuse.put(target, ex.dest, data)
            return
        with open(target, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw,
                                                     compresslevel=level, mtime=0) as gz:
            timeline.export_trace(src, gz, ex.convert, root=run_root)  # (UTF-8 bytes written as orjson gives them)
        kept.put(target)
    else:
        with open(target, "wb") as f:
            timeline.export_trace(src, f, ex.convert, root=run_root)
