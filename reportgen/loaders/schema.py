"""The door: per file family, each field a loader reads, its type and its valid range, in one table.

Over 500 lines: the door is one table of every family's fields and the checks that read it, kept whole so a
family's rules are read in one place.

`SCHEMAS` says, for every file family whose values feed a rank's numbers, what each field is (`Field.kind`):

* `duration`, `size`, `bandwidth`: a finite number >= 0;
* `count`: a whole number >= 0; `id`: a whole number; `percent`: a number from 0 to 100;
* `timestamp`: a number >= 0 (a clock reading);
* `number`: any finite number.

A value outside its field's range is dropped with its row (`on_bad="drop"`) or read as missing (`"missing"`), and
*named*: `Door` collects the problems of one file and writes one data-quality entry per file and problem, with
the count of rows and an example (`line 7, 'Count': '-3'`). A family whose table must hold rows (`rows`: what
the rank loses without them) names a header-only table, an empty list, or a file whose every row was rejected;
a family with a `key` names exact duplicate rows (counted once). The readers in `tables` look the family up by
file name (`schema_for`), so no loader repeats these checks; the JSON loaders call `Door.number` per value.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from itertools import compress, repeat
from pathlib import Path, PurePath
from typing import Any, Optional

import numpy as np

from reportgen.dataquality import Coded, dq
from reportgen.loaders.trace_typed import TYPED_EVENTS
from reportgen.model import DataIssue
from reportgen.numbers import MAX_ABS_NUMBER, to_float


@dataclass(frozen=True)
class Field:
    kind: str  # duration | size | bandwidth | count | id | percent | timestamp | number
    on_bad: str = "drop"  # drop (the row) | missing (the value read as missing)
    unique: bool = False  # a step number: two rows with the same value are named (both kept)
    na: tuple[str, ...] = ()  # the writer's own "no value" mark for this field (not named): "N/A"


@dataclass(frozen=True)
class Schema:
    family: str  # as the entries name it
    fields: dict[str, Field]
    rows: str = ""  # what the rank loses when the table holds no row ("" : an empty table is normal)
    key: tuple[str, ...] = ()  # columns that identify a row: exact duplicates are named and counted once
    dedupe: bool = False  # exact duplicate rows are also dropped (else only named)


STEP = Field("rank", "missing", unique=True)  # a step number: a whole number >= 0
N_GE0 = Field("size")  # a quantity >= 0 (FLOPs, operations)
D, S, B, C, I, P, T, N = (Field(k) for k in ("duration", "size", "bandwidth", "count", "id", "percent", "timestamp",
                                               "number"))
DM, SM, BM, CM, PM, TM, NM = (Field(k, "missing") for k in ("duration", "size", "bandwidth", "count", "percent",
                                                            "timestamp", "number"))

# File families, matched by name (`schema_for`): (pattern, schema). One place per family.
SCHEMAS: list[tuple[re.Pattern, Schema]] = [
    (re.compile(r"^kernel_details\.csv$"), Schema("kernel_details.csv", {
        "Duration(us)": D, "Start Time(us)": TM, "Wait Time(us)": DM}, rows="operators")),
    (re.compile(r"^op_statistic\.csv$"), Schema("op_statistic.csv", {
        "Count": C, "Total Time(us)": D, "Min Time(us)": D, "Avg Time(us)": D, "Max Time(us)": D,
        "Ratio(%)": PM}, rows="operator types", key=("OP Type", "Core Type"), dedupe=True)),
    (re.compile(r"^operator_memory\.csv$"), Schema("operator_memory.csv", {
        "Size(KB)": S, "Duration(us)": DM, "Allocation Time(us)": TM, "Release Time(us)": TM},
        rows="largest allocations", key=("Name", "Allocation Time(us)"), dedupe=True)),
    (re.compile(r"^memory_record\.csv$"), Schema("memory_record.csv", {
        "Timestamp(us)": T, "Total Allocated(MB)": SM, "Total Reserved(MB)": S, "Total Active(MB)": SM},
        rows="memory curve")),
    (re.compile(r"^npu_module_mem\.csv$"), Schema("npu_module_mem.csv", {
        "Total Reserved(MB)": S, "Timestamp(us)": TM}, rows="memory per module")),
    (re.compile(r"^step_trace_time\.csv$"), Schema("step_trace_time.csv", {
        # the phases: null marks named here; a negative phase drops its row in the loader (load_modern_step_trace)
        "Step": STEP, "Computing": NM, "Communication(Not Overlapped)": NM, "Overlapped": NM, "Communication": NM,
        "Free": NM, "Stage": NM, "Bubble": NM, "Communication(Not Overlapped and Exclude Receive)": NM,
        "Preparing": Field("number", "missing", na=("N/A",))},  # torch_npu writes N/A when it cannot tell
        rows="step phases")),
    (re.compile(r"^hccl_raw_\d+\.csv$"), Schema("hccl_raw", {
        "step_num": STEP, "communication_cost": D, "wait_cost": D}, rows="communication steps")),
    (re.compile(r"^minddata_pipeline_raw_\d+\.csv$"), Schema("minddata_pipeline_raw", {
        "op_id": Field("rank", "missing"), "parent_id": Field("id", "missing"), "num_workers": CM,
        "output_queue_average_size": SM, "output_queue_length": CM, "output_queue_usage_rate": PM},
        rows="data pipeline operators")),
    (re.compile(r"^aicore_intermediate_\d+_detail\.csv$"), Schema("aicore_intermediate_detail", {
        "execution_time": D, "task_duration": D, "avg_execution_time": D, "execution_frequency": C},
        rows="AI Core operators")),
    (re.compile(r"^aicore_intermediate_\d+_type\.csv$"), Schema("aicore_intermediate_type", {
        "execution_time": D, "total_time": D, "execution_frequency": C, "percent": PM},
        rows="AI Core operator types")),
    (re.compile(r"^aicpu_intermediate_\d+\.csv$"), Schema("aicpu_intermediate", {
        "total_time": D, "dispatch_time": DM, "execution_time": DM, "run_start": TM, "run_end": TM})),
    (re.compile(r"^cpu_op_type_info_\d+\.csv$"), Schema("cpu_op_type_info", {
        "type_occurrences": C, "execution_frequency": C, "total_compute_time": D, "total_time": D,
        "avg_time(ms)": D, "avg_time": D, "percent": PM, "total_time_proportion": PM}, rows="host CPU operator types")),
    (re.compile(r"^cpu_op_detail_info_\d+\.csv$"), Schema("cpu_op_detail_info", {
        "op_occurrences": C, "op_total_time(ms)": D, "op_avg_time(ms)": D, "total_proportion": PM},
        rows="host CPU operators")),
    # MindInsight's / MindSpore GPU's overlap per step (loaders/overlap.py), ms
    (re.compile(r"^(ascend|gpu)_cluster_analyse_.+\.csv$"), Schema("cluster_analyse", {
        "computation_time": D, "computation": D, "communication_alone_time": D, "stage_time": D,
        "receive_alone_time": D, "collective_communication_time": D}, rows="overlap per step")),
    # MindSpore GPU (loaders/gpu.py): µs, counts; proportions are fractions (within the percent range)
    (re.compile(r"^gpu_activity_data_\d+\.csv$"), Schema("gpu_activity_data", {
        "occurrences": C, "total_duration(us)": D, "avg_duration(us)": DM, "max_duration(us)": DM,
        "min_duration(us)": DM}, rows="GPU kernels")),
    (re.compile(r"^gpu_op_detail_info_\d+\.csv$"), Schema("gpu_op_detail_info", {
        "op_occurrences": C, "op_total_time(us)": D, "op_avg_time(us)": DM, "total_proportion": PM,
        "proportion": PM, "cuda_activity_cost_time(us)": D, "cuda_activity_call_count": CM}, rows="GPU operators")),
    (re.compile(r"^gpu_op_type_info_\d+\.csv$"), Schema("gpu_op_type_info", {
        "type_occurrences": C, "total_time(us)": D, "total_proportion": PM, "proportion": PM, "avg_time(us)": DM},
        rows="GPU operator types")),
    (re.compile(r"^step_trace_raw_\d+_detail_time\.csv$"), Schema("step_trace_raw", {
        "step_num": STEP, "iteration_interval": D, "fp_and_bp": D, "tail": D},
        rows="step phases")),
]

# JSON families: the fields (keys) read and their kinds; `required` keys missing from an entry are named.
JSON_SCHEMAS: dict[str, dict[str, Field]] = {
    "communication.json": {
        "Elapse Time(ms)": D, "Transit Time(ms)": D, "Wait Time(ms)": D, "Synchronization Time(ms)": D,
        "Idle Time(ms)": D, "Start Timestamp(us)": T, "Transit Size(MB)": S, "Bandwidth(GB/s)": B},
    "communication_matrix.json": {"Transit Size(MB)": S, "Transit Time(ms)": D, "Bandwidth(GB/s)": B},
    "flops_summary": {"FLOPs": N_GE0, "FLOPS": N_GE0, "FLOPS_Utilization": P, "cube_FLOPs": N_GE0,
                      "vec_FLOPs": N_GE0, "cube_FLOPS": N_GE0, "vec_FLOPS": N_GE0},
    "memory_usage_summary": {"peak_mem": S, "capacity": S, "static_mem": S},
    "profiler_metadata.json": {"world_size": Field("count"), "rank": Field("rank"), "group_rank": Field("rank"),
                               "global_ranks": Field("rank"), "rank_id": Field("rank")},
    "profiler_info": {"rank_id": Field("rank"), "rank_size": Field("count"), "stage_num": Field("count")},
}
JSON_FAMILIES = [(re.compile(r"^flops_summary_\d+\.json$"), "flops_summary"),
                 (re.compile(r"^memory_usage_summary_\d+\.json$"), "memory_usage_summary"),
                 (re.compile(r"^memory_usage_details_\d+\.json$"), "memory_usage_details"),
                 (re.compile(r"^communication\.json$"), "communication.json"),
                 (re.compile(r"^profiler_info(_\d+)?\.json$"), "profiler_info"),
                 (re.compile(r"^communication_matrix\.json$"), "communication_matrix.json")]


def json_family(path: Path) -> str:
    name = Path(path).name
    return next((f for pat, f in JSON_FAMILIES if pat.match(name)), name)


JSON_REQUIRED: dict[str, tuple[str, ...]] = {
    "communication.json": ("Elapse Time(ms)", "Transit Time(ms)", "Wait Time(ms)", "Synchronization Time(ms)",
                           "Idle Time(ms)"),
    "communication_matrix.json": ("Transit Size(MB)", "Transit Time(ms)", "Bandwidth(GB/s)"),
}

_PROBLEM = {"rank": "not a whole number >= 0", "index": "not a whole number >= 0", "link": "not a whole number >= -1", "duration": "a negative duration", "size": "a negative size", "bandwidth": "a negative bandwidth",
            "count": "not a whole number >= 0", "id": "not a whole number", "percent": "outside 0-100",
            "timestamp": "a negative timestamp", "number": "not a finite number"}


def schema_for(path: Path) -> Optional[Schema]:
    name = path.name if isinstance(path, PurePath) else Path(path).name
    if name in _SCHEMA_OF:
        return _SCHEMA_OF[name]
    got = next((sch for pat, sch in SCHEMAS if pat.match(name)), None)
    if len(_SCHEMA_OF) > 4096:
        _SCHEMA_OF.clear()
    _SCHEMA_OF[name] = got
    return got


_SCHEMA_OF: dict[str, Optional[Schema]] = {}  # a file name -> its family's schema


def bad_mask(kind: str, v: np.ndarray) -> np.ndarray:
    """True where a (parsed, NaN for missing) value breaks its kind's range; missing values are not judged here."""
    if _none_bad(kind, v):  # the usual column: no mask to build
        return np.zeros(len(v), dtype=bool)
    ok = np.isnan(v)
    fin = ~ok
    with np.errstate(invalid="ignore"):
        if kind in ("rank", "index"):
            bad = fin & ((v < 0) | (np.floor(v) != v))
        elif kind in ("duration", "size", "bandwidth", "timestamp"):
            bad = fin & (v < 0)
        elif kind == "count":
            bad = fin & ((v < 0) | (np.floor(v) != v))
        elif kind == "id":
            bad = fin & (np.floor(v) != v)
        elif kind == "link":
            bad = fin & ((v < -1) | (np.floor(v) != v))
        elif kind == "percent":
            bad = fin & ((v < 0) | (v > 100 + 1e-6))
        else:
            bad = fin & ~np.isfinite(v)
    return bad


