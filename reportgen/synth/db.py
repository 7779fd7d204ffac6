"""Synthetic `export_type=db` output: a rank's text export rewritten as torch_npu writes it to SQLite.

`write_rank_db(rank_dir, rank, keep_text)` reads the text files the generator wrote for one `*_ascend_pt` folder and
writes, with the table layouts of the real torch_npu 2.x / CANN 8.x files (CREATE statements copied from
`msinsight_pytorch_2rank_level1_db`):

* `ASCEND_PROFILER_OUTPUT/analysis.db`: `StepTraceTime` (µs), `CommAnalyzerTime` (start µs, times ms),
  `CommAnalyzerBandwidth` (one row per transport and package size), `CommAnalyzerMatrix` (keys without `@group`,
  the group in `group_name`, ranks as TEXT);
* `ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_{rank}.db`: `STRING_IDS`, `META_DATA` (schema version,
  ENV_VARIABLES, parallel_group_info, distributed_args as JSON text), `RANK_DEVICE_MAP`, `HOST_INFO`, `NPU_INFO`,
  `STEP_TIME`, `TASK` + `COMPUTE_TASK_INFO` (kernels, ns), `COMMUNICATION_OP` (ns, unhashed group name, waitNs),
  `MEMORY_RECORD` (bytes, ns), `NPU_MEM` (`app` rows, bytes), `OP_MEMORY` (bytes, ns), `ENUM_MODULE`.

Because real torch_npu lists the HCCL operators in kernel_details.csv (from COMMUNICATION_OP), the same rows are
added to the text kernel_details.csv when it is kept, so the two exports describe the same kernels.
With `keep_text=False` the text files and profiler_metadata.json are removed (export_type db writes none).
"""

from __future__ import annotations

import csv
import json
import re
import sqlite3
from pathlib import Path
from typing import Optional

from reportgen.loaders.groups import double_hash

MB = 2 ** 20
TEXT_FILES = ("step_trace_time.csv", "communication.json", "communication_matrix.json", "kernel_details.csv",
              "op_statistic.csv", "memory_record.csv", "operator_memory.csv", "npu_module_mem.csv", "trace_view.json")

