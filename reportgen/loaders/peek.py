"""Tiny metadata reads used by discovery (rank ids). Failures return None; the loaders report them."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path
from typing import Iterator, Optional

import ijson


def _int(v) -> Optional[int]:
    try:
        return int(str(v).strip())
    except (TypeError, ValueError):
        return None


def profiler_info_rank(path: Path) -> Optional[int]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return _int(data.get("rank_id")) if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


def msprof_rank(device_dir: Path) -> Optional[int]:
    """Rank of an msprof device folder from `info.json.N` (`rank_id`), if written."""
    for p in sorted(device_dir.glob("info.json.*")):
        try:
            with open(p, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError):
            continue
        rid = _int(data.get("rank_id")) if isinstance(data, dict) else None
        if rid is not None and rid >= 0:
            return rid
    return None


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


def kineto_header(path: Path) -> dict:
    """Read `distributedInfo.rank` and `host_name` from a Kineto trace without reading its events."""
    out: dict = {}
    try:
        with open_maybe_gzip(path) as f:
            for prefix, event, value in ijson.parse(f):
                if prefix == "distributedInfo.rank" and event == "number":
                    out["rank"] = int(value)
                elif prefix == "distributedInfo.world_size" and event == "number":
                    out["world_size"] = int(value)
                elif prefix == "host_name" and event == "string":
                    out["host"] = value
                elif prefix == "traceEvents" and event == "start_array":
                    break
    except Exception:  # noqa: BLE001 - a broken trace is reported by the loader
        pass
    return out


def cluster_step_trace_ranks(path: Path) -> list[int]:
    ranks: set[int] = set()
    try:
        with open(path, newline="", encoding="utf-8-sig", errors="replace") as f:
            for row in csv.DictReader(f):
                if (row.get("Type") or "").strip() == "rank":
                    r = _int(row.get("Index"))
                    if r is not None:
                        ranks.add(r)
    except (OSError, csv.Error):
        pass
    return sorted(ranks)