_AT_LEAST = {"duration": 0.0, "size": 0.0, "bandwidth": 0.0, "timestamp": 0.0, "count": 0.0, "rank": 0.0,
             "index": 0.0, "percent": 0.0, "link": -1.0, "id": -math.inf}
_WHOLE = frozenset(("count", "rank", "index", "link", "id"))


def _none_bad(kind: str, v: np.ndarray) -> bool:
    """True when `bad_mask` would find nothing, told from the extremes of the values that are not missing (NaN-
    ignoring min and max, no warning) and, for whole-number kinds, one comparison with their floor; False when
    there may be a bad value (then `bad_mask` builds the mask)."""
    if not len(v) or v.dtype.kind != "f":
        return False
    lo, hi = float(np.fmin.reduce(v)), float(np.fmax.reduce(v))
    if lo != lo:
        return True  # every value missing: none judged
    if kind not in _AT_LEAST:  # a number: finite
        return -math.inf < lo and hi < math.inf
    if not lo >= _AT_LEAST[kind] or (kind == "percent" and not hi <= 100 + 1e-6):
        return False
    if kind not in _WHOLE:
        return True
    # whole numbers: no value above its floor (a NaN drops out of the NaN-ignoring max; an infinity: the full mask)
    return -math.inf < lo and hi < math.inf and not float(np.fmax.reduce(v - np.floor(v))) > 0