ANALYSIS_SCHEMA = (
    "CREATE TABLE StepTraceTime (step TEXT, computing NUMERIC, communication_not_overlapped NUMERIC, overlapped "
    "NUMERIC, communication NUMERIC, free NUMERIC, stage NUMERIC, bubble NUMERIC, "
    "communication_not_overlapped_and_exclude_receive NUMERIC, preparing NUMERIC)",
    "CREATE TABLE CommAnalyzerBandwidth (hccl_op_name TEXT, group_name TEXT, transport_type TEXT, transit_size "
    "NUMERIC, transit_time NUMERIC, bandwidth NUMERIC, large_packet_ratio NUMERIC, package_size NUMERIC, count "
    "NUMERIC, total_duration NUMERIC, step TEXT, type TEXT)",
    "CREATE TABLE CommAnalyzerMatrix (hccl_op_name TEXT, group_name TEXT, src_rank TEXT, dst_rank TEXT, "
    "transport_type TEXT, transit_size NUMERIC, transit_time NUMERIC, bandwidth NUMERIC, step TEXT, type TEXT, "
    "op_name TEXT)",
    "CREATE TABLE CommAnalyzerTime (hccl_op_name TEXT, group_name TEXT, start_timestamp NUMERIC, elapse_time "
    "NUMERIC, transit_time NUMERIC, wait_time NUMERIC, synchronization_time NUMERIC, idle_time NUMERIC, step TEXT, "
    "type TEXT)",
)
PROFILER_SCHEMA = (
    "CREATE TABLE STRING_IDS (id INTEGER PRIMARY KEY,value TEXT)",
    "CREATE TABLE META_DATA (name TEXT,value TEXT)",
    "CREATE TABLE RANK_DEVICE_MAP (rankId INTEGER, deviceId INTEGER)",
    "CREATE TABLE HOST_INFO (hostUid TEXT,hostName TEXT)",
    "CREATE TABLE NPU_INFO (id INTEGER,name TEXT)",
    "CREATE TABLE SESSION_TIME_INFO (startTimeNs INTEGER,endTimeNs INTEGER)",
    "CREATE TABLE STEP_TIME (id INTEGER, startNs INTEGER, endNs INTEGER)",
    "CREATE TABLE TASK (startNs INTEGER,endNs INTEGER,deviceId INTEGER,connectionId INTEGER,globalTaskId INTEGER,"
    "globalPid INTEGER,taskType INTEGER,contextId INTEGER,streamId INTEGER,taskId INTEGER,modelId INTEGER, "
    "depth integer)",
    "CREATE TABLE COMPUTE_TASK_INFO (name INTEGER,globalTaskId INTEGER PRIMARY KEY,blockDim INTEGER,mixBlockDim "
    "INTEGER,taskType INTEGER,opType INTEGER,inputFormats INTEGER,inputDataTypes INTEGER,inputShapes INTEGER,"
    "outputFormats INTEGER,outputDataTypes INTEGER,outputShapes INTEGER,attrInfo INTEGER, waitNs INTEGER)",
    "CREATE TABLE COMMUNICATION_OP (opName INTEGER,startNs INTEGER,endNs INTEGER,connectionId INTEGER,groupName "
    "INTEGER,opId INTEGER PRIMARY KEY,relay INTEGER,retry INTEGER,dataType INTEGER,algType INTEGER,count NUMERIC,"
    "opType INTEGER, waitNs INTEGER)",
    "CREATE TABLE MEMORY_RECORD (component INTEGER, timestamp INTEGER, totalAllocated INTEGER, totalReserved "
    "INTEGER, totalActive INTEGER, streamPtr INTEGER, deviceId INTEGER)",
    "CREATE TABLE NPU_MEM (type INTEGER,ddr NUMERIC,hbm NUMERIC,timestampNs INTEGER,deviceId INTEGER)",
    "CREATE TABLE OP_MEMORY (name INTEGER, size INTEGER, allocationTime INTEGER, releaseTime INTEGER, "
    "activeReleaseTime INTEGER, duration INTEGER, activeDuration INTEGER, allocationTotalAllocated INTEGER, "
    "allocationTotalReserved INTEGER, allocationTotalActive INTEGER, releaseTotalAllocated INTEGER, "
    "releaseTotalReserved INTEGER, releaseTotalActive INTEGER, streamPtr INTEGER, deviceId INTEGER)",
    "CREATE TABLE ENUM_MODULE (id INTEGER PRIMARY KEY,name TEXT)",
    "CREATE TABLE NPU_MODULE_MEM (moduleId INTEGER,timestampNs INTEGER,totalReserved NUMERIC,deviceId INTEGER)",
)
TASK_TYPE = {"AI_CORE": "KERNEL_AICORE", "AI_VECTOR_CORE": "KERNEL_AIVEC", "MIX_AIC": "KERNEL_MIX_AIC",
             "MIX_AIV": "KERNEL_MIX_AIV", "AI_CPU": "KERNEL_AICPU"}


class _Strings:
    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def __call__(self, s) -> int:
        s = str(s)
        if s not in self.ids:
            self.ids[s] = len(self.ids) + 1
        return self.ids[s]


