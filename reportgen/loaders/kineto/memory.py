"""The allocator's memory curve and peaks from `[memory]` events, with the capacity from `deviceProperties`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import numpy as np
import pandas as pd

from reportgen.loaders.memory import _downsample
from reportgen.model import Memory
from reportgen.loaders.kineto.header import MIB

if TYPE_CHECKING:
    from reportgen.loaders.kineto.scan import _Acc


def _memory(acc: _Acc, head: dict, rel: str) -> Optional[Memory]:
    """The allocator's curve and peaks, bytes -> MB of 2^20 bytes (the report's memory unit)."""
    if not acc.mem:
        return None
    # the accelerator's allocator when there is one (Device Type 1 = CUDA, others = other accelerators), else the CPU's
    gpu = [k for k in acc.mem if k[0] not in (0, -1)]
    key = max(gpu or list(acc.mem), key=lambda k: len(acc.mem[k][0]))
    ts, alloc, res = (np.frombuffer(a, dtype="float64") for a in acc.mem[key])
    order = np.argsort(ts, kind="stable")
    ts, alloc, res = ts[order], alloc[order], res[order]
    where = "CPU" if key[0] == 0 else f"device {key[1]}"
    out = Memory(source=rel, curve_x="ms since the first sample", sources=[rel])
    has_res = bool(np.nanmax(res) > 0) if len(res) and not np.isnan(res).all() else False
    out.allocated_peak_mb = float(np.nanmax(alloc)) / MIB
    out.peak_mb = float(np.nanmax(res)) / MIB if has_res else out.allocated_peak_mb
    curve = pd.DataFrame({"x": (ts - ts[0]) / 1e3, "used_mb": (res if has_res else alloc) / MIB,
                          "allocated_mb": alloc / MIB})
    out.curve = _downsample(curve, "used_mb")  # at most MAX_CURVE_POINTS, index reset
    props = head.get("deviceProperties") or []
    if key[0] not in (0, -1) and isinstance(props, list):
        for p in props:
            if isinstance(p, dict) and p.get("id") == key[1] and isinstance(p.get("totalGlobalMem"), (int, float)):
                out.capacity_mb = float(p["totalGlobalMem"]) / MIB
                out.capacity_source = f"deviceProperties totalGlobalMem of {p.get('name', 'the GPU')}"
    out.capacity_source = out.capacity_source or f"({where} allocator; the trace records no capacity)"
    return out