def value_problem(kind: str, v: Any) -> Optional[str]:
    """Why one JSON value breaks its kind (None: fine or missing). Text, booleans, lists and objects are not
    numbers; a number written as text is read, and named (schema drift)."""
    if v is None:
        return None
    if isinstance(v, bool) or isinstance(v, (dict, list)):
        return f"a {type(v).__name__} where a number belongs"
    if isinstance(v, str):
        f = to_float(v)
        if math.isnan(f):
            return "text where a number belongs"
        return None if _bad_number(kind, f) is None else _bad_number(kind, f)
    if isinstance(v, (int, float)):
        return _bad_number(kind, float(v))
    return "not a number"


def _bad_number(kind: str, f: float) -> Optional[str]:
    """`bad_mask` for one value (scalar arithmetic: called per JSON value)."""
    if not math.isfinite(f) or abs(f) > MAX_ABS_NUMBER:
        return "not a finite number"
    if kind in ("duration", "size", "bandwidth", "timestamp"):
        bad = f < 0
    elif kind in ("count", "rank", "index"):
        bad = f < 0 or not f.is_integer()
    elif kind == "link":  # an id pairing two events; -1: the writer's "no partner"
        bad = f < -1 or not f.is_integer()
    elif kind == "id":
        bad = not f.is_integer()
    elif kind == "percent":
        bad = f < 0 or f > 100 + 1e-6
    else:
        bad = False
    return _PROBLEM[kind] if bad else None


@dataclass
class Door:
    """The problems found in one file, one entry per problem when `close`d (count of rows, an example).

    A problem is noted as `dq(code, **params)` whose template also takes `{n}` (how many) and `{example}` (the
    first one): `close` puts both in ("{n} value(s) read as missing (...); e.g. {example}"). The same code with
    the same parameters is one entry."""

    log: Any  # IssueLog
    path: Path
    what: str = ""  # the table (of a DB file) the values come from: written into each example
    counts: dict[Coded, list] = field(default_factory=dict)  # problem -> [count, example, severity, kind]

    def note(self, problem: Coded, example: str, severity: str = "warning", kind: str = "impossible value") -> None:
        example = f"{self.what} {example}" if self.what else example
        c = self.counts.setdefault(problem, [0, example, severity, kind])
        c[0] += 1

    def note_many(self, problem: Coded, n: int, example: str, severity: str = "warning",
                  kind: str = "impossible value") -> None:
        if n:
            example = f"{self.what} {example}" if self.what else example
            c = self.counts.setdefault(problem, [0, example, severity, kind])
            c[0] += n

    def number(self, kind: str, value: Any, where: str, on_bad: str = "missing") -> float:
        """A JSON value read as a float: NaN when missing; a value breaking `kind` is named and read as missing
        (`on_bad="missing"`) or kept (`"keep"`)."""
        if value is None:
            return math.nan
        why = value_problem(kind, value)
        if why is None:  # (a number written as text is read as the number: the same value, nothing lost)
            return to_float(value)
        self.note(dq("schema.value-read-as-missing" if on_bad == "missing" else "schema.value-kept-as-written", why=why),
                  f"{where}: {str(value)[:40]!r}", kind="schema drift" if "where a" in why else "impossible value")
        if on_bad == "keep" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        return math.nan

    def field(self, obj: Any, key: str, where: str, family: str, default: Any = None) -> float:
        """`obj[key]` read by the JSON family's schema (`JSON_SCHEMAS`): a required key that is missing is named
        (schema drift) and read as missing; a value that breaks the field's kind is named and read as missing."""
        f = JSON_SCHEMAS.get(family, {}).get(key, N_GE0)
        if not isinstance(obj, dict) or key not in obj:
            if key in JSON_REQUIRED.get(family, ()) and default is None:
                self.note(dq("schema.entry-without-key", key=repr(key)), where, "warning",
                          "schema drift")
            return math.nan if default is None else float(default)
        if obj[key] is None:
            self.note(dq("schema.value-null"), f"{where}, {key!r}: null",
                      "warning", "impossible value")
            return math.nan
        return self.number(f.kind, obj[key], f"{where}, {key!r}")

    def close(self) -> None:
        for problem, (n, example, severity, kind) in self.counts.items():
            self.log.add(self.path, dq(problem.code, n=n, **problem.params, example=example), severity, kind)
        self.counts.clear()




# --- the door for tables (called by the CSV readers in `tables`) ------------------------------------------------


def _parse(cells) -> np.ndarray:
    out = np.full(len(cells), math.nan)
    for i, c in enumerate(cells):
        out[i] = to_float(c) if c is not None else math.nan
    return out


def _plain_columns(names: list[str], ix: dict[str, int], rows: list, width: int) -> dict[str, np.ndarray]:
    """{column: its values} for the columns of `names` whose every cell `float` reads as a finite number within
    MAX_ABS_NUMBER (what `_parse` reads them as: `to_float` is `float` for those), when every row has every cell."""
    if not rows or any(len(cells) < width for _, cells in rows):
        return {}
    out = {}
    for c in names:
        i = ix[c]
        try:
            vals = [float(cells[i]) for _, cells in rows]
        except (ValueError, TypeError, OverflowError):
            continue
        if all(map(math.isfinite, vals)) and max(map(abs, vals)) <= MAX_ABS_NUMBER:
            out[c] = np.array(vals, dtype=np.float64)
    return out


def _judge_columns(schema: Schema, columns: dict[str, np.ndarray], door: Door, line_of, n: int,
                   text: Optional[dict[str, np.ndarray]] = None) -> tuple[np.ndarray, dict]:
    """Rows to drop (mask) and, per column, the rows whose value is read as missing; each problem noted. `text`:
    per field, the rows whose cell is a word where a number belongs (when the reader kept the cells' text)."""
    drop = np.zeros(n, dtype=bool)
    missing: dict[str, np.ndarray] = {}
    for name, f in schema.fields.items():
        if name not in columns:
            continue
        v = columns[name]
        if text is not None and name in text and text[name].any():
            # a number column holding words (not empty, not a null spelling: the writers leave those on rows with no
            # value -- operator_memory's unreleased blocks, the pipeline's root operator): read as missing, named
            i = int(np.flatnonzero(text[name])[0])
            door.note_many(dq("schema.text-in-number-column", name=repr(name)),
                           int(text[name].sum()), f"line {line_of(i)}", "warning", "schema drift")
        if f.unique:
            ok = v[~np.isnan(v)]
            vals, counts = np.unique(ok, return_counts=True) if len(set(ok.tolist())) < len(ok) else (ok, ok[:0])
            if (counts > 1).any():
                first = vals[counts > 1][0]
                door.note_many(dq("schema.step-repeated", name=repr(name)),
                               int((counts[counts > 1] - 1).sum()),
                               f"{name!r} {_fmt(first)} on {int(counts[counts > 1][0])} rows", "warning", "conflict")
        if f.on_bad == "drop" and n:
            nan = np.isnan(v)
            if nan.any():  # an essential field left empty or written as a null mark: the row is dropped
                i = int(np.flatnonzero(nan)[0])
                door.note_many(dq("schema.row-without-value", name=repr(name)),
                               int(nan.sum()), f"line {line_of(i)}", "warning", "impossible value")
                drop |= nan
        bad = bad_mask(f.kind, v)
        if not bad.any():
            continue
        i = int(np.flatnonzero(bad)[0])
        code = "schema.rows-dropped-bad-value" if f.on_bad == "drop" else "schema.values-missing-bad-value"
        door.note_many(dq(code, name=repr(name), why=_PROBLEM[f.kind]), int(bad.sum()),
                       f"line {line_of(i)}, {name!r}: {_fmt(v[i])}")
        if f.on_bad == "drop":
            drop |= bad
        else:
            missing[name] = bad
    return drop, missing


