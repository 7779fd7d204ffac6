"""Collective-communication loaders: one per file family, all normalised to ms / MB / GB/s.

Over 500 lines: every communication file family (hccl_raw generations, HCCL traces, communication.json, msprof
HCCL) shares one op-name, group and unit normalisation; a split by family is open (issue 31).

Families (formats: shared/reference/mindinsight_formats.md §3.5, ascend_modern_formats.md §5-§6):

* MindInsight `hccl_raw_{rank}.csv`, from two producer generations that use different units:
  `HcclParser` (costs in ms, sizes KB, bandwidth KB/s, `-` row = true average) and `AscendHCCLGenerator`
  (costs in µs, link times ms, sizes KB, bandwidth GB/s, `-` row = a copy of the last iteration).
  The generation is read from the data: the stored bandwidth divided by size/time is 1 for KB/s, 1e-6 for GB/s.
* Raw inputs when `hccl_raw` is missing: `hccl_info/<op>/iter<k>.trace` (HcclParser's input) and msprof
  `timeline/hccl_*.json` (AscendHCCLGenerator's input), computed with the documented rules.
* Ascend `communication.json` + `communication_matrix.json` (CANN / torch_npu / MindSpore 2.3+).

1 MB = 1e6 bytes, 1 KB = 1e3 bytes, so GB/s = MB/ms.
"""

from __future__ import annotations

from reportgen import collectives, framepack
from reportgen.groupsum import pandas_sums
from reportgen.dataquality import dq
from reportgen.i18n import N_, lazy

import json
import math
import multiprocessing
import re
import sys
from collections import defaultdict
from operator import attrgetter
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd

from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.jsonfile import note_shape, parse_json_bytes, read_json, read_json_bytes
from reportgen.loaders.communication_typed import (MIN_TYPED_BYTES, _utf8, decode_matrix, matrix_shape,
                                                   shaped_columns, typed_columns)
from reportgen.loaders.tables import read_csv_rows
from reportgen.numbers import to_float, to_int
from reportgen.loaders.groups import double_hash
from reportgen.loaders.schema import JSON_SCHEMAS, N_GE0, Door, shape_over, whose as _whose
from reportgen.numbers import MAX_ABS_NUMBER
from reportgen.loaders.overlap import legacy_step_windows
from reportgen.pools import gc_paused
from reportgen.model import COMM_LINK_COLUMNS, COMM_OP_COLUMNS, COMM_TIME_COLUMNS, Communication, StepTrace

ANY_RANK = 0xFFFFFFFF
P2P_PREFIXES = ("hcom_send", "hcom_receive", "hcom_batchsendrecv")
MATRIX_KEY_RE = re.compile(r"^(?P<optype>[a-z0-9_]+)-(?P<tag>top1|middle|bottom\d|total)(?:@(?P<group>.+))?$")
OP_TYPE_RE = re.compile(r"^hcom_|__\d[\d_]*$")  # hcom_allReduce__586_3_1 -> allReduce
TIME_FIELDS = {  # communication.json "Communication Time Info" -> our column
    "Elapse Time(ms)": "communication_ms", "Transit Time(ms)": "transit_ms", "Wait Time(ms)": "wait_ms",
    "Synchronization Time(ms)": "sync_ms", "Idle Time(ms)": "idle_ms",
}


def _bw(size_mb: float, time_ms: float) -> float:
    return size_mb / time_ms if time_ms and time_ms > 0 else math.nan


def op_kind(name: str) -> str:
    low = name.lower()
    if low.startswith(P2P_PREFIXES) or re.search(r"(^|[_/-])(send|receive|recv)", low):
        return "p2p"
    return "collective"


