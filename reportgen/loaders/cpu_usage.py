"""Host CPU utilisation: `minddata_cpu_utilization_{r}.json` (values in %, one per sample).

`device_info` is the machine (user/sys/io/idle), `process_info` the training process, `op_info` each dataset
operator (op_id -1 is dropped, as MindInsight does). Arrays of different lengths are padded with NaN.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from reportgen.loaders.common import IssueLog, read_json, to_float
from reportgen.model import CpuUsage

MACHINE_KEYS = {"user_utilization": "user", "sys_utilization": "sys", "io_utilization": "io",
                "idle_utilization": "idle"}


def _series(values) -> np.ndarray:
    return np.array([to_float(v) for v in values], dtype="float64") if isinstance(values, list) else np.array([])


def _frame(block, keys: dict[str, str]) -> pd.DataFrame:
    cols = {name: _series((block or {}).get(k)) for k, name in keys.items()}
    n = max((len(v) for v in cols.values()), default=0)
    data = {"sample": np.arange(n)}
    for name, v in cols.items():
        data[name] = np.concatenate([v, np.full(n - len(v), math.nan)])
    return pd.DataFrame(data)


def load_cpu_usage(path: Path, log: IssueLog, op_types: Optional[dict[int, tuple[str, float]]] = None
                   ) -> Optional[CpuUsage]:
    data = read_json(path, log)
    if not isinstance(data, dict):
        if data is not None:
            log.add(path, "expected a JSON object; CPU utilisation not read")
        return None
    machine = _frame(data.get("device_info"), MACHINE_KEYS)
    process = _frame(data.get("process_info"), {"user_utilization": "user", "sys_utilization": "sys"})
    ops = []
    for o in data.get("op_info") or []:
        if not isinstance(o, dict) or o.get("op_id") in (-1, None):
            continue
        m = o.get("metrics") or {}
        user, sys_ = _series(m.get("user_utilization")), _series(m.get("sys_utilization"))
        oid = int(o["op_id"])
        op_type, workers = (op_types or {}).get(oid, ("", math.nan))
        ops.append({"op_id": oid, "op_type": op_type, "num_workers": workers,
                    "user": float(np.nanmean(user)) if len(user) and not np.isnan(user).all() else math.nan,
                    "sys": float(np.nanmean(sys_)) if len(sys_) and not np.isnan(sys_).all() else math.nan})
    if not len(machine) and not len(process) and not ops:
        log.add(path, "no utilisation samples")
        return None
    cpus = to_float(data.get("cpu_processor_num"))
    interval = to_float(data.get("sampling_interval"))
    return CpuUsage(source=log.rel(path), machine=machine, process=process,
                    ops=pd.DataFrame(ops, columns=["op_id", "op_type", "num_workers", "user", "sys"]),
                    cpu_count=None if math.isnan(cpus) else int(cpus),
                    interval_ms=None if math.isnan(interval) else interval)