_NULL_SPELLINGS = frozenset(("", "-", "--", "NULL", "NONE", "NAN", "N/A", "NA", "NIL"))


def _words(cells: list, parsed: np.ndarray) -> np.ndarray:
    """Rows whose cell is a word where a number belongs: not empty, not a null spelling, not a number."""
    return np.array([isinstance(c, str) and math.isnan(p) and c.strip().upper() not in _NULL_SPELLINGS
                     for c, p in zip(cells, parsed)], dtype=bool)


def _fmt(x: float) -> str:
    return repr(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x))


def whose(log: Any) -> str:
    rank = getattr(log, "rank", None)
    return f"rank {rank}'s" if rank is not None else "the rank's"


def _empty(schema: Schema, door: Door, before: int, after: int) -> None:
    if not schema.rows or after:
        return
    whose_ = whose(door.log)
    if before == 0:
        door.log.add(door.path, dq("schema.header-only", schema=schema.family, whose=whose_, schema2=schema.rows),
                     "warning", "empty table")
    else:
        door.log.add(door.path, dq("schema.every-row-rejected", schema=schema.family, before=before, whose=whose_,
                                   schema2=schema.rows), "warning", "empty table")


MAX_CELL_CHARS = 1024 * 1024  # a table cell longer than this is named (a huge field; real hccl_raw cells reach 66 K)


def _huge_cells(log: Any, path: Path, found: Optional[tuple[str, int]]) -> None:
    if found is not None:
        log.add(path, dq("schema.huge-cell", found=format(found[1], ","), max_cell_chars=format(MAX_CELL_CHARS, ","),
                         found2=repr(found[0][:60])), "warning", "schema drift")


def _record_header(log: Any, path: Path, header) -> None:
    """A table's header as its "shape" (`compare_shapes`): a column that one rank's copy lacks, or has under
    another name (upper case, a suffix), while every other rank's copy has it, is named as schema drift."""
    shapes = getattr(log, "shapes", None)
    if shapes is None or not header:
        return
    try:
        rel = log.rel(path)
    except Exception:  # noqa: BLE001 - a log without a run root: nothing to compare against
        return
    key = tuple(str(h) for h in header)
    got = _HEADER_SHAPES.get(key)
    if got is None:
        got = frozenset("*" if _DYNAMIC.search(h) else f"column {h.strip()[:80]}" for h in key)
        if len(_HEADER_SHAPES) > 1024:
            _HEADER_SHAPES.clear()
        _HEADER_SHAPES[key] = got
    shapes[rel] = got


_HEADER_SHAPES: dict[tuple, frozenset] = {}  # a header -> its shape (every rank's copy of a file has the same)


def door_typed(path: Path, log: Any, cols: dict, data: Optional[bytes] = None) -> dict:
    """`read_typed`'s columns through the family's schema (rows dropped from every column, values set NaN).
    `data`: the file's bytes when the reader has them (the duplicate check reads them instead of the file)."""
    if cols:
        _record_header(log, path, list(cols))
        _huge_cells(log, path, next(((k, len(u)) for k, v in cols.items() if not isinstance(v, np.ndarray)
                                     for u in v.uniques if isinstance(u, str) and len(u) > MAX_CELL_CHARS), None))
    schema = schema_for(path)
    if schema is None or cols is None:
        return cols
    door = Door(log, path)
    arrays = {k: v for k, v in cols.items() if isinstance(v, np.ndarray)}
    n = len(next(iter(arrays.values()))) if arrays else (len(next(iter(cols.values())).codes) if cols else 0)
    drop, missing = _judge_columns(schema, arrays, door, lambda i: f"{i + 2} (about)", n)
    drop |= _dup_mask(path, log, n, data)
    out = dict(cols)
    for k, m in missing.items():
        a = out[k].copy()
        a[m] = math.nan
        out[k] = a
    if drop.any():
        keep = ~drop
        for k, v in out.items():
            out[k] = v[keep] if isinstance(v, np.ndarray) else type(v)(v.codes[keep], v.uniques)
    door.close()
    after = n - int(drop.sum())
    _empty(schema, door, n, after)
    return out


_NULL_MARKS = frozenset(("NULL", "NONE", "NAN", "N/A", "NA", "NIL"))


def _null_marks(schema: Schema, door: Door, cells_of) -> None:
    """Name cells of the schema's fields written as a null mark (`null`, `None`, `N/A`): read as missing."""
    for name, f in schema.fields.items():
        cells = cells_of(name)
        if cells is None:
            continue
        marks = _NULL_MARKS - {m.upper() for m in f.na}
        hits = [i for i, c in enumerate(cells) if isinstance(c, str) and c.strip().upper() in marks]
        if hits:
            door.note_many(dq("schema.null-mark", name=repr(name)), len(hits),
                           f"data row {hits[0] + 1}: {cells[hits[0]].strip()[:20]!r}", "warning", "impossible value")


def door_frame(path: Path, log: Any, df: Any) -> Any:
    """`read_frame`'s frame of strings through the family's schema."""
    if df is not None:
        _record_header(log, path, [str(c) for c in df.columns])
    if df is not None and len(df):
        for c in df.columns:
            if df[c].dtype == object or str(df[c].dtype).startswith("str"):
                n = df[c].astype(str).str.len().max()
                if n > MAX_CELL_CHARS:
                    _huge_cells(log, path, (str(c), int(n)))
                    break
    schema = schema_for(path)
    if schema is None or df is None:
        return df
    import pandas as pd

    door = Door(log, path)
    for c, f in schema.fields.items():  # (vectorised: these frames can hold millions of rows)
        if c in df.columns:
            marks = df[c].astype(str).str.strip().str.upper().isin(_NULL_MARKS - {m.upper() for m in f.na}).to_numpy()
            if marks.any():
                i = int(np.flatnonzero(marks)[0])
                door.note_many(dq("schema.null-mark", name=repr(c)), int(marks.sum()),
                               f"data row {i + 1}: {str(df[c].iloc[i]).strip()[:20]!r}", "warning",
                               "impossible value")
    arrays = {c: pd.to_numeric(df[c].astype(str).str.strip(), errors="coerce").to_numpy(dtype="float64")
              for c in schema.fields if c in df.columns}
    text = {c: _words(df[c].astype(str).tolist(), arrays[c]) for c in arrays}
    n = len(df)
    drop, missing = _judge_columns(schema, arrays, door, lambda i: f"{i + 2} (about)", n, text)
    drop |= _dup_mask(path, log, n)
    if missing:
        df = df.copy()
        for k, m in missing.items():
            df.loc[m, k] = ""
    if drop.any():
        df = df[~drop].reset_index(drop=True)
    door.close()
    _empty(schema, door, n, len(df))
    return df


