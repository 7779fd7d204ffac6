"""Tiny metadata reads used by discovery (rank ids, world size, launch facts).

Failures return None (or an empty result); the loaders report broken files. Every peek opens regular files only
(a named pipe never blocks) and reads at most `MAX_PEEK_BYTES` of JSON.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import stat
from pathlib import Path
from typing import BinaryIO, Optional

import ijson
import msgspec

try:
    import orjson
except ImportError:  # pragma: no cover - a dependency; json alone reads the same values
    orjson = None

from reportgen.jsonguard import DepthGuard
from reportgen.numbers import MAX_INT, to_int as _int

_DIGITS_TO_0 = bytes(0x30 if 0x30 <= b <= 0x39 else b for b in range(256))
MAX_PEEK_BYTES = 4 * 1024 * 1024  # a metadata file larger than this is not peeked at (the loader judges it)
MAX_CSV_PEEK_ROWS = 1_000_000
KINETO_PEEK_EVENTS = 50  # events of a Kineto trace read for its time base




def read_capped(f: BinaryIO, limit: int) -> bytes:
    """At most `limit` + 1 bytes of an open regular file (more than `limit` means: too large). Sized by fstat, as
    `f.read(limit + 1)` allocates the whole limit first (a gigabyte for a 2 MB CSV: twice the time of the read);
    a file that grew since, or reports no size, is read on up to the limit."""
    size = os.fstat(f.fileno()).st_size
    data = f.read(min(size, limit) + 1)
    if size < len(data) <= limit:
        data += f.read(limit + 1 - len(data))
    return data


def open_regular(path: Path) -> io.BufferedReader:
    """Open `path` for binary reading if it is a regular file; raise OSError otherwise (never blocks on a FIFO)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _open_maybe_gzip(path: Path):
    f = open_regular(path)
    return gzip.GzipFile(fileobj=f, mode="rb") if path.name.endswith(".gz") else f


def _small_raw(path: Path) -> Optional[bytes]:
    """The bytes of a small regular file, or None (missing, not regular, larger than `MAX_PEEK_BYTES`)."""
    try:
        with open_regular(path) as f:
            raw = read_capped(f, MAX_PEEK_BYTES)
    except OSError:
        return None
    return raw if len(raw) <= MAX_PEEK_BYTES else None


def _shallow(raw: bytes) -> bool:
    """At most 500 brackets: json.loads (and orjson, limit 1,024 levels) read it without running out of depth."""
    return raw.count(b"[") + raw.count(b"{") <= 500


def _orjson_reads_it(raw: bytes) -> bool:
    """Shallow and no run of 19 digits (orjson reads an integer past 64 bits as a float): valid UTF-8, strict JSON
    then reads as json.loads reads it, 5x faster."""
    return orjson is not None and _shallow(raw) and b"0" * 19 not in raw.translate(_DIGITS_TO_0)


_NOT_JSON = object()


def _loads(raw: bytes, bad=None):
    """`raw` parsed as json.loads parses it (orjson where `_orjson_reads_it`); `bad` when it is not JSON."""
    try:
        if _orjson_reads_it(raw):
            try:
                return orjson.loads(raw)
            except orjson.JSONDecodeError:
                pass
        return json.loads(raw.decode("utf-8-sig", errors="replace"))
    except (ValueError, RecursionError):
        return bad


def read_small_json(path: Path):
    """The parsed JSON of a small regular file, or None (missing, too large, not JSON, nested too deep)."""
    raw = _small_raw(path)
    # a profiler_metadata.json a rank: 4,096 of them at 4,096 ranks; anything orjson may not read (a BOM, NaN, bad
    # bytes) is read by json
    return None if raw is None else _loads(raw)


def profiler_info_rank(path: Path) -> Optional[int]:
    data = read_small_json(path)
    return _int(data.get("rank_id")) if isinstance(data, dict) else None


def profiler_info_facts(path: Path) -> dict:
    """`rank_size` and `profiling_start_time` from a profiler_info file (MindSpore), where written."""
    data = read_small_json(path)
    out: dict = {}
    if isinstance(data, dict):
        size = _int(data.get("rank_size"))
        if size is not None and size > 0:
            out["world_size"] = size
        if isinstance(data.get("profiling_start_time"), str):
            out["start"] = data["profiling_start_time"]
    return out


class _Group(msgspec.Struct, gc=False):
    global_ranks: msgspec.Raw = msgspec.Raw(b"null")


class _Metadata(msgspec.Struct, gc=False):
    """What discovery reads of a profiler_metadata.json, each value left as its JSON text (`msgspec.Raw`)."""

    distributed_args: msgspec.Raw = msgspec.Raw(b"null")
    parallel_group_info: Optional[dict[str, _Group]] = None


_METADATA = msgspec.json.Decoder(_Metadata)


