"""Host CPU utilisation: `minddata_cpu_utilization_{r}.json` (values in %, one per sample).

`device_info` is the machine (user/sys/io/idle), `process_info` the training process, `op_info` each dataset
operator (op_id -1 is dropped, as MindInsight does). Arrays of different lengths are padded with NaN.

Averages follow MindInsight's `MinddataCpuUtilizationAnalyser` (query without a step filter) exactly, for the
machine, the process and every dataset operator alike:

* each sample after the first is given a step from the host-queue file next to it (`device_queue_profiling_{r}.txt`,
  else `dataset_iterator_profiling_{r}.txt`; type-1 lines, step renumbered to start at 1, timestamp = 5th field):
  `time_stamp[1:]` is walked against the queue's sampling times (`_get_minddata_cpu_utilization_steps_info`),
  samples before the first queue record belong to step 0;
* the default filter (steps 1..number of queue records) keeps the array positions from the first sample of a step
  >= 1 to the last of a step <= the total (`_filter`); since there is one step per timestamp but the first,
  the position of the last sample always falls outside: the first samples are kept, the last is dropped.
  Without a queue file nothing is dropped;
* `avg_value = round(sum(arr) / len(arr))` (Python's round: halves to even), 0 for an empty array - we return
  None there instead of a fake 0.

`machine` and `process` carry a boolean `selected` column (the positions MindInsight averages); `ops` holds the
operators' MindInsight averages.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from reportgen.dataquality import dq
from reportgen.loaders.files import open_file, regular_file
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.jsonfile import read_json
from reportgen.numbers import to_float
from reportgen.loaders.schema import Door
from reportgen.model import CpuUsage

MACHINE_KEYS = {"user_utilization": "user", "sys_utilization": "sys", "io_utilization": "io",
                "idle_utilization": "idle"}
REQUIRED_KEYS = ("device_info", "process_info", "op_info", "time_stamp", "cpu_processor_num", "sampling_interval")
QUEUE_FILES = ("device_queue_profiling_{}.txt", "dataset_iterator_profiling_{}.txt")  # MindInsight's preference


def _series(values) -> np.ndarray:
    return np.array([to_float(v) for v in values], dtype="float64") if isinstance(values, list) else np.array([])


def _check_series(door: Door, data: dict, n: int) -> None:
    """The utilisation series: lists of percentages (0-100). (Their lengths differ in real files: MindSpore 2.x
    writes idle / io twice as often as user / sys, and process_info one sample short or empty, so length is not
    judged; `n` is time_stamp's length, kept for the caller's reading.)"""
    blocks = [("device_info", data.get("device_info"), MACHINE_KEYS), ("process_info", data.get("process_info"),
              {"user_utilization": "", "sys_utilization": ""})]
    for o in data.get("op_info") or []:
        if isinstance(o, dict):
            blocks.append((f"op_info {str(o.get('op_id'))[:10]}", o.get("metrics"),
                           {"user_utilization": "", "sys_utilization": ""}))
    for where, block, keys in blocks:
        if block is None:
            continue
        if not isinstance(block, dict):
            door.note(dq("cpu-usage.block-not-object"), where, "warning", "schema drift")
            continue
        us, sy = block.get("user_utilization"), block.get("sys_utilization")
        if isinstance(us, list) and isinstance(sy, list) and len(us) != len(sy):  # written in pairs
            door.note(dq("cpu-usage.series-lengths-differ"), f"{where}: user {len(us)}, "
                      f"sys {len(sy)} sample(s)", "warning", "schema drift")
        for k in keys:
            v = block.get(k)
            if v is None:
                continue
            if not isinstance(v, list):
                door.note(dq("cpu-usage.series-not-list"), f"{where}.{k}", "warning",
                          "schema drift")
                continue
            kind = "percent" if where == "device_info" else "size"  # a process may use more than one core (> 100 %)
            for x in v:
                door.number(kind, x, f"{where}.{k}", "missing")


def _frame(block, keys: dict[str, str], window: Optional[tuple[int, int]]) -> pd.DataFrame:
    cols = {name: _series((block or {}).get(k)) for k, name in keys.items()}
    n = max((len(v) for v in cols.values()), default=0)
    data = {"sample": np.arange(n)}
    for name, v in cols.items():
        data[name] = np.concatenate([v, np.full(n - len(v), math.nan)])
    idx = np.arange(n)
    data["selected"] = (idx >= window[0]) & (idx <= window[1]) if window else np.ones(n, dtype=bool)
    return pd.DataFrame(data)


def queue_step_times(path: Path) -> list[tuple[int, float]]:
    """(step, sampling time) of the type-1 (queue) lines, steps renumbered so the file's first line is step 1
    (MindInsight's `_get_minddata_queue_step_time_info`). Unreadable lines are skipped."""
    out: list[tuple[int, float]] = []
    diff: Optional[int] = None
    try:
        with open_file(path, "r", encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 5:
                    continue
                try:
                    step, ts = int(parts[2]), float(parts[4])
                except ValueError:
                    continue
                if diff is None:
                    diff = step - 1
                if parts[0] == "1":
                    out.append((step - diff, ts))
    except OSError:
        return []
    return out


def sample_steps(time_stamp: Sequence[float], queue: Sequence[tuple[int, float]]) -> list[int]:
    """The step of each sample but the first (`time_stamp[1:]`), as MindInsight assigns them; [] without a queue."""
    steps: list[int] = []
    if not queue:
        return steps
    left = right = 0
    for item in time_stamp[1:]:
        item = float(item)
        if item < queue[0][1]:
            steps.append(0)
            continue
        while right < len(queue):
            if item <= queue[right][1]:
                steps.append(queue[left][0] if item < queue[right][1] else queue[right][0])
                break
            left = right
            right += 1
        if right == len(queue):
            steps.append(queue[right - 1][0])
    return steps


def selection_window(steps: Sequence[int], total: int) -> Optional[tuple[int, int]]:
    """[left, right] array positions MindInsight averages with its default filter (steps 1..total); None = all.

    An empty window is (0, -1)."""
    if not steps:
        return None
    left, right = 0, len(steps) - 1
    while left <= right and int(steps[left]) < 1:
        left += 1
    while left <= right and int(steps[right]) > total:
        right -= 1
    return left, right


def mindinsight_average(values: Sequence[float], window: Optional[tuple[int, int]]) -> Optional[int]:
    """`round(sum(arr) / len(arr))` over arr = values[left:right + 1] (all values without a window); None when empty."""
    arr = [float(v) for v in (values[window[0]: window[1] + 1] if window else values)]
    arr = [v for v in arr if not math.isnan(v)]
    return round(sum(arr) / len(arr)) if arr else None


def _queue_file(path: Path) -> Optional[Path]:
    m = re.match(r"minddata_cpu_utilization_(.+)\.json$", path.name)
    if not m:
        return None
    for pattern in QUEUE_FILES:
        q = path.parent / pattern.format(m.group(1))
        if q.is_file():
            return q
    return None


def load_cpu_usage(path: Path, log: IssueLog, op_types: Optional[dict[int, tuple[str, float]]] = None
                   ) -> Optional[CpuUsage]:
    data = read_json(path, log)
    if not isinstance(data, dict):
        if data is not None:
            log.add(path, dq("cpu-usage.not-object"))
        return None
    door = Door(log, path)
    raw_stamps = data.get("time_stamp")
    if raw_stamps is not None and not isinstance(raw_stamps, list):
        door.note(dq("cpu-usage.series-not-list"), "time_stamp", "warning", "schema drift")
    stamps = [door.number("timestamp", t, f"time_stamp[{i}]") for i, t in
              enumerate(raw_stamps if isinstance(raw_stamps, list) else [])]
    stamps = [t for t in stamps if not math.isnan(t)]  # (each one left out is named by the door)
    qfile = _queue_file(path)
    queue = queue_step_times(qfile) if qfile is not None and regular_file(qfile, log) else []
    steps = sample_steps(stamps, queue)
    window = selection_window(steps, len(queue))
    lost = [k for k in REQUIRED_KEYS if k not in data]
    lost += [f"{b}.{k}" for b in ("device_info", "process_info") if isinstance(data.get(b), dict)
             for k in ("user_utilization", "sys_utilization") if k not in data[b]]
    lost += ["device_info.idle_utilization"] if isinstance(data.get("device_info"), dict) and \
        "idle_utilization" not in data["device_info"] else []
    if lost:
        door.note(dq("cpu-usage.keys-missing"), ", ".join(lost)[:120], "warning",
                  "schema drift")
    _check_series(door, data, len(data.get("time_stamp") or []) if isinstance(data.get("time_stamp"), list) else 0)
    machine = _frame(data.get("device_info"), MACHINE_KEYS, window)
    process = _frame(data.get("process_info"), {"user_utilization": "user", "sys_utilization": "sys"}, window)
    ops = []
    seen_ids: set = set()
    for o in data.get("op_info") or []:
        if not isinstance(o, dict) or o.get("op_id") is None:
            door.note(dq("cpu-usage.op-without-id"), repr(o)[:60], "warning", "schema drift")
            continue
        if o.get("op_id") in (-1, "-1"):  # MindInsight drops op -1 (the pipeline's own root)
            continue
        if math.isnan(door.number("rank", o.get("op_id"), "op_info op_id")):
            continue
        if str(o.get("op_id")) in seen_ids:
            door.note(dq("cpu-usage.op-id-repeated"), f"op_id {o.get('op_id')!r}",
                      "warning", "duplicate")
        seen_ids.add(str(o.get("op_id")))
        m = o.get("metrics") or {}
        user, sys_ = _series(m.get("user_utilization")), _series(m.get("sys_utilization"))
        oid = int(o["op_id"])
        op_type, workers = (op_types or {}).get(oid, ("", math.nan))
        u, s = mindinsight_average(user, window), mindinsight_average(sys_, window)
        ops.append({"op_id": oid, "op_type": op_type, "num_workers": workers,
                    "user": math.nan if u is None else u, "sys": math.nan if s is None else s})
    door.close()
    if not len(machine) and not len(process) and not ops:
        log.add(path, dq("cpu-usage.no-samples"))
        return None
    cpus = to_float(data.get("cpu_processor_num"))
    interval = to_float(data.get("sampling_interval"))
    return CpuUsage(source=log.rel(path), machine=machine, process=process,
                    ops=pd.DataFrame(ops, columns=["op_id", "op_type", "num_workers", "user", "sys"]),
                    cpu_count=None if math.isnan(cpus) else int(cpus),
                    interval_ms=None if math.isnan(interval) else interval)