def door_rows(path: Path, log: Any, header: list[str], rows: list) -> list:
    """`read_csv_rows`' (line, cells) through the family's schema."""
    _record_header(log, path, header)
    _huge_cells(log, path, next(((header[j] if j < len(header) else str(j), len(c)) for _, cells in rows
                                 for j, c in enumerate(cells) if len(c) > MAX_CELL_CHARS), None))
    schema = schema_for(path)
    if schema is None:
        return rows
    door = Door(log, path)
    ix = {h: i for i, h in enumerate(header)}
    # a column whose every cell is a finite number (the usual one) holds no null mark and no word: read at once
    plain = _plain_columns([c for c in schema.fields if c in ix], ix, rows, len(header))
    _null_marks(schema, door, lambda c: [cells[ix[c]] if ix[c] < len(cells) else "" for _, cells in rows]
                if c in ix and c not in plain else None)
    arrays = {c: plain[c] if c in plain else _parse([cells[ix[c]] if ix[c] < len(cells) else None for _, cells in rows])
              for c in schema.fields if c in ix}
    text = {c: _words([cells[ix[c]] if ix[c] < len(cells) else "" for _, cells in rows], arrays[c])
            for c in arrays if c not in plain}
    n = len(rows)
    drop, missing = _judge_columns(schema, arrays, door, lambda i: rows[i][0], n, text)
    drop |= _dup_mask(path, log, n)
    out = []
    for i, (line, cells) in enumerate(rows):
        if drop[i] if len(drop) else False:
            continue
        if any(m[i] for m in missing.values()):
            cells = list(cells)
            for k, m in missing.items():
                if m[i]:
                    cells[ix[k]] = ""
        out.append((line, cells))
    door.close()
    _empty(schema, door, n, len(out))
    return out


def door_duplicates(path: Path, log: Any, data: Optional[bytes] = None) -> tuple[Optional[set[int]], int]:
    """Exact duplicate data lines of a keyed family's file (the whole line, every column), named; returns the
    0-based data-row indices to drop when the family drops them (None: nothing to drop). `data`: the file's bytes
    as a reader read them (else the file is read)."""
    schema = schema_for(path)
    if schema is None or not schema.key:
        return None, -1
    if data is None:
        from reportgen.loaders.files import open_file

        try:
            with open_file(path, "rb") as f:
                data = f.read(256 * 1024 * 1024 + 1)
        except OSError:
            return None, -1
    if len(data) > 256 * 1024 * 1024:
        return None, -1
    lines = [x.strip() for x in data.splitlines()[1:]]
    lines = [x for x in lines if x and x.strip(b", \t")]
    seen: set[bytes] = set()
    dups: list[int] = []
    for i, x in enumerate(lines):
        if x in seen:
            dups.append(i)
        else:
            seen.add(x)
    if not dups:
        return None, len(lines)
    log.add(path, dq("schema.duplicate-rows-counted-once" if schema.dedupe else "schema.duplicate-rows-kept",
                     dups=len(dups), dups2=dups[0] + 1), "warning", "duplicate")
    return (set(dups) if schema.dedupe else None), len(lines)


def _dup_mask(path: Path, log: Any, n: int, data: Optional[bytes] = None) -> np.ndarray:
    """Rows to drop as exact duplicates (named by `door_duplicates`), when the rows read are the file's lines."""
    dups, total = door_duplicates(path, log, data)
    drop = np.zeros(n, dtype=bool)
    if dups and total == n:
        drop[sorted(dups)] = True
    return drop



# --- schema drift between ranks: the key paths of small JSON files ------------------------------------------------

MAX_SHAPE_PATHS = 400  # a document with more key paths is not compared (a trace, not a metadata file)


def shape_over(visits: int, limit: int = MAX_SHAPE_PATHS) -> bool:
    """True when a document whose `json_shape` walk visits at least `visits` values has no shape (None)."""
    return visits > 20 * limit
_DYNAMIC = re.compile(r"\d")


def json_shape(data: Any, limit: int = MAX_SHAPE_PATHS) -> Optional[frozenset]:
    """The key paths of a JSON document ("config.experimental_config._profiler_level", "DeviceInfo[].id"): keys
    holding a digit (steps, operator names, ids) are written `*`, list items `[]`. None when it has more than
    `limit` paths or is not an object, or when its walk visits more than 20 * `limit` values (`shape_over`: every
    key of an object at most 6 levels down, and the first 50 items of a list that are objects or lists)."""
    if not isinstance(data, dict):
        return None
    # The result depends on the totals only (the visits, the paths), not on the order of the walk: it walks a level
    # at a time, the containers of a level grouped by their path, so a level's count is one sum over its objects,
    # an object's keys are read at C speed (a set union per path) and a key's path is made once per path and key
    # (the sibling objects of a `*` key, the operators and links of the communication files, share their paths)
    cap = 20 * limit  # (`shape_over`)
    out: set[str] = set()
    norm: dict = {}  # a key as written in a path (keys repeat: one regex search each)
    visits = 1
    level: dict[str, list] = {"": [data]}  # path -> the containers there
    for depth in range(7):
        below: dict[str, list] = {}
        for p, vs in level.items():
            dicts = [v for v in vs if isinstance(v, dict)]
            if len(dicts) < len(vs):  # lists: their first 50 items that are containers, one visit each
                items = [x for v in vs if not isinstance(v, dict) for x in v[:50] if isinstance(x, _BOX)]
                if items:
                    visits += len(items)
                    below.setdefault(p + "[]", []).extend(items)
            if not dicts:
                continue
            n_values = sum(map(len, dicts))
            visits += n_values
            if visits > cap:
                return None
            keys = set().union(*dicts) if len(dicts) > 1 else set(dicts[0])
            paths: dict[str, list] = {}  # a path -> the keys written so
            for k in keys:
                kk = norm.get(k) if type(k) is str else None
                if kk is None:
                    kk = "*" if _DYNAMIC.search(str(k)) else str(k)
                    if type(k) is str:
                        norm[k] = kk
                paths.setdefault(f"{p}.{kk}" if p else kk, []).append(k)
            out.update(paths)
            if len(out) > limit:
                return None
            if depth == 6:
                continue  # (the walk goes no deeper)
            if len(paths) == 1:  # every key written the same: the containers among all values
                (q,) = paths
                kids = [x for d in dicts for x in d.values() if isinstance(x, _BOX)]
                if kids:
                    below.setdefault(q, []).extend(kids)
            elif len(keys) * len(dicts) <= 4 * n_values + 64:  # a key at a time
                for q, ks in paths.items():
                    kids = [x for k in ks for d in dicts if isinstance(x := d.get(k), _BOX)]
                    if kids:
                        below.setdefault(q, []).extend(kids)
            else:  # objects with keys of their own (few shared): a value at a time
                path_of = {k: q for q, ks in paths.items() for k in ks}
                for d in dicts:
                    for k, x in d.items():
                        if isinstance(x, _BOX):
                            below.setdefault(path_of[k], []).append(x)
        if visits > cap:
            return None
        level = below
        if not level:
            break
    return frozenset(out)


