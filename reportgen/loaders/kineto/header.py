"""The trace's header: the top-level keys Kineto writes before `traceEvents` (distributedInfo,
deviceProperties, host_name) and the device's model and memory from `deviceProperties`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Optional

from reportgen.loaders.files import open_binary as open_maybe_gzip


HEADER_BYTES = 1 << 20
MIB = float(2 ** 20)  # the report's MB (memory) are 2^20 bytes; Kineto writes bytes


def read_header(path: Path) -> dict:
    """The top-level keys Kineto writes before `traceEvents` (distributedInfo, deviceProperties, host_name)."""
    try:
        with open_maybe_gzip(path) as f:
            head = f.read(HEADER_BYTES).decode("utf-8", errors="replace")
    except (OSError, EOFError):
        return {}
    cut = head.find('"traceEvents"')
    text = head if cut < 0 else head[:cut]
    out: dict = {}
    dec = json.JSONDecoder()
    for key in ("distributedInfo", "deviceProperties", "host_name", "schemaVersion", "baseTimeNanoseconds"):
        m = re.search(r'"%s"\s*:\s*' % key, text)
        if not m:
            continue
        try:
            out[key], _ = dec.raw_decode(text, m.end())
        except ValueError:
            pass
    return out


def device_properties(head: dict, device) -> tuple[Optional[str], Optional[float]]:
    """(model name, memory in MB = 2^20 bytes) of the trace's device from `deviceProperties` (the entry whose id is
    the device the kernels ran on, else the first)."""
    props = [p for p in head.get("deviceProperties") or [] if isinstance(p, dict)] \
        if isinstance(head.get("deviceProperties"), list) else []
    if not props:
        return None, None
    p = next((p for p in props if p.get("id") == device), props[0])
    name = p.get("name")
    mem = p.get("totalGlobalMem")
    return (str(name).strip()[:120] if isinstance(name, str) and name.strip() else None,
            float(mem) / MIB if isinstance(mem, (int, float)) and mem > 0 else None)


def header_gaps(head: dict) -> list[str]:
    """The header's fields Kineto writes that this trace's header lacks (absent or null), as `where.key` names: a
    `distributedInfo` without `rank` / `world_size`, a process group of its `pg_config` without `pg_name` (the group
    is then left out), a `deviceProperties` entry without `name` / `totalGlobalMem`. A header without
    `distributedInfo` or `deviceProperties` (a single-process or CPU run, the 2021 schema's) lacks nothing."""
    out = []
    dist = head.get("distributedInfo")
    if isinstance(dist, dict) and dist:
        out += [f"distributedInfo.{k}" for k in ("rank", "world_size") if dist.get(k) is None]
        pgs = dist.get("pg_config")
        if isinstance(pgs, list) and any(isinstance(pg, dict) and pg.get("pg_name") is None for pg in pgs):
            out.append("distributedInfo.pg_config[].pg_name")
    props = head.get("deviceProperties")
    if isinstance(props, list):
        for k in ("name", "totalGlobalMem"):
            if any(isinstance(pr, dict) and pr and pr.get(k) is None for pr in props):
                out.append(f"deviceProperties[].{k}")
    return out