def _rows(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    try:
        with open(path, newline="", encoding="utf-8") as f:
            return [r for r in csv.DictReader(f) if None not in r.values()]
    except (OSError, csv.Error, UnicodeDecodeError):
        return []


def _json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _num(v) -> Optional[float]:
    try:
        return float(str(v).strip().strip("\t"))
    except (TypeError, ValueError):
        return None


def _ns(us) -> Optional[int]:
    v = _num(us)
    return None if v is None else int(round(v * 1000))


def _op_type(name: str) -> str:
    """`hcom_allReduce__210_0_1` -> `hcom_allReduce_` (the Type torch_npu writes for HCCL kernels)."""
    m = re.match(r"^(.*?_)_\d", name)
    return m.group(1) if m else name


def write_rank_db(rank_dir: Path, rank: int, keep_text: bool, host: str = "node000", device: int = 0) -> None:
    out = rank_dir / "ASCEND_PROFILER_OUTPUT"
    meta = _json(rank_dir / "profiler_metadata.json") or {}
    groups = meta.get("parallel_group_info") or {}
    unhash = {str(double_hash(k)): k for k in groups}
    comm = _json(out / "communication.json")
    matrix = _json(out / "communication_matrix.json")
    comm = comm if isinstance(comm, dict) else {}
    matrix = matrix if isinstance(matrix, dict) else {}
    steps = _rows(out / "step_trace_time.csv")
    kernels = _rows(out / "kernel_details.csv")

    # --- analysis.db -----------------------------------------------------------------------------
    a_rows: dict[str, list] = {"StepTraceTime": [], "CommAnalyzerTime": [], "CommAnalyzerBandwidth": [],
                               "CommAnalyzerMatrix": []}
    for r in steps:
        a_rows["StepTraceTime"].append((str(r.get("Step", "")), *[_num(r.get(c)) for c in (
            "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free", "Stage", "Bubble",
            "Communication(Not Overlapped and Exclude Receive)", "Preparing")]))
    comm_ops = []  # (step, name, group hash, start us, elapse ms, wait ms)
    for skey, kinds in comm.items():
        for kind, ops in (kinds or {}).items():
            for key, info in (ops or {}).items():
                if key.startswith("Total Op Info") or not isinstance(info, dict):
                    continue
                name, _, grp = key.partition("@")
                t = info.get("Communication Time Info") or {}
                a_rows["CommAnalyzerTime"].append((name, grp, t.get("Start Timestamp(us)"), t.get("Elapse Time(ms)"),
                                                   t.get("Transit Time(ms)"), t.get("Wait Time(ms)"),
                                                   t.get("Synchronization Time(ms)"), t.get("Idle Time(ms)"), skey,
                                                   kind))
                comm_ops.append((skey, name, grp, t.get("Start Timestamp(us)"), t.get("Elapse Time(ms)"),
                                 t.get("Wait Time(ms)")))
                for tr, b in (info.get("Communication Bandwidth Info") or {}).items():
                    if not isinstance(b, dict) or not b.get("Transit Size(MB)"):
                        continue
                    dist = b.get("Size Distribution") or {"0": [0, 0]}
                    for pkg, (cnt, dur) in dist.items():
                        a_rows["CommAnalyzerBandwidth"].append((
                            name, grp, tr, b.get("Transit Size(MB)"), b.get("Transit Time(ms)"),
                            b.get("Bandwidth(GB/s)"), b.get("Large Packet Ratio", 0), float(pkg), cnt, dur, skey,
                            kind))
    for skey, kinds in matrix.items():
        for kind, entries in (kinds or {}).items():
            for key, links in (entries or {}).items():
                name, _, grp = key.partition("@")
                for lk, li in (links or {}).items():
                    src, _, dst = lk.partition("-")
                    a_rows["CommAnalyzerMatrix"].append((name, grp, src, dst, li.get("Transport Type"),
                                                         li.get("Transit Size(MB)"), li.get("Transit Time(ms)"),
                                                         li.get("Bandwidth(GB/s)"), skey, kind, li.get("Op Name")))
    _write(out / "analysis.db", ANALYSIS_SCHEMA, a_rows)

    # --- ascend_pytorch_profiler_{rank}.db -----------------------------------------------------------
    sid = _Strings()
    p_rows: dict[str, list] = {k: [] for k in ("META_DATA", "RANK_DEVICE_MAP", "HOST_INFO", "NPU_INFO", "STEP_TIME",
                                              "TASK", "COMPUTE_TASK_INFO", "COMMUNICATION_OP", "MEMORY_RECORD",
                                              "NPU_MEM", "OP_MEMORY", "ENUM_MODULE", "NPU_MODULE_MEM",
                                              "SESSION_TIME_INFO")}
    p_rows["META_DATA"] = [("SCHEMA_VERSION_MICRO", "0"), ("SCHEMA_VERSION_MINOR", "0"),
                           ("SCHEMA_VERSION_MAJOR", "1"), ("SCHEMA_VERSION", "1.0.0")]
    for k in ("ENV_VARIABLES", "parallel_group_info", "distributed_args"):
        if k in meta:
            p_rows["META_DATA"].append((k, json.dumps(meta[k])))
    p_rows["RANK_DEVICE_MAP"] = [(rank, device)]
    p_rows["HOST_INFO"] = [(str(double_hash(host)), host)]
    p_rows["NPU_INFO"] = [(device, "Ascend910B")]
    first_kernel: dict[str, int] = {}
    hccl_rows = []
    for i, (skey, name, grp, start_us, el_ms, wait_ms) in enumerate(comm_ops):
        a = _ns(start_us)
        dur = int(round((_num(el_ms) or 0.0) * 1e6))
        if a is None:
            continue
        p_rows["COMMUNICATION_OP"].append((sid(name), a, a + dur, 100000 + i, sid(unhash.get(grp, grp)), i + 1, 0, 0,
                                           sid("FP16"), sid("RING"), 1024, sid(_op_type(name)),
                                           int(round((_num(wait_ms) or 0.0) * 1e6))))
        hccl_rows.append((skey[4:] if skey.startswith("step") else "", name, _op_type(name), a, dur))
    for i, r in enumerate(kernels):
        a, d = _ns(r.get("Start Time(us)")), _ns(r.get("Duration(us)"))
        if a is None or d is None or r.get("Accelerator Core", "").strip() == "HCCL":
            continue
        core = r.get("Accelerator Core", "AI_CORE").strip()
        step = str(r.get("Step Id", "")).strip()
        first_kernel[step] = min(first_kernel.get(step, a), a)
        p_rows["TASK"].append((a, a + d, device, i + 1, i + 1, 1000 + rank, sid(TASK_TYPE.get(core, core)),
                               4294967295, 2, 10000 + i, 4294967295, 0))
        p_rows["COMPUTE_TASK_INFO"].append((sid(r.get("Name", "").strip()), i + 1, _num(r.get("Block Dim")) or 0, 0,
                                            sid(core), sid(r.get("Type", "").strip()), 0, 0, 0, 0, 0, 0, 0,
                                            _ns(r.get("Wait Time(us)")) or 0))
    for r in steps:
        s = str(r.get("Step", "")).strip()
        a = first_kernel.get(s)
        stage, prep = _num(r.get("Stage")), _num(r.get("Preparing")) or 0.0
        if a is None or stage is None:
            continue
        start = a - int(round(prep * 1000))
        p_rows["STEP_TIME"].append((int(s), start, a + int(round(stage * 1000))))
    for r in _rows(out / "memory_record.csv"):
        ts = _ns(r.get("Timestamp(us)"))
        comp = r.get("Component", "").strip()
        res, alloc = _num(r.get("Total Reserved(MB)")), _num(r.get("Total Allocated(MB)"))
        if ts is None:
            continue
        if comp == "APP":
            p_rows["NPU_MEM"].append((sid("app"), 0, None if res is None else int(round(res * MB)), ts, device))
        else:
            act = _num(r.get("Total Active(MB)"))
            p_rows["MEMORY_RECORD"].append((sid(comp), ts, None if alloc is None else int(round(alloc * MB)),
                                            None if res is None else int(round(res * MB)),
                                            None if act is None else int(round(act * MB)), 2, device))
    for r in _rows(out / "operator_memory.csv"):
        kb = _num(r.get("Size(KB)"))
        if kb is None:
            continue
        p_rows["OP_MEMORY"].append((sid(r.get("Name", "").strip()), int(round(kb * 1024)),
                                    _ns(r.get("Allocation Time(us)")), _ns(r.get("Release Time(us)")),
                                    _ns(r.get("Active Release Time(us)")), _ns(r.get("Duration(us)")),
                                    _ns(r.get("Active Duration(us)")), None, None, None, None, None, None, 2, device))
    modules: dict[str, int] = {}
    for r in _rows(out / "npu_module_mem.csv"):
        c = r.get("Component", "").strip()
        mid = modules.setdefault(c, len(modules))
        res = _num(r.get("Total Reserved(MB)"))
        p_rows["NPU_MODULE_MEM"].append((mid, _ns(r.get("Timestamp(us)")), None if res is None else res * MB, device))
    p_rows["ENUM_MODULE"] = [(i, c) for c, i in modules.items()]
    p_rows["STRING_IDS"] = [(i, s) for s, i in sid.ids.items()]
    _write(out / f"ascend_pytorch_profiler_{rank}.db", PROFILER_SCHEMA, p_rows)

    if keep_text:
        if hccl_rows and kernels:  # real torch_npu lists the HCCL operators in kernel_details.csv too
            with open(out / "kernel_details.csv", "a", encoding="utf-8") as f:
                for step, name, typ, a, dur in hccl_rows:
                    f.write(f"{step},{name},{typ},HCCL,{a / 1000:.3f}\t,{dur / 1000:.3f},0,0\n")
    else:
        for n in TEXT_FILES:
            (out / n).unlink(missing_ok=True)
        (rank_dir / "profiler_metadata.json").unlink(missing_ok=True)


def _write(path: Path, schema: tuple[str, ...], rows: dict[str, list]) -> None:
    path.unlink(missing_ok=True)
    con = sqlite3.connect(path)
    try:
        for sql in schema:
            con.execute(sql)
        for table, vals in rows.items():
            if vals:
                con.executemany(f"INSERT INTO {table} VALUES ({','.join('?' * len(vals[0]))})", vals)
        con.commit()
    finally:
        con.close()