_BOX = (dict, list)
_SLASH_ONLY = os.sep == "/" and os.altsep is None  # (POSIX: "/" the only separator of a path)


def _file_name(rel: str) -> str:
    """`Path(rel).name`, without making a Path for the usual path ("dir/file.json": 8,192 at 1,024 ranks)."""
    if _SLASH_ONLY:
        tail = rel.rpartition("/")[2]
        if tail and tail != ".":
            return tail
    return Path(rel).name


def compare_shapes(ranks: dict, issues: list) -> None:
    """Name, per file family (the file name with digits as #), a rank's file that lacks key paths every other
    rank's copy has, or has key paths no other copy has (a key dropped, renamed, emptied: schema drift). Needs at
    least one other copy; a path is "expected" when every other copy has it."""
    fams: dict[str, dict[int, tuple[str, frozenset]]] = {}
    family: dict[str, str] = {}  # a file name -> its family (the ranks' copies share their names)
    for r, d in ranks.items():
        for rel, shape in (getattr(d, "json_shapes", None) or {}).items():
            name = _file_name(rel)
            fam = family.get(name)
            if fam is None:
                fam = family[name] = re.sub(r"\d+", "#", name)
            fams.setdefault(fam, {})[r] = (rel, shape)
    for fam, per in fams.items():
        if len(per) < 2:
            continue
        # per key, how many copies have it: the copies other than rank r all have a key when its count (less r's
        # own) is n - 1, and some other copy has it when that count is >= 1. Counting once keeps this linear in
        # the ranks (intersecting the other copies per rank was quadratic: 4 s at 1,024 ranks, a minute at 4,096);
        # ranks with the same shape (the usual case) share one comparison.
        count: Counter = Counter()
        kinds: Counter = Counter(shape for _, shape in per.values())
        for shape, k in kinds.items():
            for key in shape:
                count[key] += k
        n_others = len(per) - 1
        verdicts: dict[frozenset, tuple[list, list]] = {}
        for shape in kinds:
            lost = sorted(k for k, c in count.items() if c == n_others and k not in shape)
            extra = sorted(k for k in shape if count[k] == 1)
            verdicts[shape] = (lost, extra)
        for r, (rel, shape) in per.items():
            lost, extra = verdicts[shape]
            # a table's columns (`_record_header`): an extra column is harmless (the loader reads its columns by
            # name, an unknown one is left alone), and a column is "expected" only when at least two other copies
            # agree on it (with one other copy, the rank that lacks a column cannot be told from the one that
            # gained it); a renamed column is still named (it is lost where every other copy has it)
            extra = [k for k in extra if not k.startswith("column ")]
            if n_others < 2:
                lost = [k for k in lost if not k.startswith("column ")]
            shown = {k: ", ".join(v[:4]) + (" ..." if len(v) > 4 else "") for k, v in (("lost", lost), ("extra", extra))
                     if v}
            if shown:
                code = {("lost", "extra"): "schema.keys-lacked-and-added", ("lost",): "schema.keys-lacked",
                        ("extra",): "schema.keys-added"}[tuple(shown)]
                issues.append(DataIssue(rel, dq(code, r=r, **shown), "warning", (int(r),), kind="schema drift"))


# --- the door for Chrome traces (Kineto, torch_npu trace_view, MindInsight / MindSpore timelines) --------------
#
# A trace's events are read one at a time by the loader that summarises the file (`timeline.summarize_trace`,
# `gpu.summarize_gpu_timeline`, `kineto.scan._scan`); each passes every event through `TraceDoor.event` first. The
# table says, per trace family, what its lane ids (pid / tid) may be and which `args` values it reads, by kind.


@dataclass(frozen=True)
class TraceSchema:
    family: str
    pid: str = "whole"  # lane ids: "whole" (a whole number >= 0; digit text is read as the number), "any" (a
    tid: str = "whole"  # whole number of any sign), "name" (a whole number of any sign, or a name)
    tid_names: tuple[str, ...] = ()  # names this writer gives a lane where numbers are the rule ("Ops")
    args: dict[str, Field] = field(default_factory=dict)  # args values read, by kind (named, kept as written)
    unnamed_cats: tuple[str, ...] = ()  # categories not judged (Kineto's own "Trace" span: pid "Spans")
    named_threads: tuple[str, ...] = ()  # categories whose events sit on a thread the trace names (metadata)
    dedupe: bool = False  # exact duplicate complete events are counted once (and named)
    rows: str = "timeline"  # what the rank loses when the trace holds no event


IDX = Field("index")  # a whole number >= 0 (an id that pairs events: correlation, connection)
KINETO_TRACE = TraceSchema(  # torch.profiler's export (read by loaders/kineto/scan.py whatever the file's name)
    # (its own instant events name their lanes: pid "Traces", tid "Trace PyTorch Profiler"; a host operator on a
    # lane that is not a thread the trace names is caught by `named_threads`)
    "Kineto trace", pid="name", tid="name", unnamed_cats=("trace",),
    args={"correlation": IDX, "External id": IDX, "Total Allocated": S, "Total Reserved": S, "Device Type": IDX,
          "Device Id": Field("id"), "flops": S, "stream": Field("id"), "device": Field("id")},
    named_threads=("cpu_op", "operator", "user_annotation", "python_function"))
GPU_TIMELINE = TraceSchema("gpu_timeline_display", tid_names=("Ops",), dedupe=True)  # MindSpore GPU
TRACE_SCHEMAS: list[tuple[re.Pattern, TraceSchema]] = [
    (re.compile(r"^gpu_timeline_display_\d+\.json$"), GPU_TIMELINE),
    # (torch_npu writes connection_id -1 on tasks no launch is paired with: MEMCPY_ASYNC)
    (re.compile(r"^trace_view\.json$"), TraceSchema("trace_view.json", args={"connection_id": Field("link")},
                                                     dedupe=True)),
    (re.compile(r"^(ascend_)?timeline_display_\d+\.json$"), TraceSchema("ascend_timeline_display", dedupe=True)),
]
GENERIC_TRACE = TraceSchema("trace", tid="name", dedupe=True)


def trace_schema_for(path: Path) -> TraceSchema:
    name = Path(path).name
    return next((s for pat, s in TRACE_SCHEMAS if pat.search(name)), GENERIC_TRACE)


_DUP_KEY = ("pid", "tid", "name", "ts", "dur")  # a duplicate: these fields' text equal an earlier event's (`event`)