def metadata_facts(path: Path) -> dict:
    """World size and the ranks named by the parallel groups of a torch_npu / MindSpore profiler_metadata.json."""
    raw = _small_raw(path)
    if raw is None:
        return {}
    if orjson is not None and _shallow(raw):
        # every rank's file names the world group (4,096 ranks: 4,096 numbers in each of 4,096 files): the file is
        # checked and split into its values' JSON text without reading the numbers (msgspec), each value read as
        # json.loads reads it, and a group's text already read in this process is not read again. A shape `_facts`
        # would skip, or a file msgspec refuses, takes the plain path below (the same answer)
        try:
            meta = _METADATA.decode(raw)
        except (msgspec.ValidationError, msgspec.DecodeError):
            meta = None
        if meta is not None:
            dargs = _loads(bytes(meta.distributed_args), _NOT_JSON)
            sets: Optional[list] = []
            for g in (meta.parallel_group_info or {}).values():
                text = bytes(g.global_ranks)
                hit = _RAW_GROUPS.get(text)
                if hit is None:
                    got = _loads(text, _NOT_JSON)
                    if got is _NOT_JSON:
                        sets = None
                        break
                    if not isinstance(got, list):
                        continue
                    hit = _one_group(got[:100_000])
                    if len(_RAW_GROUPS) > 4096:
                        _RAW_GROUPS.clear()
                    _RAW_GROUPS[text] = hit
                sets.append(hit)
            if dargs is not _NOT_JSON and sets is not None:
                return _facts(dargs, meta.parallel_group_info is not None, _union(sets))
    data = _loads(raw)
    if not isinstance(data, dict):
        return {}
    groups = data.get("parallel_group_info")
    ranks = _group_ranks([g["global_ranks"][:100_000] for g in groups.values()
                          if isinstance(g, dict) and isinstance(g.get("global_ranks"), list)]
                         ) if isinstance(groups, dict) else frozenset()
    return _facts(data.get("distributed_args"), isinstance(groups, dict), ranks)


def _facts(dargs, has_groups: bool, ranks: frozenset) -> dict:
    out: dict = {}
    if isinstance(dargs, dict):
        ws = _int(dargs.get("world_size"))
        if ws is not None and ws > 0:
            out["world_size"] = ws
    if has_groups and ranks:
        out["group_ranks"] = ranks
    return out


_GROUP_RANKS: dict[tuple, frozenset] = {}  # a group's ranks (whole numbers only) -> the ranks read, this process
_RAW_GROUPS: dict[bytes, frozenset] = {}  # a group's `global_ranks` as JSON text -> the ranks read, this process


def _one_group(got: list) -> frozenset:
    """The ranks >= 0 one group's list names (what `_int` reads each as); a list of plain whole numbers is read
    once per process (one frozenset, shared by every file that names it)."""
    plain = set(map(type, got)) == {int}  # (True == 1: a key only for plain numbers)
    key = tuple(got) if plain else None
    hit = _GROUP_RANKS.get(key) if key is not None else None
    if hit is None:
        if got and plain and min(got) >= 0 and max(got) <= MAX_INT:
            hit = frozenset(got)  # plain whole numbers (the usual file): what `_int` keeps, at C speed
        else:
            hit = frozenset(r for r in (_int(x) for x in got) if r is not None and r >= 0)
        if key is not None:
            if len(_GROUP_RANKS) > 4096:
                _GROUP_RANKS.clear()
            _GROUP_RANKS[key] = hit
    return hit


def _group_ranks(lists: list[list]) -> frozenset:
    """The ranks >= 0 the lists name (what `_int` reads each as). Every rank's metadata names the world group, so
    each of 4,096 files listed 4,096 ranks: a group of plain whole numbers is read once per process (one frozenset),
    and when one group holds every other (the world group) that frozenset is the answer, shared by every file."""
    return _union([_one_group(got) for got in lists])


def _union(sets: list[frozenset]) -> frozenset:
    if not sets:
        return frozenset()
    big = max(sets, key=len)
    return big if all(s is big or s <= big for s in sets) else frozenset().union(*sets)


def msprof_rank(info_files: list[Path]) -> Optional[int]:
    """Rank of an msprof device folder from its `info.json.N` files (`rank_id`), if written."""
    for p in sorted(info_files):
        data = read_small_json(p)
        rid = _int(data.get("rank_id")) if isinstance(data, dict) else None
        if rid is not None and rid >= 0:
            return rid
    return None


def kineto_header(path: Path) -> dict:
    """Read `distributedInfo.rank` / `world_size`, `host_name` and the first `deviceProperties` name from a Kineto
    trace, and the earliest `ts` of its first `KINETO_PEEK_EVENTS` events (`first_ts`, µs: the trace's time base),
    without reading the rest."""
    out: dict = {}
    seen = 0
    try:
        with DepthGuard(_open_maybe_gzip(path)) as f:
            if f.read(3) != b"\xef\xbb\xbf":  # a BOM is skipped, as trace_events does (else no rank is found)
                f.seek(0)
            for prefix, event, value in ijson.parse(f):
                if prefix == "distributedInfo.rank" and event == "number":
                    out["rank"] = int(value)
                elif prefix == "distributedInfo.world_size" and event == "number":
                    out["world_size"] = int(value)
                elif prefix == "host_name" and event == "string":
                    out["host"] = value
                elif prefix == "deviceProperties.item.name" and event == "string" and "device_model" not in out:
                    out["device_model"] = value
                elif prefix == "traceEvents.item" and event == "end_map":
                    seen += 1
                    if seen >= KINETO_PEEK_EVENTS:
                        break
                elif prefix == "traceEvents.item.ts" and event == "number":
                    out["first_ts"] = min(float(value), out.get("first_ts", float("inf")))
                elif prefix == "traceEvents.item.ts" and event == "string":
                    try:
                        out["first_ts"] = min(float(value), out.get("first_ts", float("inf")))
                    except ValueError:
                        pass
    except Exception:  # noqa: BLE001 - a broken trace is reported by the loader
        pass
    return out


def cluster_step_trace_ranks(path: Path) -> list[int]:
    ranks: set[int] = set()
    try:
        with open_regular(path) as raw, io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace",
                                                          newline="") as f:
            for n, row in enumerate(csv.DictReader(f)):
                if n >= MAX_CSV_PEEK_ROWS:
                    break
                if (row.get("Type") or "").strip() == "rank":
                    r = _int(row.get("Index"))
                    if r is not None and r >= 0:
                        ranks.add(r)
    except (OSError, csv.Error, ValueError):
        pass
    return sorted(ranks)
