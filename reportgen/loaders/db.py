"""DB exports (`export_type=db`): the same model objects the text loaders produce, read from SQLite.

Over 500 lines: one SQLite schema family (profiler DB, analysis.db, msprof DB) whose table readers share the
connection, the time base and the string table.

Files and the schema generations read (stdlib `sqlite3`, opened read-only and immutable, only the columns
needed; a missing table or column costs only what it carries and becomes a data-quality entry):

* **Profiler DB**, the msprof unified schema (`META_DATA` SCHEMA_VERSION 1.x; every time in **ns**, every
  size in **bytes**, strings interned in `STRING_IDS`):
  `ascend_pytorch_profiler_{rank}.db` (torch_npu), `ascend_mindspore_profiler_{rank}.db` (MindSpore 2.3+),
  msprof `PROF_*/msprof_{ts}.db` (CANN). Tables read:
  `META_DATA` (`parallel_group_info`, `distributed_args`, `ENV_VARIABLES`), `RANK_DEVICE_MAP(rankId, deviceId)`,
  `HOST_INFO(hostName)`, `STEP_TIME(id, startNs, endNs)`, `OVERLAP_ANALYSIS(startNs, endNs, type)`,
  `TASK` + `COMPUTE_TASK_INFO` (name, opType, taskType = the accelerator core) + `STRING_IDS` (the kernels of
  kernel_details.csv), `COMMUNICATION_OP` (opName, startNs, endNs, groupName, opType, `waitNs` when the
  generation has it; the HCCL rows of kernel_details.csv), `MEMORY_RECORD` (component, timestamp, totalAllocated,
  totalReserved) + `NPU_MEM` (type `app`: hbm + ddr; the APP rows of memory_record.csv), `OP_MEMORY` (name, size,
  duration: operator_memory.csv), `NPU_MODULE_MEM` + `ENUM_MODULE` (npu_module_mem.csv).
  Generations: with or without `waitNs` on COMMUNICATION_OP / COMPUTE_TASK_INFO, with or without `depth` on TASK,
  PYTORCH_API times as TEXT (not read), `MEMORY_RECORD.timestamp` in ns; tables absent at lower profiler levels
  (no COMMUNICATION_OP at Level0, no memory tables without profile_memory).
* **Analysis DB**: `analysis.db` (torch_npu) / `communication_analyzer.db` (MindSpore): `StepTraceTime` (µs; with
  or without `deviceId` and `preparing`), `CommAnalyzerTime` (start µs, times ms), `CommAnalyzerBandwidth` (MB, ms,
  GB/s; one row per transport and package size), `CommAnalyzerMatrix` (with or without `op_name`): the twins of
  step_trace_time.csv, communication.json and communication_matrix.json, read through the text loaders' own
  record builders so the numbers are the same.

The text export is preferred when both exist: the DB fills only what the text files did not give, and a DB
that was found but not needed is named in the data-quality section ("not read").
"""

from __future__ import annotations

import json
import math
import bisect
import re
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import numpy as np
import pandas as pd

from reportgen.dataquality import Coded, dq
from reportgen.loaders.files import regular_file
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.communication import (
    MATRIX_KEY_RE,
    op_instances,
    _frames,
    _link_record,
    _modern_op,
    _self_links,
    _split_group,
    _step_of_key,
    _steps_from_ops,
    op_kind,
    optype_of,
)
from reportgen.loaders.groups import double_hash
from reportgen.loaders.memory import TOP_ALLOCATIONS, _downsample
from reportgen.loaders.operators import kernel_type_from_name, note_types_from_names, side_of_core, type_missing
from reportgen.loaders.schema import Door
from reportgen.loaders.step_trace import complete_modern, modern_frame
from reportgen.model import OP_DETAIL_COLUMNS, OP_TYPE_COLUMNS, Communication, Memory, Operators, RankData, StepTrace
from reportgen.numbers import to_int as _int

if TYPE_CHECKING:
    from reportgen.discover import RankFiles

ANALYSIS_DB_NAMES = ("analysis.db", "communication_analyzer.db")
NS_PER_MS = 1e6
MB = float(2 ** 20)  # memory sizes: the profilers' MB are 2^20 bytes


# --- access ------------------------------------------------------------------------------------