def _distinct(b: Any) -> bool:
    """True when no two complete events of the batch `b` are exact duplicates (the hash of their key fields'
    text, `_DUP_KEY`, equal: what `TraceDoor.event` counts). Only events sharing their start read as a number
    (`Events.xfloats`; equal text is an equal number, or NaN for both) can be: their keys alone are compared (a
    torch_npu trace's overlap lanes start with their kernels: a few dozen events of ~10,000)."""
    ts = b.xfloats("ts")
    if len(ts) < 2:
        return True
    order = np.argsort(ts, kind="stable")  # (NaN last: each NaN is taken as shared)
    s = ts[order]
    eq = s[1:] == s[:-1]
    nan = np.isnan(s)
    if not eq.any() and not nan.any():
        return True
    shared = np.zeros(len(s), dtype=bool)
    shared[1:] |= eq
    shared[:-1] |= eq
    shared |= nan
    shared = order[shared].tolist()
    cols = [b.xcol(k) for k in _DUP_KEY]
    keys = {hash(tuple(str(c[i]) for c in cols)) for i in shared}
    return len(keys) == len(shared)


def _texts(col: list) -> list:
    """`str` of every value (the door's duplicate key), whole numbers through one `str` per distinct value."""
    types = set(map(type, col))
    if types == {str}:
        return col
    if types == {int}:
        text = {v: str(v) for v in set(col)}
        return list(map(text.__getitem__, col))
    return list(map(str, col))


# a lane id's problem (`TraceDoor._lane`): its code and problem class
_BAD_LANE = {"none": ("trace.lane-id-missing", "schema drift"), "frac": ("trace.lane-id-fractional", "impossible value"),
             "huge": ("trace.lane-id-beyond-any-id", "impossible value"),
             "neg": ("trace.lane-id-negative", "impossible value"), "text": ("trace.lane-id-text", "schema drift")}