def _frames(ops: list[dict], links: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    of = _typed(ops, COMM_OP_COLUMNS, ints=(), floats=COMM_OP_COLUMNS[4:], texts=("op", "group", "kind"))
    return of, _link_frame(links)


def _link_frame(links: "list[dict] | _LinkColumns") -> pd.DataFrame:
    if isinstance(links, _LinkColumns):
        return links.frame()
    return _typed(links, COMM_LINK_COLUMNS, ints=("src", "dst"),
                  floats=("time_ms", "size_mb", "bandwidth_gbps", "stored_bandwidth_gbps", "wait_ms"),
                  texts=("scope", "op", "group", "transport"))


def _typed(recs: list[dict], columns: tuple[str, ...], ints: tuple[str, ...], floats: tuple[str, ...],
           texts: tuple[str, ...]) -> pd.DataFrame:
    """Records -> a frame with `step` as Int64, `ints` int64, `floats` float, `texts` object (a missing value: NaN),
    each column built straight from the records (no string-dtype inference and conversion back: ~1 ms a rank)."""
    nan = math.nan
    out = {}
    for c in columns:
        vals = [r.get(c, nan) for r in recs]
        if c == "step":
            steps = np.array(vals, dtype=float)  # None -> NaN
            missing = np.isnan(steps)
            out[c] = pd.arrays.IntegerArray(np.where(missing, 0, steps).astype(np.int64), missing)
        elif c in ints:
            out[c] = np.array(vals, dtype=np.int64)
        elif c in floats:
            out[c] = np.array(vals, dtype=float)  # None -> NaN
        elif c in texts:
            out[c] = _texts(vals)
        else:
            out[c] = vals
    return framepack.frame(out)  # the columns in `columns` order (the dict's)


def _steps_from_ops(of: pd.DataFrame) -> pd.DataFrame:
    """The time columns summed per step (ops without a step form one row with step <NA>, first), as
    `groupby(step).sum(min_count=1)` (a column with no number in a step stays NaN; pandas' compensated sum), without
    the copies and conversions around it (1.7 -> 0.5 ms a rank)."""
    cols = list(COMM_TIME_COLUMNS)
    if not len(of):
        return pd.DataFrame(columns=["step", *cols])
    arrays = dict(zip(of.columns.tolist(), framepack.column_arrays(of))) if of.columns.is_unique else {}
    got = [arrays.get(c) for c in cols]
    if any(type(a) is not np.ndarray or a.dtype != np.float64 for a in got):  # (the loaders' frames hold floats)
        step = of["step"].to_numpy(dtype="float64", na_value=np.nan)
        keys = np.where(np.isnan(step), -1, step).astype(np.int64)
        sums = of[cols].groupby(keys, sort=True).sum(min_count=1)
        k = sums.index.to_numpy()
        out = {"step": pd.arrays.IntegerArray(np.where(k == -1, 0, k).astype(np.int64), k == -1)}
        return framepack.frame({**out, **{c: sums.iloc[:, j].to_numpy() for j, c in enumerate(cols)}})
    # the same sums of a bare block (`groupsum.pandas_sums`: pandas' own routine as its groupby chooses it, without
    # the groupby's frame, index and key factorisation: ~0.5 ms a rank)
    step = arrays.get("step")
    if type(step) is np.ndarray and step.dtype.kind in "fiu":
        step = step.astype(np.float64)
    elif isinstance(step, pd.arrays.IntegerArray):  # (the nullable integers the loaders write)
        step = step.to_numpy(dtype="float64", na_value=np.nan)
    else:
        step = of["step"].to_numpy(dtype="float64", na_value=np.nan)
    keys = np.where(np.isnan(step), -1, step).astype(np.int64)
    k, gid = np.unique(keys, return_inverse=True)
    block = pandas_sums(np.column_stack(got), gid.reshape(-1), len(k), "sum", 1)  # (groupby's routine and choice)
    if block is None:  # (a pandas whose routines differ: the groupby itself)
        sums = pd.DataFrame(np.column_stack(got)).groupby(keys, sort=True).sum(min_count=1)
        k, block = sums.index.to_numpy(), sums.to_numpy(dtype=np.float64)
    block = block.T.copy()
    out = {"step": pd.arrays.IntegerArray(np.where(k == -1, 0, k).astype(np.int64), k == -1)}
    return framepack.frame({**out, **{c: block[j] for j, c in enumerate(cols)}})


def _self_links(links: "list[dict] | _LinkColumns", known: dict[str, int]) -> dict[str, int]:
    out = dict(known)
    if isinstance(links, _LinkColumns):
        links = links.local_records()
    for l in links:
        if l["src"] == l["dst"] and l["transport"] == "LOCAL" and l["group"] not in out:
            out[l["group"]] = l["src"]
    return out


# --- Ascend communication.json / communication_matrix.json ---------------------------------------


def _step_of_key(key: str) -> Optional[int]:
    m = re.fullmatch(r"step(\d+)", str(key))
    return int(m.group(1)) if m else None


def _split_group(name: str) -> tuple[str, str]:
    base, _, group = str(name).partition("@")
    return base, group


def load_modern_communication(comm: Optional[Path], matrix: Optional[Path], log: IssueLog,
                              parallel_groups: Optional[dict] = None,
                              rank: Optional[int] = None) -> Optional[Communication]:
    """Per-op times from `communication.json`, per-link figures from `communication_matrix.json`."""
    # the collector paused while the documents are read and turned into columns: they are freed (reference counts)
    # before any collection walks their ~40,000 objects (a collection right after the parse cost ~2 ms a rank)
    with gc_paused():
        ops, links, source = _read_modern(comm, matrix, log)
        return _modern_communication(comm, matrix, ops, links, source, parallel_groups, rank)


def _read_modern(comm: Optional[Path], matrix: Optional[Path], log: IssueLog) -> tuple:
    """(operators, links, source) of the two files: columns (`_OpColumns`, `_LinkColumns`) where the file is clean,
    else records read one by one (what is wrong named on `log`)."""
    ops: "list[dict] | _OpColumns" = []
    links: "list[dict] | _LinkColumns" = []
    source = ""
    if comm is not None:
        source = log.rel(comm)
        raw = read_json_bytes(comm, log)
        typed = _typed_columns(raw) if raw is not None else None  # a clean file: msgspec, the same columns
        data = None if raw is None or typed is not None else parse_json_bytes(comm, log, raw)  # else: the general way
        del raw
        if typed is not None:
            ops, shape = typed
            if shape is not None and getattr(log, "shapes", None) is not None:  # (as `note_shape` notes it)
                log.shapes[log.rel(comm)] = shape
        elif data is not None and not isinstance(data, dict):
            log.add(comm, dq("communication.times-not-object"), "error")
        elif isinstance(data, dict):
            cols = _modern_columns(data)  # a clean file at C speed; anything to name: operator by operator
            # the shape's walk visits each operator's entry, its two objects and at least its 5 times: a document
            # of ~1,150 operators or more has no shape (not walked: ~1 ms a rank)
            if cols is None or not shape_over(1 + 7 * len(cols)):
                note_shape(comm, log, data)
            if cols is not None:
                ops = cols
            else:
                counter = [0]
                door = Door(log, comm)
                for step, kind, name, info in _entries(data, counter):
                    rec = _modern_op(step, name, kind, info, door)
                    if rec is None:
                        counter[0] += 1
                    else:
                        ops.append(rec)
                bad = counter[0]
                if bad:
                    log.add(comm, dq("communication.entries-without-time-info", bad=bad,
                                     bad2="y" if bad == 1 else "ies"))
                door.close()
            if not len(ops):
                log.add(comm, dq("communication.no-operators"), "info")
    if matrix is not None:
        source = source or log.rel(matrix)
        raw = read_json_bytes(matrix, log)
        typed = _typed_links(raw, matrix, log) if raw is not None else None  # a clean file: msgspec, the same
        data = None  # columns and key paths; else the general way (the bytes read once, what is wrong named once)
        if typed is None and raw is not None:
            data = parse_json_bytes(matrix, log, raw)
            note_shape(matrix, log, data)
        del raw
        if data is not None and not isinstance(data, dict):
            log.add(matrix, dq("communication.matrix-not-object"), "error")
        elif typed is not None or isinstance(data, dict):
            links = typed if typed is not None else _modern_link_columns(data)  # a clean file: no call per link;
            if links is None:  # else link by link, named
                links = _modern_links(data, matrix, log)
            if not links:  # a warning when the rank ran collectives (their links are what is missing); a rank
                # that communicated nothing (one device alone) has no link to show: context
                log.add(matrix, dq("communication.matrix-no-links", whose=_whose(log)),
                        "warning" if len(ops) else "info", "empty table")
    return ops, links, source


def _modern_communication(comm: Optional[Path], matrix: Optional[Path], ops: "list[dict] | _OpColumns",
                          links: "list[dict] | _LinkColumns", source: str, parallel_groups: Optional[dict],
                          rank: Optional[int]) -> Optional[Communication]:
    if comm is None and matrix is None:
        return None
    if not len(ops) and not links:
        return None
    known: dict[str, int] = {}
    for gid, g in (parallel_groups or {}).items():
        if g.get("group_rank") is not None:
            known[str(double_hash(gid))] = int(g["group_rank"])
        elif rank is not None and rank in g.get("global_ranks", []):
            known[str(double_hash(gid))] = list(g["global_ranks"]).index(rank)
    if isinstance(ops, _OpColumns):
        of, lf = ops.frame(), _link_frame(links)
        inst = _instances(ops.step, ops.op, ops.group, ops.kind, ops.start_us, ops.comm_ms,
                          tuple(of[c].to_numpy() for c in ("op", "group", "kind")))
    else:
        of, lf = _frames(ops, links)
        inst = op_instances(ops)
    return Communication(source=source, producer="communication.json", steps=_steps_from_ops(of), ops=of, links=lf,
                         local_links=True, self_local=_self_links(links, known),
                         unit_note=N_("CANN communication.json: times in ms, sizes in MB, bandwidth in GB/s; "
                                      "SDMA already includes HCCS/PCIE/SIO traffic and is not added to them."),
                         instances=inst)


def op_instances(ops: list[dict]) -> Optional[pd.DataFrame]:
    """The operators with a start time as collective instances (`Communication.instances`: step, op, group, kind,
    key, start_ms, dur_ms, name), for the arrival at each collective (`analysis.arrival`): an operator's name
    (`hcom_allReduce__586_3_1`) numbers it within its group, so (group, step and name) is the same instance on
    every rank of the group. The elapse includes the wait (CANN: a rank waits in the operator for the last one)."""
    nan = math.nan
    start = np.array([o["start_us"] if isinstance(o.get("start_us"), float) else nan for o in ops], dtype=float)
    comm = np.array([o.get("communication_ms", nan) for o in ops], dtype=float)
    return _instances([o["step"] for o in ops], [o["op"] for o in ops], [o["group"] for o in ops],
                      [o["kind"] for o in ops], start, comm)


def _instances(steps: list, names: list, groups: list, kinds: list, start_us: np.ndarray,
               comm_ms: np.ndarray, columns: Optional[tuple] = None) -> Optional[pd.DataFrame]:
    """`op_instances` of operators given as columns (an operator without a finite start or elapse is left out).
    `columns`: the names, groups (`str`) and kinds as `_texts` made them already (the `ops` frame's), taken as
    they are instead of being made again."""
    rows = np.flatnonzero(np.isfinite(start_us) & np.isfinite(comm_ms))
    if not len(rows):
        return None
    rows = rows[np.argsort(start_us[rows], kind="stable")]  # by start; ties in the file's order
    rl = rows.tolist()
    got = _labels_by_group(steps, columns[0], columns[1], rows) if columns is not None else None
    labels, keys = got if got is not None else _labels(steps, names, groups, rl)
    if columns is not None:  # communication.json's steps: whole numbers or None
        st = np.array(steps, dtype=float)[rows]  # None -> NaN
        missing = np.isnan(st)
        step = pd.arrays.IntegerArray(np.where(missing, 0, st).astype(np.int64), missing)
        name, group, kind = (pd.Series(c.take(rows), dtype=object, copy=False) for c in columns)
    else:
        step = pd.array([steps[i] for i in rl], dtype="Int64")
        name, group, kind = (_texts([names[i] for i in rl]), _texts([str(groups[i]) for i in rl]),
                             _texts([kinds[i] for i in rl]))
    return framepack.frame({
        "step": step, "op": _texts(labels), "group": group, "kind": kind, "key": _texts(keys),
        "start_ms": start_us[rows] / 1e3, "dur_ms": comm_ms[rows], "name": name})


def _labels(steps: list, names: list, groups: list, rl: list) -> tuple[list, list]:
    """The labels and keys of operators `rl` (positions, in start order) as instances: `allReduce#2`, the 2nd
    all-reduce of the step in its group (the name's counter runs on), and "step:name"."""
    types = _op_types([names[i] for i in rl])
    seen: dict = {}
    labels = []
    keys = []
    get = seen.get
    for i, t in zip(rl, types):
        s = steps[i]
        at = (s, groups[i], t)
        k = seen[at] = get(at, 0) + 1
        labels.append(f"{t}#{k}")
        keys.append(f"{s}:{names[i]}")
    return labels, keys


_GROUP_LABELS: dict = {}  # (group, its operators' steps and names in start order) -> their `_labels`
_GROUP_ROWS = [0]  # the operators `_GROUP_LABELS` holds (forgotten past MAX_GROUP_ROWS)
MAX_GROUP_ROWS = 200_000
_STEP_TYPES = frozenset({int, type(None)})


def _labels_by_group(steps: list, names: np.ndarray, groups: np.ndarray, rows: np.ndarray
                     ) -> Optional[tuple[list, list]]:
    """`_labels` of operators `rows` (in start order) group by group, each group's remembered per process: a label
    counts within its group, so a group's labels and keys are a function of its own operators' steps and names in
    start order, the same on every rank of the group (the same collectives in the same order: one Python step per
    operator and rank saved, ~1 ms a rank of 1,600 operators). `names` and `groups`: the operators' as object
    arrays (the `ops` frame's). None unless every step is an int or None and every name and group a `str` (then
    equal keys format alike)."""
    nm, gr = names.take(rows), groups.take(rows)
    if not (set(map(type, steps)) <= _STEP_TYPES and set(map(type, nm)) == _STR and set(map(type, gr)) == _STR):
        return None
    st = np.array(steps, dtype=object).take(rows)
    codes, uniques = pd.factorize(gr)
    order = np.argsort(codes, kind="stable")
    cuts = np.searchsorted(codes, np.arange(len(uniques) + 1), sorter=order).tolist()
    labels, keys = np.empty(len(rows), dtype=object), np.empty(len(rows), dtype=object)
    cache = _GROUP_LABELS
    for k, g in enumerate(uniques.tolist()):
        at = order[cuts[k]:cuts[k + 1]]
        s, n = tuple(st.take(at)), tuple(nm.take(at))
        got = cache.get((g, s, n))
        if got is None:
            got = tuple(np.array(x, dtype=object) for x in _labels(s, n, [g] * len(s), list(range(len(s)))))
            if _GROUP_ROWS[0] + len(s) > MAX_GROUP_ROWS:
                cache.clear()
                _GROUP_ROWS[0] = 0
            cache[(g, s, n)] = got
            _GROUP_ROWS[0] += len(s)
        labels[at], keys[at] = got
    return labels.tolist(), keys.tolist()


_STR = frozenset({str})
_OP_TYPES: dict[str, str] = {}  # an operator's name -> its type (the ranks of a group share the names)


def _op_types(names: list) -> list:
    """`hcom_allReduce__586_3_1` -> `allReduce` (OP_TYPE_RE; a name it would empty stays as it is), each distinct
    name once per process."""
    if len(_OP_TYPES) > 200_000:
        _OP_TYPES.clear()
    got = _OP_TYPES
    try:  # every name looked up at C speed (the ranks of a group share them: most are known), the others made below
        out = list(map(got.get, names))
    except TypeError:  # (a name that is no key: one by one)
        out = [None] * len(names)
    if None not in out:
        return out
    for i, n in enumerate(names):
        if out[i] is not None:
            continue
        t = got.get(n) if type(n) is str else None
        if t is None:
            op = str(n)
            t = OP_TYPE_RE.sub("", op) or op
            if type(n) is str:
                got[n] = t
        out[i] = t
    return out


def _texts(values: list) -> pd.Series:
    """A text column as object, not the inferred `str` dtype (None read as NaN): equal texts are one object, the
    same in every rank loaded in this process (`sys.intern`: a group hash or kind on every row, an operator name on
    every rank of its group; a 1,024-rank run keeps every rank's frames in memory). A rank unpickled from a worker
    or the rank cache shares them too (`framepack`), so a pool worker (whose ranks are pickled to the main process,
    which interns their texts as it reads them: `framepack.table`) keeps the texts as they are (~1.5 ms a rank)."""
    nan = math.nan
    col = np.empty(len(values), dtype=object)  # never a 2-D array, whatever the values
    if _in_worker():
        col[:] = [nan if v is None else v for v in values] if None in values else values
        return pd.Series(col, dtype=object, copy=False)
    pool: dict = {}
    col[:] = [nan if v is None else pool[v] if v in pool else pool.setdefault(v, sys.intern(v) if type(v) is str else v)
              for v in values]
    return pd.Series(col, dtype=object, copy=False)


def _in_worker() -> bool:
    """Whether this process is a pool worker (asked each time: a worker forked from a process that had loaded
    ranks itself inherits whatever that process knew)."""
    return multiprocessing.parent_process() is not None


def _entries(data: dict, bad: list[int]):
    """(step, kind, name, value) of `{step: {collective|p2p: {name: value}}}`, skipping the cross-group
    'Total Op Info' entries; malformed levels are counted in `bad[0]`."""
    for skey, kinds in data.items():
        step = _step_of_key(skey)
        if not isinstance(kinds, dict):
            bad[0] += 1
            continue
        for kind, opmap in kinds.items():
            if not isinstance(opmap, dict):
                bad[0] += 1
                continue
            for name, value in opmap.items():
                if not str(name).startswith("Total Op Info"):
                    yield step, kind, str(name), value


_GE0_KINDS = ("duration", "size", "bandwidth", "timestamp")
_PLAIN_KEYS: dict[str, frozenset] = {}  # per family: the keys whose kind only forbids negatives (`_plain`)


def _plain_keys(family: str) -> frozenset:
    got = _PLAIN_KEYS.get(family)
    if got is None:
        sch = JSON_SCHEMAS.get(family, {})
        keys = set(TIME_FIELDS) | {"Start Timestamp(us)", "Transit Size(MB)", "Transit Time(ms)", "Bandwidth(GB/s)"}
        got = _PLAIN_KEYS[family] = frozenset(k for k in keys | set(sch) if sch.get(k, N_GE0).kind in _GE0_KINDS)
    return got


def _plain(obj: dict, key: str, family: str) -> Optional[float]:
    """obj[key] as a float when it is a plain JSON number that `Door.field` would return unchanged with no entry (a
    finite, in-range, non-negative number of a field whose kind only forbids negatives); else None (the door
    reads it and names what is wrong). Most values of a file are such: this skips the per-value checks' calls."""
    v = obj.get(key)
    t = type(v)
    if (t is float or t is int) and 0 <= v <= MAX_ABS_NUMBER and key in _plain_keys(family):
        return float(v)
    return None


_TIME_ITEMS = tuple(TIME_FIELDS.items())
_TRANSPORT_ITEMS = tuple((tr, (("Transit Size(MB)", f"{tr.lower()}_mb"), ("Transit Time(ms)", f"{tr.lower()}_ms")))
                         for tr in ("SDMA", "RDMA"))


def _modern_op(step: Optional[int], name: str, kind: str, info: Any, door: Door) -> Optional[dict]:
    if not isinstance(info, dict):
        return None
    t = info.get("Communication Time Info")
    if not isinstance(t, dict):
        return None
    base, group = _split_group(name)
    rec: dict[str, Any] = {"step": step, "op": base, "group": group,
                           "kind": kind if kind in ("p2p", "collective") else op_kind(base)}
    fam = "communication.json"
    plain = _plain_keys(fam)
    lim = MAX_ABS_NUMBER
    where = None
    for src, col in _TIME_ITEMS:  # `_plain` inline: a plain number as it is, anything else through the door
        v = t.get(src)
        tv = type(v)
        if (tv is float or tv is int) and 0 <= v <= lim and src in plain:
            rec[col] = float(v)
        else:
            where = where or f"{name[:60]!r}"
            rec[col] = door.field(t, src, where, fam)
    v = t.get("Start Timestamp(us)")
    if v is not None:  # kept for the arrival at the collective (`op_instances`)
        tv = type(v)
        if (tv is float or tv is int) and 0 <= v <= lim and "Start Timestamp(us)" in plain:
            rec["start_us"] = float(v)
        else:
            where = where or f"{name[:60]!r}"
            rec["start_us"] = door.field(t, "Start Timestamp(us)", where, fam)
    bwi = info.get("Communication Bandwidth Info") or {}
    if not isinstance(bwi, dict):
        where = where or f"{name[:60]!r}"
        door.note(dq("communication.bandwidth-info-not-object"), where,
                  "warning", "schema drift")
        bwi = {}
    for tr, items in _TRANSPORT_ITEMS:
        b = bwi.get(tr)
        if b is not None and not isinstance(b, dict):
            where = where or f"{name[:60]!r}"
            door.note(dq("communication.bandwidth-entry-not-object", tr=tr), where, "warning",
                      "schema drift")
        b = b if isinstance(b, dict) else {}
        for src, col in items:
            if src not in b:
                rec[col] = 0.0
                continue
            v = b[src]
            tv = type(v)
            if (tv is float or tv is int) and 0 <= v <= lim and src in plain:
                rec[col] = float(v)
            else:
                where = where or f"{name[:60]!r}"
                rec[col] = door.field(b, src, f"{where} {tr}", fam, 0)
        if "Bandwidth(GB/s)" in b and _plain(b, "Bandwidth(GB/s)", fam) is None:
            where = where or f"{name[:60]!r}"
            door.field(b, "Bandwidth(GB/s)", f"{where} {tr}", fam)
    return rec


class _OpColumns:
    """communication.json's operators as columns (`_modern_columns`): what `_modern_op` gives row by row."""

    def __init__(self, step: list, op: list, group: list, kind: list, values: dict[str, np.ndarray],
                 start_us: np.ndarray) -> None:
        self.step, self.op, self.group, self.kind, self.values, self.start_us = step, op, group, kind, values, start_us
        self.comm_ms = values["communication_ms"]

    def __len__(self) -> int:
        return len(self.step)

    def frame(self) -> pd.DataFrame:
        """The `ops` frame `_frames` builds from the same operators' records."""
        steps = np.array(self.step, dtype=float)  # None -> NaN
        missing = np.isnan(steps)
        out: dict[str, Any] = {"step": pd.arrays.IntegerArray(np.where(missing, 0, steps).astype(np.int64), missing)}
        for c, vals in (("op", self.op), ("group", self.group), ("kind", self.kind)):
            out[c] = _texts(vals)
        for c in COMM_OP_COLUMNS[4:]:
            out[c] = self.values[c]
        return framepack.frame(out)


def _plain_column(vals: list, missing_ok: bool = False) -> Optional[np.ndarray]:
    """`vals` as floats when each is a value `_modern_op` keeps as it is (an int or float, 0 <= v < MAX_ABS_NUMBER;
    None too when `missing_ok`, read as NaN), else None. (A float below the limit is an int below it: rounding is
    monotonic; a value at the limit goes the careful way, which reads it the same.)"""
    kinds = set(map(type, vals))
    if not kinds <= ({float, int, type(None)} if missing_ok else {float, int}):
        return None
    try:
        a = np.array(vals, dtype=float)  # None -> NaN (JSON has no NaN: a NaN here is a missing value)
    except (OverflowError, ValueError, TypeError):
        return None
    ok = a[~np.isnan(a)] if missing_ok else a
    if not ((ok >= 0).all() and (ok < MAX_ABS_NUMBER).all()):
        return None
    return a


_FAST_KEYS = frozenset({*TIME_FIELDS, "Start Timestamp(us)", "Transit Size(MB)", "Transit Time(ms)",
                        "Bandwidth(GB/s)"})


def _modern_columns(data: dict) -> Optional[_OpColumns]:
    """The operators of a `communication.json` document as columns, when `_modern_op` would read every value of
    every operator as it is and note nothing (every level an object, every time present and a plain number, the
    bandwidth entries objects with plain numbers or absent): the same values as its records, without a call per
    operator. None otherwise (the operators are then read one by one, and what is wrong is named)."""
    if not _FAST_KEYS <= _plain_keys("communication.json"):
        return None
    bad = [0]
    steps, kinds, names, infos = [], [], [], []
    for step, kind, name, info in _entries(data, bad):
        steps.append(step)
        kinds.append(kind)
        names.append(name)
        infos.append(info)
    if bad[0] or not infos or set(map(type, infos)) != {dict}:
        return None
    ts = [i.get("Communication Time Info") for i in infos]
    if set(map(type, ts)) != {dict}:
        return None
    values: dict[str, np.ndarray] = {}
    for src, col in _TIME_ITEMS:
        a = _plain_column([t.get(src) for t in ts])
        if a is None:
            return None
        values[col] = a
    start = _plain_column([t.get("Start Timestamp(us)") for t in ts], missing_ok=True)
    if start is None:
        return None
    bwis = [i.get("Communication Bandwidth Info") or {} for i in infos]
    if set(map(type, bwis)) != {dict}:
        return None
    for tr, items in _TRANSPORT_ITEMS:
        bs = [b.get(tr) for b in bwis]
        if not set(map(type, bs)) <= {dict, type(None)}:
            return None
        bs = [{} if b is None else b for b in bs]
        for src, col in items:
            a = _plain_column([b.get(src, 0.0) for b in bs])
            if a is None:
                return None
            values[col] = a
        if _plain_column([b.get("Bandwidth(GB/s)", 0.0) for b in bs]) is None:
            return None
    ops, groups = [], []
    for name in names:
        base, _, group = name.partition("@")
        ops.append(base)
        groups.append(group)
    kinds = [k if k in ("p2p", "collective") else op_kind(b) for k, b in zip(kinds, ops)]
    return _OpColumns(steps, ops, groups, kinds, values, start)


def _typed_columns(raw: bytes) -> Optional[tuple[_OpColumns, Optional[frozenset]]]:
    """(`_modern_columns` of the document `raw`, its key paths as `json_shape` lists them or None), decoded by
    msgspec (`communication_typed`: only where the general way would read the same values and name nothing; a
    small document with every key typed, `shaped_columns`, a large one without a shape, `typed_columns`); None:
    read it the general way."""
    if not _FAST_KEYS <= _plain_keys("communication.json"):
        return None
    if len(raw) < MIN_TYPED_BYTES:
        return shaped_columns(raw, _step_of_key, op_kind, _OpColumns)
    cols = typed_columns(raw, _step_of_key, op_kind, _OpColumns)
    return None if cols is None else (cols, None)


def _matrix_key(key) -> tuple:
    """(scope, op type, group, operator name) of a communication_matrix.json entry's key: "<optype>-<tag>@<group>"
    (scope "total" or "sample", no name), or older CANN's one entry per operator, "<op>@<group>" (scope "op")."""
    m = MATRIX_KEY_RE.match(str(key))
    if m is not None:
        return ("total" if m.group("tag") == "total" else "sample"), m.group("optype"), m.group("group") or "", None
    name, group = _split_group(str(key))
    return "op", optype_of(name), group, name


def _modern_links(data: dict, path: Path, log: IssueLog) -> list[dict]:
    out: list[dict] = []
    counter = [0]
    door = Door(log, path)
    for step, _kind, key, linkmap in _entries(data, counter):
        if not isinstance(linkmap, dict):
            continue
        scope, optype, group, name = _matrix_key(key)
        for lk, li in linkmap.items():
            rec = _link_record(step, scope, optype, group, name, lk, li, door)
            if rec is None:
                counter[0] += 1
            else:
                out.append(rec)
    bad = counter[0]
    if bad:
        log.add(path, dq("communication.links-unreadable", bad=bad, bad2="y" if bad == 1 else "ies"))
    door.close()
    return out


class _LinkColumns:
    """communication_matrix.json's links as columns (`_modern_link_columns`): what `_link_record` gives link by
    link."""

    def __init__(self, texts: dict[str, list], src: list, dst: list, values: dict[str, np.ndarray]) -> None:
        self.texts, self.src, self.dst, self.values = texts, src, dst, values

    def __len__(self) -> int:
        return len(self.src)

    def frame(self) -> pd.DataFrame:
        """The `links` frame `_link_frame` builds from the same links' records."""
        steps = np.array(self.texts["step"], dtype=float)  # None -> NaN
        missing = np.isnan(steps)
        out: dict[str, Any] = {"step": pd.arrays.IntegerArray(np.where(missing, 0, steps).astype(np.int64), missing)}
        for c in COMM_LINK_COLUMNS[1:]:
            if c in ("src", "dst"):
                out[c] = np.array(self.src if c == "src" else self.dst, dtype=np.int64)
            elif c in self.values:
                out[c] = self.values[c]
            else:
                out[c] = _texts(self.texts[c])
        return framepack.frame(out)

    def local_records(self) -> list[dict]:
        """The self links over LOCAL (`_self_links`), as records."""
        tr, grp = self.texts["transport"], self.texts["group"]
        return [{"src": s, "dst": d, "transport": "LOCAL", "group": grp[i]}
                for i, (s, d) in enumerate(zip(self.src, self.dst)) if s == d and tr[i] == "LOCAL"]


_LINK_KEYS: dict[str, tuple[int, int]] = {}  # "3-5" -> (3, 5), per process (every rank of a group has them)
_MATRIX_FAST = ("Transit Size(MB)", "Transit Time(ms)", "Bandwidth(GB/s)")


def _modern_link_columns(data: dict) -> Optional[_LinkColumns]:
    """The links of a `communication_matrix.json` document as columns, when `_modern_links` would read every link
    as it is and note nothing (every level an object, every link an object with a `src-dst` key and plain numbers):
    the same values as its records, without a call per link. None otherwise."""
    return _link_columns(data, False)


def _link_columns(data: dict, typed: bool) -> Optional[_LinkColumns]:
    """`_modern_link_columns`; `typed`: `data` is the document as `communication_typed.decode_matrix` decoded it
    (its links `_Link` structs, their numbers checked there)."""
    if not set(_MATRIX_FAST) <= _plain_keys("communication_matrix.json"):
        return None
    bad = [0]
    texts: dict[str, list] = {c: [] for c in ("step", "scope", "op", "group", "transport")}
    src: list[int] = []
    dst: list[int] = []
    lis: list = []
    keys = _LINK_KEYS
    if len(keys) > 1_000_000:
        keys.clear()
    ops_, transports = texts["op"], texts["transport"]
    for step, _kind, key, linkmap in _entries(data, bad):
        if not isinstance(linkmap, dict):
            continue
        scope, optype, group, name = _matrix_key(key)
        n = len(linkmap)
        for lk, li in linkmap.items():
            if typed:
                nm, tr = li.op_name, li.transport  # (a text, None or UNSET: falsy)
            elif type(li) is not dict:
                return None
            else:
                nm, tr = li.get("Op Name"), li.get("Transport Type")
            sd = keys.get(lk) if type(lk) is str else None
            if sd is None:
                try:
                    a, b = str(lk).split("-")
                    sd = (int(a), int(b))
                except ValueError:
                    return None
                if type(lk) is str:
                    keys[lk] = sd
            src.append(sd[0])
            dst.append(sd[1])
            lis.append(li)
            if scope == "sample":
                nm = nm or optype
                ops_.append(str(nm) if nm else optype)
            else:
                ops_.append(str(name) if name else optype)
            transports.append(str(tr or "UNKNOWN").upper())
        texts["step"] += [step] * n
        texts["scope"] += [scope] * n
        texts["group"] += [group] * n
    if bad[0]:
        return None
    if typed:
        cols = [np.fromiter(map(attrgetter(a), lis), dtype=float, count=len(lis)) for a in ("size", "time",
                                                                                          "bandwidth")]
    else:
        cols = [_plain_column([li.get(k) for li in lis]) for k in _MATRIX_FAST]
    if any(c is None for c in cols):
        return None
    size, time, stored = cols
    with np.errstate(divide="ignore", invalid="ignore"):
        bw = np.where(time > 0, size / np.where(time > 0, time, 1.0), math.nan)
    values = {"time_ms": time, "size_mb": size, "bandwidth_gbps": bw, "stored_bandwidth_gbps": stored,
              "wait_ms": np.full(len(lis), math.nan)}
    return _LinkColumns(texts, src, dst, values)


def _typed_links(raw: bytes, path: Path, log: IssueLog) -> Optional[_LinkColumns]:
    """The links of communication_matrix.json (`raw`) as `_modern_link_columns` reads them, its key paths noted as
    `read_json` notes them, decoded by msgspec (`communication_typed.decode_matrix`) where the general way would
    read the same values and name nothing; None: read it the general way."""
    doc = decode_matrix(raw)
    if doc is None or not (raw.isascii() or _utf8(raw)):
        return None
    links = _link_columns(doc, True)
    if not links:  # (no link: the general way, which says so)
        return None
    if getattr(log, "shapes", None) is not None:
        shape = matrix_shape(doc)
        if shape is not None:
            log.shapes[log.rel(path)] = shape
    return links


def _link_record(step, scope, optype, group, name, lk, li, door: Door) -> Optional[dict]:
    if not isinstance(li, dict):
        return None
    try:
        a, b = str(lk).split("-")
        src, dst = int(a), int(b)
    except ValueError:
        return None
    fam = "communication_matrix.json"
    size, time, stored = (_plain(li, "Transit Size(MB)", fam), _plain(li, "Transit Time(ms)", fam),
                          _plain(li, "Bandwidth(GB/s)", fam))
    if size is None or time is None or stored is None:
        where = f"{str(name or optype)[:50]!r} link {str(lk)[:20]!r}"
        size = size if size is not None else door.field(li, "Transit Size(MB)", where, fam)
        time = time if time is not None else door.field(li, "Transit Time(ms)", where, fam)
        stored = stored if stored is not None else door.field(li, "Bandwidth(GB/s)", where, fam)
    if scope == "sample":
        name = li.get("Op Name") or optype
    return {"step": step, "scope": scope, "op": str(name) if name else optype, "group": group, "src": src,
            "dst": dst, "transport": str(li.get("Transport Type") or "UNKNOWN").upper(), "time_ms": time,
            "size_mb": size, "bandwidth_gbps": _bw(size, time) if not math.isnan(size) else stored,
            "stored_bandwidth_gbps": stored, "wait_ms": math.nan}


def optype_of(name: str) -> str:
    """The operator class of an op name, as torch_npu's matrix keys spell it (e.g. `allreduce`; one home:
    reportgen.collectives)."""
    return collectives.matrix_optype(name)


# --- MindInsight hccl_raw_{rank}.csv ---------------------------------------------------------------


def _link_entries(link_info: Any) -> list[tuple[int, int, str, list[float]]]:
    out = []
    if not isinstance(link_info, dict):
        raise ValueError("link_info is not an object")
    for key, per_type in link_info.items():
        a, b = str(key).split("-")
        if not isinstance(per_type, dict):
            raise ValueError("link entry is not an object")
        for tr, vec in per_type.items():
            if not isinstance(vec, list) or len(vec) < 3:
                raise ValueError("link vector too short")
            out.append((int(a), int(b), str(tr).upper(), [to_float(v) for v in vec]))
    return out


def _generation(entries: list[list[float]]) -> Optional[str]:
    """'kbs' (HcclParser: KB/s) or 'gbs' (AscendHCCLGenerator: GB/s), from stored bw vs size/time."""
    ratios = [v[2] / (v[1] / (v[0] / 1e3)) for v in entries
              if v[0] > 0 and v[1] > 0 and v[2] > 0 and not any(math.isnan(x) for x in v[:3])]
    if not ratios:
        return None
    r = float(np.median(ratios))
    return "kbs" if r > 1e-3 else "gbs"


def load_hccl_raw(path: Path, log: IssueLog, ms_version: Optional[str] = None) -> Optional[Communication]:
    got = read_csv_rows(path, log)
    if got is None:
        return None
    header, rows = got
    need = ("step_num", "communication_cost", "wait_cost", "link_info")
    if any(h not in header for h in need):
        log.add(path, dq("communication.hccl-raw-header", need=", ".join(need)), "error")
        return None
    ix = {h: i for i, h in enumerate(header)}
    parsed = []
    bad: list[int] = []
    for line, cells in rows:
        step_s = cells[ix["step_num"]].strip()
        try:
            links = _link_entries(json.loads(cells[ix["link_info"]] or "{}"))
            op_cost = {}
            if "communication_operator_cost" in ix and cells[ix["communication_operator_cost"]].strip():
                op_cost = json.loads(cells[ix["communication_operator_cost"]])
                if not isinstance(op_cost, dict):
                    raise ValueError("communication_operator_cost is not an object")
        except (ValueError, TypeError):
            bad.append(line)
            continue
        if step_s == "-":
            step = None
        else:
            step = to_int(step_s)
            if step is None:
                bad.append(line)
                continue
        parsed.append((step, to_float(cells[ix["communication_cost"]]), to_float(cells[ix["wait_cost"]]),
                       links, op_cost))
    if bad:
        where = ", ".join(str(n) for n in bad[:5]) + (" ..." if len(bad) > 5 else "")
        log.add(path, dq("communication.hccl-raw-bad-rows", bad=len(bad), where=where))
    if not parsed:
        log.add(path, dq("communication.hccl-raw-no-rows"), "error")
        return None
    gen = _generation([v for p in parsed for (_, _, _, v) in p[3]])
    note_how = lazy("from the link figures")
    if gen is None:
        major_minor = tuple(int(x) for x in re.findall(r"\d+", ms_version or "")[:2])
        gen = "gbs" if major_minor and major_minor >= (2, 1) else "kbs"
        note_how = (lazy("from the MindSpore version {version}", version=ms_version) if ms_version else
                    lazy("by default (no links to tell)"))
    cost_scale = 1.0 if gen == "kbs" else 1e-3  # µs -> ms for the newer producer
    bw_scale = 1e-6 if gen == "kbs" else 1.0  # KB/s -> GB/s
    has_avg = any(p[0] is None for p in parsed)
    keep_avg = gen == "kbs"
    ops: list[dict] = []
    links: list[dict] = []
    step_rows: list[dict] = []
    for step, comm, wait, entries, op_cost in parsed:
        if step is None and not keep_avg:
            continue
        step_rows.append({"step": step, "communication_ms": comm * cost_scale, "transit_ms": comm * cost_scale,
                          "wait_ms": wait * cost_scale, "sync_ms": math.nan, "idle_ms": math.nan})
        for src, dst, tr, v in entries:
            links.append(_legacy_link(step, "step", "", src, dst, tr, v, bw_scale))
        if op_cost:
            for name, val in op_cost.items():
                if not isinstance(val, list) or len(val) < 3:
                    continue
                c, w = to_float(val[1]) * cost_scale, to_float(val[2]) * cost_scale
                try:
                    op_links = _link_entries(val[3] if len(val) > 3 else {})
                except (ValueError, TypeError):
                    op_links = None
                name = legacy_op_name(name)
                ops.append(_legacy_op(step, name, c, w, op_links))
                for src, dst, tr, v in op_links or []:
                    links.append(_legacy_link(step, "op", name, src, dst, tr, v, bw_scale))
        else:
            ops.append(_legacy_op(step, "(all operators)", comm * cost_scale, wait * cost_scale, None))
    if gen == "kbs":
        unit = lazy("MindInsight hccl_raw (HcclParser): costs in ms, sizes in KB, bandwidth in KB/s (detected "
                    "{how}); converted to ms, MB and GB/s.", how=note_how)
    else:
        unit = lazy("MindInsight hccl_raw (AscendHCCLGenerator, MindSpore 2.1+): costs in µs, link times in ms, "
                    "bandwidth in GB/s (detected {how}); converted to ms and MB.", how=note_how)
        if has_avg:
            log.add(path, dq("communication.hccl-raw-average-copies-last"), "info")
    of, lf = _frames(ops, links)
    sf = pd.DataFrame.from_records(step_rows, columns=["step", *COMM_TIME_COLUMNS])
    sf["step"] = sf["step"].astype("Int64")
    return Communication(source=log.rel(path), producer="hccl_raw", steps=sf, ops=of, links=lf,
                         stored_average=keep_avg and has_avg, local_links=True,
                         self_local=_legacy_self_local(links),
                         unit_note=unit)


def _legacy_self_local(links: list[dict]) -> dict[str, int]:
    """MindInsight data has no group ids; its self link `k-k` (any transport) gives this rank's local rank."""
    own = next((l["src"] for l in links if l["src"] == l["dst"]), None)
    return {} if own is None else {"": own}


def _legacy_op(step, name: str, comm: float, wait: float,
               entries: Optional[list[tuple[int, int, str, list[float]]]]) -> dict:
    """One operator row from MindInsight-style figures: costs in ms, link vectors [time ms, size KB, ...]."""
    def total(tr: str, i: int, scale: float) -> float:
        return math.nan if entries is None else sum(v[i] for _, _, t, v in entries if t == tr) / scale

    return {"step": step, "op": name, "group": "", "kind": op_kind(name), "communication_ms": comm,
            "transit_ms": comm, "wait_ms": wait, "sync_ms": math.nan, "idle_ms": math.nan,
            "sdma_mb": total("SDMA", 1, 1e3), "sdma_ms": total("SDMA", 0, 1.0),
            "rdma_mb": total("RDMA", 1, 1e3), "rdma_ms": total("RDMA", 0, 1.0)}


def _task_entries(lk: dict) -> list[tuple[int, int, str, list[float]]]:
    """`task_links` output as (src, dst, transport, vector) entries."""
    return [(src, dst, tr, v) for (src, dst), per in lk.items() for tr, v in per.items()]


def _add_op_links(links: list[dict], step_links: dict, step, name: str, entries: list) -> None:
    """Record an operator's links, and add them into its step's per-link sums (vectors summed element-wise,
    bandwidth included, as MindInsight does)."""
    for src, dst, tr, v in entries:
        links.append(_legacy_link(step, "op", name, src, dst, tr, v, 1e-6))
        cur = step_links.setdefault((src, dst, tr), [0.0] * len(v))
        step_links[(src, dst, tr)] = [x + y for x, y in zip(cur, v)]


STREAM_PREFIX_RE = re.compile(r"^stream_\d+_\d+_")


def legacy_op_name(name: str) -> str:
    """`stream_41_0_AllReduce-op4582` -> `AllReduce-op4582`: the stream differs between ranks, the op does not."""
    return STREAM_PREFIX_RE.sub("", str(name))


def _legacy_link(step, scope, op, src, dst, tr, v, bw_scale) -> dict:
    time, size_kb, bw = v[0], v[1], v[2]
    size = size_kb / 1e3
    return {"step": step, "scope": scope, "op": op, "group": "", "src": src, "dst": dst, "transport": tr,
            "time_ms": time, "size_mb": size, "bandwidth_gbps": _bw(size, time),
            "stored_bandwidth_gbps": bw * bw_scale, "wait_ms": v[3] if len(v) > 3 else math.nan}


# --- raw HCCL task traces (HcclParser / AscendHCCLGenerator inputs) -----------------------------------


def _task(e: dict) -> str:
    a = e.get("args") or {}
    return str(a.get("task type") or e.get("name") or "").replace("_", " ").strip()


def _size_bytes(a: dict) -> float:
    v = a.get("size", a.get("size(Byte)"))
    if v is None:
        return 0.0
    if isinstance(v, str):
        try:
            return float(int(v, 16)) if v.lower().startswith("0x") else float(v)
        except ValueError:
            return 0.0
    return float(v)


def _link_key(a: dict) -> tuple[int, int, str]:
    src, dst = a.get("src rank"), a.get("dst rank")
    src = int(src) if src is not None else ANY_RANK
    dst = int(dst) if dst is not None else ANY_RANK
    if src == ANY_RANK:
        src = dst
    if dst == ANY_RANK:
        dst = src
    tr = str(a.get("transport type") or "").upper()
    if tr == "LOCAL":
        src, dst = dst, src
    return src, dst, tr


def task_links(events: list[dict]) -> dict[tuple[int, int], dict[str, list[float]]]:
    """Per link: SDMA [time ms, size KB, bw KB/s], RDMA [time, size, bw, wait] by the documented rules."""
    per_link: dict[tuple[int, int], dict[str, list[dict]]] = defaultdict(lambda: {"SDMA": [], "RDMA": []})
    for e in events:
        a = e.get("args") or {}
        src, dst, tr = _link_key(a)
        task = _task(e)
        if task == "Notify Record":
            continue
        if tr in ("SDMA", "RDMA"):
            per_link[(src, dst)][tr].append(e)
        elif tr == "LOCAL" and per_link[(src, dst)]["RDMA"]:
            per_link[(src, dst)]["RDMA"].append(e)
    out: dict[tuple[int, int], dict[str, list[float]]] = {}
    for key, by in per_link.items():
        res: dict[str, list[float]] = {}
        sd = [e for e in by["SDMA"] if _task(e) in ("Reduce Inline", "Memcpy")]
        if by["SDMA"]:
            t = sum(float(e.get("dur", 0)) for e in sd) / 1e3
            s = sum(_size_bytes(e.get("args") or {}) for e in sd) / 1e3
            res["SDMA"] = [t, s, s / (t / 1e3) if t > 0 else 0.0]
        if by["RDMA"]:
            t = s = w = 0.0
            by_tid: dict[Any, list[dict]] = defaultdict(list)
            for e in by["RDMA"]:
                by_tid[e.get("tid")].append(e)
            for evs in by_tid.values():
                evs.sort(key=lambda e: float(e.get("ts", 0)))
                i = 0
                while i + 2 < len(evs):
                    a, b, c = (_task(x) for x in evs[i:i + 3])
                    if a == "RDMASend" and b == "RDMASend" and c == "Notify Wait":
                        d = [float(x.get("dur", 0)) / 1e3 for x in evs[i:i + 3]]
                        t += sum(d)
                        w += d[2]
                        s += (_size_bytes(evs[i].get("args") or {}) + _size_bytes(evs[i + 1].get("args") or {})) / 1e3
                        i += 3
                    else:
                        i += 1
            res["RDMA"] = [t, s, s / (t / 1e3) if t > 0 else 0.0, w]
        if res:
            out[key] = res
    return out


def _costs_main_stream(events: list[dict]) -> tuple[float, float]:
    """HcclParser: communication = link time on the main stream (largest tid); wait = its Notify Waits minus
    the RDMA waits."""
    tids = [e.get("tid") for e in events if isinstance(e.get("tid"), (int, float))]
    if not tids:
        return 0.0, 0.0
    main = [e for e in events if e.get("tid") == max(tids)]
    links = task_links(main)
    comm = sum(v[0] for per in links.values() for v in per.values())
    rdma_wait = sum(per["RDMA"][3] for per in links.values() if "RDMA" in per)
    wait = sum(float(e.get("dur", 0)) for e in main if _task(e) == "Notify Wait") / 1e3 - rdma_wait
    return comm, wait


def _step_for(ts: float, windows: list[tuple[int, float, float]]) -> int:
    if not windows:
        return 1
    for s, a, b in windows:
        if a <= ts < b:
            return s
    return windows[0][0] if ts < windows[0][1] else windows[-1][0]


def load_hccl_traces(trace_files: list[Path], step_trace: Optional[StepTrace], log: IssueLog) -> Optional[Communication]:
    """`hccl_info/<op>/iter<k>.trace` files (one per op execution) -> per-step rows as HcclParser computes them.

    `step_trace` (the rank's legacy step trace) gives the step windows and the operator names.
    """
    windows, reduce_ops = legacy_step_windows(step_trace)
    per_step: dict[int, dict] = {}  # step -> (src, dst, transport) -> summed link vector
    op_rows: list[dict] = []
    links: list[dict] = []
    for p in sorted(trace_files):
        data = read_json(p, log)
        if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
            if data is not None:
                log.add(p, dq("communication.hccl-trace-no-events-list"))
            continue
        events = [e for e in data["traceEvents"] if isinstance(e, dict) and e.get("ph", "X") == "X"]
        if not events:
            continue
        first = min(float(e.get("ts", 0)) for e in events)
        step = _step_for(first, windows)
        name = legacy_op_name(next((n for s, n, a, b in reduce_ops if s == step and a <= first <= b),
                                   p.parent.name))
        comm, wait = _costs_main_stream(events)
        entries = _task_entries(task_links(events))
        _add_op_links(links, per_step.setdefault(step, {}), step, name, entries)
        op_rows.append(_legacy_op(step, name, comm, wait, entries))
    if not per_step:
        return None
    for step, step_links in per_step.items():
        for (src, dst, tr), v in step_links.items():
            links.append(_legacy_link(step, "step", "", src, dst, tr, v, 1e-6))
    of, lf = _frames(op_rows, links)
    return Communication(source=log.rel(trace_files[0].parent.parent), producer="hccl_trace",
                         steps=_steps_from_ops(of), ops=of, links=lf,
                         local_links=True,
                         self_local=_legacy_self_local(links),
                         unit_note="Computed from the raw HCCL task traces (hccl_info/*.trace) with MindInsight's "
                                   "HcclParser rules: SDMA = Reduce Inline + Memcpy, RDMA = RDMASend, RDMASend, "
                                   "Notify Wait triples, wait = Notify Wait on the main stream minus RDMA waits.")


HCCL_JSON_RE = re.compile(r"^hccl_(\d+)_(\d+)_(\d+)\.json$")


def load_msprof_hccl(device_dir: Path, log: IssueLog) -> Optional[Communication]:
    """msprof `timeline/hccl_{dev}_{model}_{iter}.json` -> per-iteration figures (AscendHCCLGenerator rules)."""
    files = []
    for p in (device_dir / "timeline").glob("hccl_*.json"):
        m = HCCL_JSON_RE.match(p.name)
        if m:
            files.append((int(m.group(3)), p))
    if not files:
        return None
    ops: list[dict] = []
    links: list[dict] = []
    spans: list[dict] = []
    for step, p in sorted(files):
        data = read_json(p, log)
        events = data.get("traceEvents") if isinstance(data, dict) else data
        if not isinstance(events, list):
            if data is not None:
                log.add(p, dq("communication.msprof-hccl-not-list"))
            continue
        if not events:
            log.add(p, dq("communication.msprof-hccl-empty", whose=_whose(log), step=step), "warning", "empty table")
            continue
        xs = [e for e in events if isinstance(e, dict) and e.get("ph") == "X" and isinstance(e.get("tid"), int)]
        detail = [e for e in xs if e["tid"] < 100]
        op_events = sorted((e for e in xs if e["tid"] >= 100), key=lambda e: float(e.get("ts", 0)))
        groups: list[tuple[str, list[dict]]] = []
        if op_events:
            buckets: dict[int, list[dict]] = defaultdict(list)
            starts = [float(e.get("ts", 0)) for e in op_events]
            for e in detail:
                i = int(np.searchsorted(starts, float(e.get("ts", 0)), side="right")) - 1
                buckets[max(i, 0)].append(e)
            groups = [(str(op_events[i].get("name", f"op{i}")), buckets.get(i, [])) for i in range(len(op_events))]
        else:
            groups = [("(all operators)", detail)]
        step_links: dict[tuple[int, int, str], list[float]] = {}
        for e in op_events:  # the operators' own spans: each rank's arrival at them (`op_instances`)
            ts, dur = to_float(e.get("ts")), to_float(e.get("dur"))
            if ts is not None and dur is not None and math.isfinite(ts) and math.isfinite(dur) and dur >= 0:
                name = str(e.get("name", ""))
                spans.append({"step": step, "op": name, "group": "", "kind": op_kind(name.rsplit("/", 1)[-1]),
                              "start_us": float(ts), "communication_ms": float(dur) / 1e3})
        for name, evs in groups:
            comm = sum(float(e.get("dur", 0)) for e in evs if _task(e) != "Notify Wait") / 1e3
            wait = sum(float(e.get("dur", 0)) for e in evs if _task(e) == "Notify Wait") / 1e3
            entries = _task_entries(task_links(evs))
            ops.append(_legacy_op(step, name, comm, wait, entries))
            _add_op_links(links, step_links, step, name, entries)
        for (src, dst, tr), v in step_links.items():
            links.append(_legacy_link(step, "step", "", src, dst, tr, v, 1e-6))
    if not ops:
        return None
    of, lf = _frames(ops, links)
    return Communication(source=log.rel(device_dir / "timeline"), producer="msprof_hccl",
                         steps=_steps_from_ops(of), ops=of, links=lf,
                         local_links=False, instances=op_instances(spans),
                         unit_note="Computed from msprof timeline/hccl_*.json (one file per iteration) with "
                                   "MindSpore's AscendHCCLGenerator rules: communication = all tasks except "
                                   "Notify Wait, wait = Notify Wait, SDMA = Memcpy + Reduce Inline.")