class Db:
    """One read-only SQLite file; every failure becomes a data-quality entry on `log`."""

    def __init__(self, path: Path, log: IssueLog) -> None:
        self.path, self.log = path, log
        self.con: Optional[sqlite3.Connection] = None
        self._cols: dict[str, Optional[set[str]]] = {}
        self.con, self.tables = None, set()
        if not regular_file(Path(path), log):  # a link out of the run, a FIFO, a directory: named, never opened
            return
        try:
            uri = Path(path).resolve().as_uri() + "?mode=ro&immutable=1"
            self.con = sqlite3.connect(uri, uri=True)
            self.tables = {r[0] for r in self.con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        except (sqlite3.Error, OSError, ValueError, RuntimeError) as e:
            log.add(path, dq("db.cannot-open-database", value=e), "error")
            self.con, self.tables = None, set()

    def close(self) -> None:
        if self.con is not None:
            self.con.close()
            self.con = None

    def columns(self, table: str) -> set[str]:
        if table not in self._cols:
            cols = None
            if self.con is not None and table in self.tables:
                try:
                    cols = {r[1] for r in self.con.execute(f'PRAGMA table_info("{table}")')}
                except sqlite3.Error:
                    cols = None
            self._cols[table] = cols
        return self._cols[table] or set()

    def has(self, table: str, *cols: str) -> bool:
        have = self.columns(table)
        return bool(have) and all(c in have for c in cols)

    def query(self, sql: str, what: str, params: tuple = ()) -> Optional[list[tuple]]:
        if self.con is None:
            return None
        try:
            return self.con.execute(sql, params).fetchall()
        except sqlite3.Error as e:
            self.log.add(self.path, dq("db.cannot-read", what=what, value=e), "warning")
            return None

    def string(self, col: str) -> str:
        """SQL for the interned string of `col` (STRING_IDS), or the raw value when the table is missing."""
        if "STRING_IDS" in self.tables:
            return f"(SELECT value FROM STRING_IDS WHERE id = {col})"
        return f"CAST({col} AS TEXT)"


def _num(v: Any) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f if math.isfinite(f) else math.nan


# --- metadata ------------------------------------------------------------------------------------


def read_metadata(db: Db, data: RankData) -> list[str]:
    """Device, host, distributed_args and parallel groups; returns the tables that gave something."""
    info, got = data.info, []
    if db.has("RANK_DEVICE_MAP", "rankId", "deviceId"):
        rows = db.query("SELECT rankId, deviceId FROM RANK_DEVICE_MAP", "RANK_DEVICE_MAP") or []
        own = [d for r, d in rows if r == info.rank] or [d for _, d in rows]
        if own and own[0] is not None and int(own[0]) >= 0 and info.device is None:
            info.device = int(own[0])
            got.append("RANK_DEVICE_MAP")
    if db.has("HOST_INFO", "hostName") and info.host is None:
        rows = db.query("SELECT hostName FROM HOST_INFO", "HOST_INFO") or []
        if rows and rows[0][0]:
            info.host = str(rows[0][0])
            got.append("HOST_INFO")
    if db.has("NPU_INFO", "id", "name") and not info.device_model:  # the chip type (Ascend910B, Ascend910_9391...)
        rows = db.query("SELECT id, name FROM NPU_INFO", "NPU_INFO") or []
        own = [n for d, n in rows if info.device is not None and d == info.device] or [n for _, n in rows]
        if own and isinstance(own[0], str) and own[0].strip():
            info.device_model = own[0].strip()[:120]
            got.append("NPU_INFO")
    if db.has("META_DATA", "name", "value"):
        rows = dict(db.query("SELECT name, value FROM META_DATA", "META_DATA") or [])
        if rows.get("SCHEMA_VERSION"):
            info.versions.setdefault("profiler DB schema", str(rows["SCHEMA_VERSION"]))
        dargs = _json_value(rows.get("distributed_args"), db, "distributed_args")
        if isinstance(dargs, dict) and not info.distributed_args:
            info.distributed_args = dargs
            info.distributed_args_source = f"{db.path.name} META_DATA distributed_args"
            ws = _int(dargs.get("world_size"))
            if ws:
                info.rank_size = info.rank_size or ws
            got.append("META_DATA distributed_args")
        groups = _json_value(rows.get("parallel_group_info"), db, "parallel_group_info")
        if isinstance(groups, dict) and not info.parallel_groups:
            clean = {}
            for gid, g in groups.items():
                if isinstance(g, dict) and isinstance(g.get("global_ranks"), list):
                    ranks = [r for r in (_int(x) for x in g["global_ranks"]) if r is not None]
                    clean[str(gid)] = {"group_name": str(g.get("group_name", "")), "global_ranks": ranks,
                                       "group_rank": _int(g.get("group_rank"))}
            info.parallel_groups = clean
            if clean:
                got.append("META_DATA parallel_group_info")
    return got


def read_gemm_flops(db: Db):
    """The MatMul / BatchMatMul kernels' FLOPs from their shapes (COMPUTE_TASK_INFO inputShapes / outputShapes,
    recorded with record_shapes), per STEP_TIME window: kernel_details.csv's twin (`op_flops.load_kernel_gemms`)."""
    from reportgen.loaders.op_flops import gemm_flops_of_kernels

    need = ("globalTaskId", "opType", "inputShapes", "outputShapes")
    if not db.has("TASK", "startNs", "endNs", "globalTaskId") or not db.has("COMPUTE_TASK_INFO", *need) \
            or not db.has("STRING_IDS", "id", "value"):
        return None
    cc = db.columns("COMPUTE_TASK_INFO")
    opt = [c for c in ("inputDataTypes", "inputFormats", "outputFormats") if c in cc]
    joins = "".join(f" LEFT JOIN STRING_IDS s_{c} ON s_{c}.id = c.{c}" for c in opt)
    sel = ", ".join(f"s_{c}.value" for c in opt)
    rows = db.query(
        "SELECT t.startNs, t.endNs, so.value, si.value, sx.value" + (", " + sel if sel else "") +
        " FROM TASK t JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId"
        " JOIN STRING_IDS so ON so.id = c.opType JOIN STRING_IDS si ON si.id = c.inputShapes"
        " JOIN STRING_IDS sx ON sx.id = c.outputShapes" + joins +
        " WHERE so.value LIKE '%MatMul%' OR so.value LIKE '%Matmul%'", "COMPUTE_TASK_INFO shapes") or []
    if not rows:
        return None
    windows = []
    if db.has("STEP_TIME", "id", "startNs", "endNs"):
        windows = sorted((s, e, i) for i, s, e in db.query("SELECT id, startNs, endNs FROM STEP_TIME", "STEP_TIME")
                         or [] if isinstance(s, (int, float)) and isinstance(e, (int, float)))
    starts = [w[0] for w in windows]

    def step_of(ns) -> str:
        k = bisect.bisect_right(starts, ns) - 1
        return str(windows[k][2]) if k >= 0 and ns < windows[k][1] else ""

    def kernels():
        for r in rows:
            s_, e_, typ, ins, outs = r[:5]
            extra = dict(zip(opt, r[5:]))
            if not isinstance(s_, (int, float)) or not isinstance(e_, (int, float)) or e_ < s_:
                continue
            yield (str(typ or ""), str(ins or ""), str(outs or ""), str(extra.get("inputDataTypes") or ""),
                   str(extra.get("inputFormats") or ""), str(extra.get("outputFormats") or ""), step_of(s_),
                   (e_ - s_) / 1e6, 1)
    return gemm_flops_of_kernels(kernels(), db.path, db.log)


def _json_value(v: Any, db: Db, name: str) -> Any:
    if v is None or v == "":
        return None
    if isinstance(v, (dict, list)):
        return v
    try:
        return json.loads(v)
    except (TypeError, ValueError):
        db.log.add(db.path, dq("db.meta-data-not-valid", name=name))
        return None


def infer_world_group(db: Db, data: RankData) -> Optional[Coded]:
    """No distributed_args nor parallel_group_info (the common torch DDP case): when this rank's collectives all
    run in one HCCL group whose local ranks are the global ranks (CommAnalyzerMatrix/COMMUNICATION_TASK_INFO
    self links), the run is pure data parallel over that group: world size = group size, DP index = rank."""
    info = data.info
    if info.distributed_args or info.parallel_groups or data.communication is None:
        return None
    ops = data.communication.ops
    groups = set(ops["group"].dropna()) if len(ops) else set()
    if len(groups) != 1:
        return None
    (group,) = groups
    if data.communication.self_local.get(group) != info.rank:
        return None
    size = None
    if db.has("COMMUNICATION_TASK_INFO", "srcRank", "dstRank"):
        rows = db.query("SELECT MAX(srcRank), MAX(dstRank) FROM COMMUNICATION_TASK_INFO "
                        "WHERE srcRank < 65535 AND dstRank < 65535", "COMMUNICATION_TASK_INFO") or []
        vals = [v for v in (rows[0] if rows else ()) if v is not None]
        size = int(max(vals)) + 1 if vals else None
    links = data.communication.links
    if len(links):
        mx = int(max(links["src"].max(), links["dst"].max())) + 1
        size = max(size or 0, mx)
    if not size or size <= info.rank:
        return None
    info.distributed_args = {"world_size": size, "data_parallel_size": size, "tensor_model_parallel_size": 1,
                             "pipeline_model_parallel_size": 1}
    info.distributed_args_source = (f"{db.path.name}, inferred: no parallel metadata, one HCCL group of {size} "
                                    "ranks whose local ranks are the global ranks")
    info.rank_size = info.rank_size or size
    return dq("db.world-group-inferred", size=size, dp=size)


# --- step trace ----------------------------------------------------------------------------------


def read_step_trace(db: Db) -> Optional[StepTrace]:
    """The step_trace_time.csv numbers from the profiler DB alone (no analysis.db): per STEP_TIME window, the
    OVERLAP_ANALYSIS segments (torch_npu's overlap lanes; type 0 computing, 1 communication, 2 communication not
    overlapped, 3 free) clipped to the window and summed; stage = last segment end - first segment start,
    preparing = first segment start - step start (checked against StepTraceTime on the DB sample)."""
    if not db.has("STEP_TIME", "id", "startNs", "endNs") or not db.has("OVERLAP_ANALYSIS", "startNs", "endNs", "type"):
        return None
    steps = db.query("SELECT id, startNs, endNs FROM STEP_TIME ORDER BY startNs", "STEP_TIME") or []
    steps = [(s, int(a), int(b)) for s, a, b in steps if a is not None and b is not None and int(b) > int(a)]
    rows = db.query("SELECT type, startNs, endNs FROM OVERLAP_ANALYSIS", "OVERLAP_ANALYSIS") or []
    seg = np.array([(int(k), int(a), int(b)) for k, a, b in rows if None not in (k, a, b)],
                   dtype="int64").reshape(-1, 3)
    if not steps or not len(seg):
        return None
    records = []
    for sid, a, b in steps:
        inside = seg[(seg[:, 1] < b) & (seg[:, 2] > a)]
        if not len(inside):
            continue
        lo, hi = np.maximum(inside[:, 1], a), np.minimum(inside[:, 2], b)
        dur = np.clip(hi - lo, 0, None).astype("float64")
        rec: dict = {"step": _int(sid)}
        for t, key in ((0, "computing"), (1, "communication"), (2, "communication_not_overlapped"), (3, "free")):
            rec[key] = float(dur[inside[:, 0] == t].sum()) / NS_PER_MS
        rec["stage"] = float(hi.max() - lo.min()) / NS_PER_MS
        rec["preparing"] = float(lo.min() - a) / NS_PER_MS
        records.append(complete_modern(rec))
    if not records:
        return None
    return StepTrace(kind="modern", steps=modern_frame(records), source=db.log.rel(db.path))


def _merge(iv: np.ndarray) -> np.ndarray:
    if not len(iv):
        return iv
    iv = iv[np.argsort(iv[:, 0], kind="stable")]
    out = [list(iv[0])]
    for a, b in iv[1:]:
        if a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return np.array(out, dtype="int64")


# --- communication ---------------------------------------------------------------------------------


def read_analysis_communication(db: Db, parallel_groups: dict, rank: int) -> Optional[Communication]:
    """CommAnalyzerTime + CommAnalyzerBandwidth (communication.json) and CommAnalyzerMatrix (its matrix)."""
    ops: list[dict] = []
    links: list[dict] = []
    tcols = ("hccl_op_name", "group_name", "elapse_time", "transit_time", "wait_time", "synchronization_time",
             "idle_time", "step")
    if db.has("CommAnalyzerTime", *tcols):
        kind_col = "type" if "type" in db.columns("CommAnalyzerTime") else "''"
        start_col = "start_timestamp" if "start_timestamp" in db.columns("CommAnalyzerTime") else "NULL"
        rows = db.query(f"SELECT {', '.join(tcols)}, {kind_col}, {start_col} FROM CommAnalyzerTime",
                        "CommAnalyzerTime") or []
        bw: dict[tuple, dict] = {}
        door = Door(db.log, db.path, "CommAnalyzerTime")
        bcols = ("hccl_op_name", "group_name", "transport_type", "transit_size", "transit_time", "bandwidth", "step")
        if db.has("CommAnalyzerBandwidth", *bcols):
            for op, grp, tr, size, ttime, band, step in db.query(
                    f"SELECT {', '.join(bcols)} FROM CommAnalyzerBandwidth", "CommAnalyzerBandwidth") or []:
                # one row per transport and package size; the transport's totals repeat on each
                bw.setdefault((str(op), str(grp), str(step)), {}).setdefault(str(tr).upper(), {
                    "Transit Size(MB)": size, "Transit Time(ms)": ttime, "Bandwidth(GB/s)": band})
        for name, grp, el, tr, wt, sy, idle, step, kind, start in rows:
            grp = "" if grp is None else str(grp)
            info = {"Communication Time Info": {"Start Timestamp(us)": start, "Elapse Time(ms)": el,
                                                "Transit Time(ms)": tr, "Wait Time(ms)": wt,
                                                "Synchronization Time(ms)": sy, "Idle Time(ms)": idle},
                    "Communication Bandwidth Info": bw.get((str(name), grp, str(step)), {})}
            full = f"{name}@{grp}" if grp else str(name)
            rec = _modern_op(_step_of_key(str(step)), full, str(kind or ""), info, door)
            if rec is not None:
                ops.append(rec)
        door.close()
    mcols = ("hccl_op_name", "group_name", "src_rank", "dst_rank", "transport_type", "transit_size",
             "transit_time", "bandwidth", "step")
    if db.has("CommAnalyzerMatrix", *mcols):
        opn = "op_name" if "op_name" in db.columns("CommAnalyzerMatrix") else "NULL"
        bad = 0
        mdoor = Door(db.log, db.path, "CommAnalyzerMatrix")
        for key, grp, src, dst, tr, size, ttime, band, step, opname in db.query(
                f"SELECT {', '.join(mcols)}, {opn} FROM CommAnalyzerMatrix", "CommAnalyzerMatrix") or []:
            grp = "" if grp is None else str(grp)
            m = MATRIX_KEY_RE.match(str(key))
            if m is not None:
                scope = "total" if m.group("tag") == "total" else "sample"
                optype, name = m.group("optype"), None
            else:
                name, _ = _split_group(str(key))
                scope, optype = "op", optype_of(name)
            li = {"Transport Type": tr, "Transit Size(MB)": size, "Transit Time(ms)": ttime, "Bandwidth(GB/s)": band}
            if opname:
                li["Op Name"] = opname
            rec = _link_record(_step_of_key(str(step)), scope, optype, grp, name, f"{src}-{dst}", li, mdoor)
            if rec is None:
                bad += 1
            else:
                links.append(rec)
        mdoor.close()
        if bad:
            db.log.add(db.path, dq("db.commanalyzermatrix-row-could-not", bad=bad))
    if not ops and not links:
        return None
    of, lf = _frames(ops, links)
    return Communication(source=db.log.rel(db.path), producer="communication.json", steps=_steps_from_ops(of),
                         ops=of, links=lf, local_links=True,
                         self_local=_self_links(links, _known(parallel_groups, rank)),
                         instances=op_instances(ops),
                         label="CANN analysis.db (CommAnalyzerTime, CommAnalyzerBandwidth, CommAnalyzerMatrix)",
                         unit_note="CANN analysis.db CommAnalyzer* tables (the communication.json twins): times in "
                                   "ms, sizes in MB, bandwidth in GB/s; SDMA already includes HCCS/PCIE/SIO traffic.")


def _known(parallel_groups: dict, rank: int) -> dict[str, int]:
    known: dict[str, int] = {}
    for gid, g in (parallel_groups or {}).items():
        if g.get("group_rank") is not None:
            known[str(double_hash(gid))] = int(g["group_rank"])
        elif rank in g.get("global_ranks", []):
            known[str(double_hash(gid))] = list(g["global_ranks"]).index(rank)
    return known


def read_profiler_communication(db: Db, parallel_groups: dict, rank: int) -> Optional[Communication]:
    """COMMUNICATION_OP alone (no analysis.db): per op its span (the elapse) and, when the generation has it,
    `waitNs`; transit/sync/idle are not in this table (NaN). Steps from STEP_TIME windows."""
    if not db.has("COMMUNICATION_OP", "opName", "startNs", "endNs"):
        return None
    cols = db.columns("COMMUNICATION_OP")
    wait = "waitNs" if "waitNs" in cols else "NULL"
    grp = db.string("groupName") if "groupName" in cols else "''"
    rows = db.query(f"SELECT {db.string('opName')}, startNs, endNs, {grp}, {wait} FROM COMMUNICATION_OP "
                    "ORDER BY startNs", "COMMUNICATION_OP") or []
    if not rows:
        return None
    windows = _step_windows(db)
    ops = []
    for name, a, b, g, w in rows:
        step = next((s for s, lo, hi in windows if lo <= int(a) < hi), None) if windows else None
        group = str(double_hash(g)) if g else ""
        ops.append({"step": step, "op": str(name), "group": group, "kind": op_kind(str(name)),
                    "start_us": int(a) / 1e3, "communication_ms": (int(b) - int(a)) / NS_PER_MS, "transit_ms": math.nan,
                    "wait_ms": _num(w) / NS_PER_MS if w is not None else math.nan, "sync_ms": math.nan,
                    "idle_ms": math.nan, "sdma_mb": math.nan, "sdma_ms": math.nan, "rdma_mb": math.nan,
                    "rdma_ms": math.nan})
    of, lf = _frames(ops, [])
    return Communication(source=db.log.rel(db.path), producer="communication.json", steps=_steps_from_ops(of),
                         ops=of, links=lf, local_links=True, self_local=_known(parallel_groups, rank),
                         label="profiler DB (COMMUNICATION_OP)", instances=op_instances(ops),
                         unit_note="profiler DB COMMUNICATION_OP (no analysis.db): each operator's span in ns "
                                   "converted to ms, wait from waitNs; no transit, link or bandwidth figures.")


def _step_windows(db: Db) -> list[tuple[Optional[int], int, int]]:
    if not db.has("STEP_TIME", "id", "startNs", "endNs"):
        return []
    rows = db.query("SELECT id, startNs, endNs FROM STEP_TIME", "STEP_TIME") or []
    return [(_int(s), int(a), int(b)) for s, a, b in rows if a is not None and b is not None]


# --- operators -------------------------------------------------------------------------------------


def read_operators(db: Db) -> Optional[Operators]:
    """kernel_details.csv from the DB: TASK x COMPUTE_TASK_INFO (name, opType, taskType = accelerator core) and the
    COMMUNICATION_OP spans as HCCL kernels; per (side, core, type) and per (side, name) totals over the profiled
    window, shares as kernel_details / op_statistic give them."""
    parts = []
    if db.has("TASK", "startNs", "endNs", "globalTaskId") and db.has("COMPUTE_TASK_INFO", "globalTaskId", "name"):
        cc = db.columns("COMPUTE_TASK_INFO")
        typ = db.string("c.opType") if "opType" in cc else "''"
        core = db.string("c.taskType") if "taskType" in cc else "'AI_CORE'"
        rows = db.query(f"SELECT {db.string('c.name')}, {typ}, {core}, t.endNs - t.startNs FROM TASK t "
                        "JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId", "TASK/COMPUTE_TASK_INFO") or []
        parts.extend(rows)
    if db.has("COMMUNICATION_OP", "opName", "startNs", "endNs"):
        typ = db.string("opType") if "opType" in db.columns("COMMUNICATION_OP") else "''"
        rows = db.query(f"SELECT {db.string('opName')}, {typ}, 'HCCL', endNs - startNs FROM COMMUNICATION_OP",
                        "COMMUNICATION_OP") or []
        parts.extend(rows)
    if not parts:
        return None
    df = pd.DataFrame.from_records(parts, columns=["name", "op_type", "core", "ns"])
    df["name"] = df["name"].fillna("").astype(str).str.strip()
    df["op_type"] = df["op_type"].fillna("").astype(str).str.strip()
    missing = df["op_type"].isin([t for t in df["op_type"].unique() if type_missing(t)])
    if missing.any():  # torch_npu Level0 records no types (N/A): the type the name carries, said in data quality
        names = df.loc[missing, "name"]
        df.loc[missing, "op_type"] = names.map({n: kernel_type_from_name(n) for n in names.unique()})
        note_types_from_names(db.log, db.path)
    df["core"] = df["core"].fillna("").astype(str).str.strip()
    df["side"] = df["core"].map({c: side_of_core(c) for c in df["core"].unique()})
    df["ms"] = pd.to_numeric(df["ns"], errors="coerce") / NS_PER_MS
    df = df[df["ms"].notna()]
    by_type, detail = kernel_tables(df)
    src = db.log.rel(db.path)
    return Operators(by_type=by_type, detail=detail,
                     basis={side: "profiled window" for side in by_type["side"].unique()},
                     sources={"device": src, "kernels": src})


def kernel_tables(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """side, core, name, op_type, ms per kernel -> the by-type and per-name tables (as load_kernel_details)."""
    ms = df["ms"].to_numpy(dtype="float64")
    comm = (df["side"] == "communication").to_numpy()
    totals = {True: float(ms[comm].sum()), False: float(ms[~comm].sum())}

    def agg(keys: list[str]) -> pd.DataFrame:
        codes, uniques = pd.MultiIndex.from_frame(df[keys]).factorize()
        n = len(uniques)
        out = uniques.to_frame(index=False)
        out.columns = keys
        out["count"] = np.bincount(codes, minlength=n).astype("float64")
        out["total_ms"] = np.bincount(codes, weights=ms, minlength=n)
        lo, hi = np.full(n, np.inf), np.full(n, -np.inf)
        np.minimum.at(lo, codes, ms)
        np.maximum.at(hi, codes, ms)
        out["min_ms"], out["max_ms"] = lo, hi
        out["avg_ms"] = out["total_ms"] / out["count"]
        is_comm = (out["side"] == "communication").to_numpy()
        denom = np.where(is_comm, totals[True], totals[False])
        out["share"] = np.where(denom > 0, out["total_ms"] / np.where(denom > 0, denom, 1.0), np.nan)
        if "name" in keys:
            first = pd.Series(df["op_type"].to_numpy()).groupby(codes).first()
            out["op_type"] = first.reindex(range(n)).to_numpy()
        return out

    return agg(["side", "core", "op_type"])[list(OP_TYPE_COLUMNS)], agg(["side", "name"])[list(OP_DETAIL_COLUMNS)]


# --- memory ----------------------------------------------------------------------------------------


def read_memory(db: Db) -> Optional[Memory]:
    """memory_record.csv (MEMORY_RECORD + NPU_MEM `app` rows), operator_memory.csv (OP_MEMORY), npu_module_mem.csv
    (NPU_MODULE_MEM): bytes -> MB (2^20), ns -> ms; peaks and curve chosen as the text loader does."""
    src = db.log.rel(db.path)
    out: Optional[Memory] = None
    recs = []
    if db.has("MEMORY_RECORD", "component", "timestamp", "totalAllocated", "totalReserved"):
        recs += db.query(f"SELECT {db.string('component')}, timestamp, totalAllocated, totalReserved "
                         "FROM MEMORY_RECORD", "MEMORY_RECORD") or []
    if db.has("NPU_MEM", "type", "hbm", "timestampNs"):
        ddr = "COALESCE(ddr, 0)" if "ddr" in db.columns("NPU_MEM") else "0"
        rows = db.query(f"SELECT {db.string('type')}, timestampNs, NULL, hbm + {ddr} FROM NPU_MEM", "NPU_MEM") or []
        recs += [("APP", *r[1:]) for r in rows if str(r[0]).lower() == "app"]
    if recs:
        df = pd.DataFrame.from_records(recs, columns=["comp", "ts", "alloc", "res"])
        comp = df["comp"].fillna("").astype(str).str.strip()
        ts = pd.to_numeric(df["ts"], errors="coerce") / 1e3  # µs, as the CSV
        alloc = pd.to_numeric(df["alloc"], errors="coerce") / MB
        res = pd.to_numeric(df["res"], errors="coerce") / MB
        out = Memory(source=src, curve_x="ms since the first sample", sources=[src])
        t0 = ts.min()
        app = comp == "APP"
        alloc_comp = next((c for c in ("PTA+GE", "PTA", "GE", "MindSpore", "MS") if (comp == c).any()), None)
        if app.any() and res[app].notna().any():
            curve = pd.DataFrame({"x": (ts[app] - t0) / 1e3, "used_mb": res[app]})
            out.peak_mb = float(res[app].max())
        elif alloc_comp is not None:
            sel = comp == alloc_comp
            curve = pd.DataFrame({"x": (ts[sel] - t0) / 1e3, "used_mb": res[sel]})
            out.peak_mb = float(res[sel].max())
        else:
            curve = pd.DataFrame({"x": (ts - t0) / 1e3, "used_mb": res})
            out.peak_mb = float(res.max()) if res.notna().any() else None
        if alloc_comp is not None:
            sel = comp == alloc_comp
            out.allocated_peak_mb = float(alloc[sel].max()) if alloc[sel].notna().any() else None
            allocated = pd.DataFrame({"x": (ts[sel] - t0) / 1e3, "allocated_mb": alloc[sel]})
            curve = pd.merge_asof(curve.dropna().sort_values("x"), allocated.dropna().sort_values("x"),
                                  on="x", direction="backward")
        out.curve = _downsample(curve.dropna(subset=["used_mb"]).sort_values("x"), "used_mb")
    if db.has("OP_MEMORY", "name", "size", "duration"):
        rows = db.query(f"SELECT {db.string('name')}, size, duration FROM OP_MEMORY", "OP_MEMORY") or []
        if rows:
            df = pd.DataFrame.from_records(rows, columns=["name", "size", "dur"])
            top = pd.DataFrame({"name": df["name"].fillna("").astype(str).str.strip(),
                                "size_mb": pd.to_numeric(df["size"], errors="coerce") / MB,
                                "duration_ms": pd.to_numeric(df["dur"], errors="coerce") / NS_PER_MS, "detail": ""})
            top = top.dropna(subset=["size_mb"]).sort_values("size_mb", ascending=False, kind="stable")
            if out is None:
                out = Memory(source=src)
            out.top = top.head(TOP_ALLOCATIONS).reset_index(drop=True)
            out.sources.append(src)
    if db.has("NPU_MODULE_MEM", "moduleId", "totalReserved"):
        name = ("(SELECT name FROM ENUM_MODULE WHERE id = moduleId)" if db.has("ENUM_MODULE", "id", "name")
                else "CAST(moduleId AS TEXT)")
        rows = db.query(f"SELECT {name}, MAX(totalReserved) FROM NPU_MODULE_MEM GROUP BY moduleId",
                        "NPU_MODULE_MEM") or []
        if rows:
            comp = pd.DataFrame({"component": [str(r[0]).strip() for r in rows],
                                 "peak_mb": pd.to_numeric(pd.Series([r[1] for r in rows]), errors="coerce") / MB})
            comp = comp.groupby("component", as_index=False)["peak_mb"].max().sort_values("peak_mb", ascending=False)
            if out is None:
                out = Memory(source=src)
            out.components = comp.reset_index(drop=True)
            out.sources.append(src)
    return out


# --- one rank --------------------------------------------------------------------------------------


def profiler_dbs(rf: "RankFiles") -> list[Path]:
    return list(rf.files.get("profiler_db", []))


def analysis_dbs(rf: "RankFiles") -> list[Path]:
    return [p for n in ANALYSIS_DB_NAMES for p in rf.files.get(n, [])]


def load_db_rank(rf: "RankFiles", data: RankData, log: IssueLog, text_step_trace: bool) -> None:
    """Fill what the text export did not give from the rank's DB files, and say which DB was read for what.

    `text_step_trace`: the step trace came from step_trace_time.csv (so analysis.db's twin is not needed)."""
    prof, anal = profiler_dbs(rf), analysis_dbs(rf)
    if not prof and not anal:
        return
    used: dict[Path, list[str]] = {}
    info = data.info
    main = _pick_profiler_db(prof, info.rank)
    pdb = Db(main, log) if main is not None else None
    adb = Db(anal[0], log) if anal else None
    try:
        if pdb is not None:
            got = read_metadata(pdb, data)
            if got:
                used.setdefault(main, []).append("rank facts (" + ", ".join(got) + ")")
        if data.step_trace is None and adb is not None:
            from reportgen.loaders.step_trace import load_db_step_trace
            data.step_trace = load_db_step_trace(anal[0], log)
            if data.step_trace is not None:
                used.setdefault(anal[0], []).append("step trace (StepTraceTime)")
        if data.step_trace is None and pdb is not None:
            data.step_trace = read_step_trace(pdb)
            if data.step_trace is not None:
                used.setdefault(main, []).append("step trace (OVERLAP_ANALYSIS in STEP_TIME windows)")
        if data.step_trace is not None and info.device is None:
            info.device = data.step_trace.device
        if data.communication is None and adb is not None:
            data.communication = read_analysis_communication(adb, info.parallel_groups, info.rank)
            if data.communication is not None:
                used.setdefault(anal[0], []).append("communication (CommAnalyzerTime, CommAnalyzerBandwidth, "
                                                    "CommAnalyzerMatrix)")
        if data.communication is None and pdb is not None:
            data.communication = read_profiler_communication(pdb, info.parallel_groups, info.rank)
            if data.communication is not None:
                used.setdefault(main, []).append("communication (COMMUNICATION_OP)")
        if data.operators is None and pdb is not None:
            data.operators = read_operators(pdb)
            if data.operators is not None:
                used.setdefault(main, []).append("operators (TASK, COMPUTE_TASK_INFO, COMMUNICATION_OP)")
        if data.memory is None and pdb is not None:
            data.memory = read_memory(pdb)
            if data.memory is not None:
                used.setdefault(main, []).append("memory (MEMORY_RECORD, NPU_MEM, OP_MEMORY, NPU_MODULE_MEM)")
        if data.op_flops is None and pdb is not None:
            data.op_flops = read_gemm_flops(pdb)
            if data.op_flops is not None:
                used.setdefault(main, []).append("GEMM shapes (COMPUTE_TASK_INFO)")
        if pdb is not None:
            note = infer_world_group(pdb, data)
            if note:
                used.setdefault(main, []).append("parallel layout (inferred)")
                log.add(main, note, "info")
    finally:
        for d in (pdb, adb):
            if d is not None:
                d.close()
    for p, what in used.items():
        log.add(p, dq("db.read-db-export", what="; ".join(what)), "info")
    for p in [*prof, *anal]:
        if p in used:
            continue
        if p == main or p in anal[:1]:
            why = ("the text export of the same data was read instead" if (text_step_trace or data.communication
                   or data.operators or data.memory) else "it held none of the tables read")
        else:
            why = f"a second database of this family in the rank folder; {log.rel(main or anal[0])} was read"
        log.add(p, dq("db.not-read", why=why), "info")


def _pick_profiler_db(paths: list[Path], rank: int) -> Optional[Path]:
    """The framework's own DB for this rank first (ascend_*_profiler_{rank}.db), then msprof's."""
    def key(p: Path) -> tuple:
        m = re.search(r"_(\d+)\.db$", p.name)
        own = p.name.startswith("ascend_") and (m is None or int(m.group(1)) == rank)
        return (not own, not p.name.startswith("ascend_"), p.name)
    return sorted(paths, key=key)[0] if paths else None