class TraceDoor:
    """The problems of one trace, judged event by event (`event`), named when `close`d. `event` returns the event's
    lane ids as the loader should key them (digit text read as the number: "519" and 519 are one lane), or None
    for an event to skip (an exact duplicate, with `dedupe`)."""

    def __init__(self, log: Any, path: Path, schema: Optional[TraceSchema] = None):
        self.log, self.path = log, path
        self.s = schema or trace_schema_for(path)
        self.n_events = 0
        self.bad_lane: dict[str, list] = {}  # problem -> [count, example]
        self.bad_args: dict[str, list] = {}
        self.malformed = 0
        self.unnamed = 0  # process_name metadata without a name
        self.dups = 0
        self.seen: set[int] = set()
        self.threads: set = set()  # lanes the metadata names (thread_name)
        self.on_threads: dict = {}  # lane -> host events on it (categories `named_threads`)
        self._argkeys = frozenset(self.s.args)

    def _lane(self, v: Any, kind: str, what: str) -> Any:
        raw = v
        if isinstance(v, str):
            t = v.strip()
            if t.isdigit() or (t[:1] == "-" and t[1:].isdigit()):
                v = int(t)
            elif kind == "name" or t in self.s.tid_names:
                return v
            else:
                return self._bad_lane("text", what, v)
        if v is None or isinstance(v, (bool, list, dict)) or not isinstance(v, (int, float)):
            return self._bad_lane("none", what, v)
        if isinstance(v, float):
            if not math.isfinite(v) or not v.is_integer():
                return self._bad_lane("frac", what, v)
            v = int(v)
        if abs(v) > 2 ** 63:  # beyond any process or thread id (an int64)
            return self._bad_lane("huge", what, raw)
        if v < 0 and kind == "whole":
            self._bad_lane("neg", what, raw)
        return v

    def _bad_lane(self, why: str, what: str, v: Any) -> Any:
        c = self.bad_lane.setdefault((what, why), [0, repr(v)[:40]])
        c[0] += 1
        return v if isinstance(v, (int, float, str)) and not isinstance(v, bool) else repr(v)[:40]

    def event(self, e: dict) -> Optional[tuple]:
        """(pid, tid) of one event as the loader should key its lane; None: skip the event."""
        self.n_events += 1
        ph = e.get("ph")
        if not isinstance(ph, str) or (ph == "X" and not isinstance(e.get("name"), str)):
            self.malformed += 1
            if ph != "X":
                return None
        if ph == "M":
            return self._meta(e)
        if ph == "X":
            if self.s.dedupe:
                h = hash((str(e.get("pid")), str(e.get("tid")), str(e.get("name")), str(e.get("ts")), str(e.get("dur"))))
                if h in self.seen:
                    self.dups += 1
                    return None
                self.seen.add(h)
        pid, tid = e.get("pid"), e.get("tid")
        cat = None
        if type(pid) is int and pid >= 0 and type(tid) is int and tid >= 0:
            lane = (pid, tid)  # (the common case first, read as it is: millions of events per trace)
        else:
            cat = str(e.get("cat") or "").lower()
            if cat in self.s.unnamed_cats:
                return pid, tid
            lane = (self._lane(pid, self.s.pid, "pid"), self._lane(tid, self.s.tid, "tid"))
        if self._argkeys:
            args = e.get("args")
            if type(args) is dict:
                for k in self._argkeys.intersection(args):
                    v = args[k]
                    if type(v) is int and v >= 0:
                        continue  # (valid for every kind the table uses)
                    why = value_problem(self.s.args[k].kind, v)
                    if why is not None:
                        c = self.bad_args.setdefault((k, why), [0, repr(v)[:40]])
                        c[0] += 1
        if ph == "X" and self.s.named_threads:
            if cat is None:
                cat = str(e.get("cat") or "").lower()
            if cat in self.s.named_threads:
                self.on_threads[lane] = self.on_threads.get(lane, 0) + 1
        return lane

    def _meta(self, e: dict) -> tuple:
        """A metadata event's lane; a process named without a name counted, the threads the trace names kept."""
        name = e.get("name")
        if name == "process_name":
            args = e.get("args")
            if not isinstance(args, dict) or not isinstance(args.get("name"), str):
                self.unnamed += 1
        if name == "thread_name" and self.s.named_threads:
            self.threads.add((self._quiet(e.get("pid")), self._quiet(e.get("tid"))))
        return self._quiet(e.get("pid")), self._quiet(e.get("tid"))

    def events(self, b: Any) -> list:
        """`event` of every event of the batch `b` (a `traces.Events`), in order: the same lanes, the same counts
        and entries. The usual batch -- every phase text, the lane ids of every event but metadata whole numbers
        >= 0, no args value to name -- is judged a column at a time (`judge_plain`: ~10x faster than event by
        event: a trace has millions of events); any other is judged event by event."""
        skip = self.judge_plain(b)
        return self.event_lanes(b, skip) if skip is not None else [self.event(e) for e in b.events]

    @staticmethod
    def event_lanes(b: Any, skip: list) -> list:
        """`events`' answer for a batch `judge_plain` judged: each event's (pid, tid) as written (metadata's too:
        `_meta` reads a whole number as it is), None at the positions of `skip`."""
        lanes = list(zip(b.col("pid"), b.col("tid")))
        for i in skip:
            lanes[i] = None
        return lanes

    def judge_plain(self, b: Any) -> Optional[list]:
        """`events` a column at a time for the usual batch: every lane is then the event's (pid, tid) as written
        but the duplicates skipped, whose positions are returned (usually none); None (nothing counted yet) when
        the batch is not of the usual kind. The tests are wider than `event`'s (metadata's lane ids and args too: a
        batch that fails one is judged event by event, which is exact). A batch of `trace_typed.PlainEvent`s
        (`b.plain`) passes the tests of phases, names and lane ids as decoded."""
        ev = b.events
        if not ev:
            return []
        if not b.plain:
            if set(map(type, b.col("ph"))) != {str}:
                return None
            if not (self._plain_ids(b.col("pid"), self.s.pid) and self._plain_ids(b.col("tid"), self.s.tid)):
                return None
        if self._argkeys and not self._args_fine(b.col("args"), b.typed and isinstance(ev[0], TYPED_EVENTS)):
            return None
        is_x = b.phase("X")
        names = b.xcol("name")
        cats = None
        if self.s.named_threads and True in is_x:
            raw = b.xcol("cat")
            try:
                low = {c: str(c or "").lower() for c in set(raw)}
            except TypeError:  # (a list or an object as the category)
                return None
            cats = list(map(low.__getitem__, raw))
        # nothing is counted above this line: from here the batch is judged
        self.n_events += len(ev)
        if not b.plain and b.xtypes("name") != {str}:
            self.malformed += len(names) - list(map(type, names)).count(str)
        for i in b.where("M"):  # (metadata: a few events; the positions shared with the loader. Its lane ids are
            self._meta(ev[i])  # whole numbers: `_meta` gives them as they are)
        skip: list = []
        xs = None
        keep = None
        if self.s.dedupe and names and not (b.whole and not self.seen and _distinct(b)):
            keys = list(map(hash, zip(*(_texts(b.xcol(k)) for k in _DUP_KEY))))
            new = set(keys)
            if len(new) == len(keys) and self.seen.isdisjoint(new):
                self.seen |= new
            else:  # an exact duplicate: the first is kept, the others skipped
                xs = list(compress(range(len(ev)), is_x))
                keep = [True] * len(xs)
                seen = self.seen
                for k, h in enumerate(keys):
                    if h in seen:
                        keep[k] = False
                        skip.append(xs[k])
                        self.dups += 1
                    else:
                        seen.add(h)
        if cats is not None:
            named, pid, tid = self.s.named_threads, b.col("pid"), b.col("tid")
            xs = xs or list(compress(range(len(ev)), is_x))
            on = [(pid[i], tid[i]) for i, c in zip(xs, cats) if c in named]
            if keep is not None:
                on = [(pid[i], tid[i]) for i, c, k in zip(xs, cats, keep) if k and c in named]
            for lane, n in Counter(on).items():
                self.on_threads[lane] = self.on_threads.get(lane, 0) + n
        return skip

    def _args_fine(self, args: list, typed: bool = False) -> bool:
        """True when no `args` value the schema reads has a problem to name (metadata's too: wider than `event`).
        `typed`: the events are `trace_typed.TraceEvent`s (one decoder's), whose args are an object or None."""
        if typed or set(map(type, args)) <= {dict, type(None)}:
            dicts = list(filter(None, args))  # (an empty object holds no value)
        else:
            dicts = [a for a in args if type(a) is dict]
        if not dicts:
            return True
        keys = self._argkeys if len(self._argkeys) < 4 else self._argkeys.intersection(set().union(*dicts))
        for k in keys:
            vals = list(map(dict.get, dicts, repeat(k)))  # (None: absent, or null: no problem either way)
            types = set(map(type, vals))
            if types <= {int, type(None)}:
                low = min(compress(vals, vals), default=0) if int in types else 0  # (None and 0 left out)
                if low >= 0:  # (whole numbers >= 0 are valid for every kind the table uses)
                    continue
                # (-1, "no partner" where an id pairs events: the only negative value then, without a pass)
                odd = {(int, -1)} if low == -1 else {(int, v) for v in vals if v is not None and v < 0}
            else:
                try:  # each distinct value once (by type too: True, 1.0 and 1 are one in a set)
                    odd = set(zip(map(type, vals), vals))
                except TypeError:  # (a list or an object: a problem)
                    return False
            kind = self.s.args[k].kind
            if any(value_problem(kind, v) is not None for t, v in odd if not (t is int and v >= 0)):
                return False
        return True

    @staticmethod
    def _plain_ids(c: list, kind: str) -> bool:
        """True when `event` reads every lane id of the column as it is written, naming nothing: whole numbers
        >= 0; for a lane that may be named (Kineto's: thread ids of either sign, "Spans", "Traces") also negative
        ones within an int64 and text that is not digits."""
        types = set(map(type, c))
        if types == {int} and min(c) >= 0:
            return True
        if kind != "name" or not types <= {int, str}:
            return False
        vals = set(c)  # (a lane's few ids; ints and text are never equal, so none is lost)
        ints = [v for v in vals if type(v) is int]
        if ints and not (-2 ** 63 <= min(ints) and max(ints) <= 2 ** 63):
            return False
        return not any(v.strip().lstrip("-").isdigit() for v in vals if type(v) is str)

    @staticmethod
    def _quiet(v: Any) -> Any:
        if isinstance(v, str) and v.strip().lstrip("-").isdigit():
            return int(v.strip())
        if isinstance(v, float) and v.is_integer():
            return int(v)
        return v if isinstance(v, (int, float, str)) else repr(v)

    def close(self, truncated: bool = False) -> None:
        path = self.path
        if not self.n_events and not truncated:
            self.log.add(path, dq("trace.no-events"), "warning", "empty table")
        for (what, why), (n, example) in self.bad_lane.items():
            code, kind = _BAD_LANE[why]
            self.log.add(path, dq(code, n=n, what=what, example=example), "warning", kind)
        for (key, why), (n, example) in self.bad_args.items():
            self.log.add(path, dq("trace.args-value-invalid", n=n, key=repr(key), why=why, example=example), "warning",
                         "schema drift" if "where a" in why else "impossible value")
        if self.malformed:
            self.log.add(path, dq("trace.events-without-phase-or-name", malformed=self.malformed), "warning",
                         "schema drift")
        if self.unnamed:
            self.log.add(path, dq("trace.process-name-without-name", unnamed=self.unnamed), "warning", "schema drift")
        if self.dups:
            self.log.add(path, dq("trace.duplicated-events", dups=self.dups), "warning", "duplicate")
        if self.threads:
            stray = {k: n for k, n in self.on_threads.items() if k not in self.threads}
            if stray:
                first = next(iter(stray))
                self.log.add(path, dq("trace.host-ops-on-unnamed-threads", stray=sum(stray.values()),
                                      first=repr(first[0]), first2=repr(first[1])), "warning", "schema drift")
        self.seen.clear()
