"""Timeline files: a summary of what each rank's Chrome trace holds, and its export for Perfetto.

* MindInsight `ascend_timeline_display_{r}.json` (µs numbers; AI Core pid = device, AI CPU 9000, communication
  10000, host 11000, overlap lanes 12000) with `ascend_timeline_summary_{r}.json` (`total_time` ms,
  `num_of_streams`, `num_of_ops`); older `timeline_display/summary_{r}.json`;
* torch_npu / MindSpore 2.3+ `trace_view.json` (string µs timestamps; processes named by metadata:
  "Ascend Hardware" device tasks, "HCCL" communication, "Overlap Analysis" lanes; MindSpore CPU: "CPU OP").

Merged computation / communication, pure communication (communication not hidden by computation) and free time
are computed over the trace's span with `reportgen.intervals` (the profiler's own lanes are used when present).
Traces are streamed; files above `MAX_SUMMARY_BYTES` are linked but not summarised.
"""

from __future__ import annotations

import codecs
import io
import json
import re
from itertools import compress, repeat
from operator import and_, is_, is_not, itemgetter
from pathlib import Path
from typing import IO, Optional

import numpy as np
import orjson

from reportgen import intervals
from reportgen.dataquality import dq
from reportgen.loaders.files import open_binary as open_maybe_gzip, run_root
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.jsonfile import read_json
from reportgen.loaders.schema import TraceDoor
from reportgen.pools import gc_paused
from reportgen.loaders.trace_batch import floats
from reportgen.loaders.traces import (note_unusable_events, trace_batches, trace_cut, TRACE_ERRORS,
                                      trace_events)
from reportgen.numbers import to_float
from reportgen.collectives import op_class
from reportgen.model import TimelineSummary

MAX_SUMMARY_BYTES = 64 * 1024 * 1024
LEGACY_COMM_PID, LEGACY_AICPU_PID, LEGACY_HOST_PID, LEGACY_LANE_PID = 10000, 9000, 11000, 12000
LANE_KEYS = {"Computing": "compute", "Merged Computation": "compute", "Communication": "communication",
             "Merged Communication": "communication", "Communication(Not Overlapped)": "pure_communication",
             "Pure Communication": "pure_communication", "Free": "free", "Free Time": "free"}
COMPUTE_PROCESSES = ("Ascend Hardware", "CPU OP", "AI Core")
COMM_PROCESSES = ("HCCL", "Communication")
SKIP_PROCESSES = ("Overlap Analysis", "Op Overlap Analyse", "Steps", "Scope Layer", "Python", "CANN", "Step")
_PLACEHOLDER = "\u0000ts\u0000"
COMM_OP = "\u0000comm\u0000"  # group key of communication operators found in a compute process


def summarize_trace(path: Path, log: IssueLog, summary: Optional[Path] = None) -> TimelineSummary:
    out = TimelineSummary(source=log.rel(path))
    try:
        out.trace_bytes = path.stat().st_size
    except OSError:
        pass
    if summary is not None:
        data = read_json(summary, log)
        if isinstance(data, dict):
            out.n_streams = int(to_float(data.get("num_of_streams")) or 0) if data.get("num_of_streams") else 0
            out.n_ops = int(to_float(data.get("num_of_ops")) or 0) if data.get("num_of_ops") else 0
    if out.trace_bytes > MAX_SUMMARY_BYTES:
        log.add(path, dq("timeline.trace-too-large", out=format(out.trace_bytes / 1e6, ".0f")), "info")
        out.trace_needs_numbers = _first_ts_is_string(path)
        return out
    door = TraceDoor(log, path)  # lane ids, args, duplicates, malformed and unnamed events (loaders/schema.py)
    with gc_paused():  # (the events make no cycle; the reading's objects are freed when `_read_trace` returns)
        proc, groups, tids, unusable, ts_kinds, out.truncated = _read_trace(path, log, door)
    note_unusable_events(log, path, unusable)
    door.close(out.truncated)
    if ts_kinds[0] and ts_kinds[1]:
        log.add(path, dq("timeline.ts-text-and-number", ts_kinds=ts_kinds[1], ts_kinds2=ts_kinds[0]), "warning",
                "schema drift")
    if proc:
        stray = {pid: len(g[0]) for (pid, _), g in groups.items() if pid not in proc}
        if stray:
            log.add(path, dq("timeline.unnamed-process", stray=sum(stray.values()),
                                  p=", ".join(repr(p) for p in list(stray)[:3])), "warning", "schema drift")
    out.trace_needs_numbers = ts_kinds[1] > 0
    lanes: dict[str, float] = {}
    sets: dict[str, list] = {"compute": [], "comm": []}
    n_ops, streams = 0, 0
    for (pid, lane), (st_a, du_a) in groups.items():
        cls = _classify(pid, "" if lane == COMM_OP else lane or "", proc)
        if cls == "compute" and lane == COMM_OP:
            cls = "comm"
        if cls == "lane":
            lanes[LANE_KEYS[lane]] = lanes.get(LANE_KEYS[lane], 0.0) + float(du_a.sum())
        elif cls in sets:
            sets[cls].append((st_a, du_a))
            n_ops += len(st_a)
    for pid, ts_ in tids.items():
        if _classify(pid, "", proc) in sets:
            streams += len(ts_)
    if n_ops == 0 and not lanes:
        return out
    merged = {}
    for cls, parts in sets.items():
        if parts:
            starts = np.concatenate([p[0] for p in parts])
            merged[cls] = intervals.merge(starts, starts + np.concatenate([p[1] for p in parts]))
        else:
            merged[cls] = intervals.empty()
    c, m = merged["compute"], merged["comm"]
    busy = intervals.merge(np.concatenate([c[0], m[0]]), np.concatenate([c[1], m[1]]))
    if len(busy[0]):
        out.span_ms = float(busy[1][-1] - busy[0][0]) / 1e3
    out.n_ops = out.n_ops or n_ops
    out.n_streams = out.n_streams or streams
    if lanes:  # the profiler's own overlap lanes
        out.compute_ms = lanes.get("compute", 0.0) / 1e3
        out.communication_ms = lanes.get("communication", 0.0) / 1e3
        out.pure_communication_ms = lanes.get("pure_communication", 0.0) / 1e3
        out.free_ms = lanes.get("free", 0.0) / 1e3
        return out
    out.compute_ms = intervals.total(c) / 1e3
    out.communication_ms = intervals.total(m) / 1e3
    out.pure_communication_ms = intervals.total(intervals.subtract(m, c)) / 1e3
    if len(busy[0]):
        out.free_ms = (float(busy[1][-1] - busy[0][0]) - intervals.total(busy)) / 1e3
    return out


def _read_trace(path: Path, log: IssueLog, door: TraceDoor) -> tuple:
    """(process names, the complete events' (start, duration) arrays by (pid, group key), tids by pid, unusable
    events, [complete events with ts as a number, as text], whether the trace broke off) of the trace at `path`,
    a batch at a time and a column at a time (`traces.Events`: millions of events). A batch the door judges a
    column at a time (`TraceDoor.judge_plain`: every lane the event's whole-number pid and tid) is grouped with
    numpy (`_plain_batch`); any other through the door's lanes (`_lane_batch`): the same groups, in the same order."""
    st = _State()
    truncated = False
    try:
        for b in trace_batches(path, log, typed=True, plain=True):
            skip = door.judge_plain(b)
            lanes = [door.event(e) for e in b.events] if skip is None else None
            for i in b.where("M"):  # (metadata: a few events; the lane of a judged batch's is its pid and tid)
                e = b.events[i]
                if (lanes is None or lanes[i] is not None) and e.get("name") == "process_name":
                    args = e.get("args")
                    pid = e.get("pid") if lanes is None else lanes[i][0]
                    st.proc[pid] = str((args if isinstance(args, dict) else {}).get("name", ""))
            if lanes is None and not _plain_batch(b, skip, st):
                lanes = door.event_lanes(b, skip)
            if lanes is not None:
                _lane_batch(b, lanes, st)
    except TRACE_ERRORS as e:
        trace_cut(log, path, e, "timeline summary from the part read")
        truncated = True
    groups = {k: (np.concatenate([p[0] for p in v]), np.concatenate([p[1] for p in v]))
              for k, v in st.groups.items()}
    return st.proc, groups, st.tids, st.unusable, st.ts_kinds, truncated


class _State:
    """What `_read_trace` gathers batch by batch."""

    def __init__(self) -> None:
        self.proc: dict = {}  # pid -> process name (metadata may come anywhere in the file: classified at the end)
        self.groups: dict = {}  # (pid, lane name or None) -> [(starts, durations), ...] (a pair of arrays a batch)
        self.tids: dict = {}  # pid -> set of tids
        self.unusable = 0
        self.ts_kinds = [0, 0]  # complete events whose ts is written as text / as a number
        self.keys: dict = {}  # event name -> its group key (a lane name, COMM_OP or None): names repeat every step
        self.codes: dict = {}  # event name -> the number of its group key in `kinds` (`_plain_batch`)
        self.kinds: list = []  # the group keys met, by number
        self.kind_no: dict = {}  # group key -> its number


def _times(ts: list, dur: list, st: _State, b=None) -> tuple:
    """The complete events' ts and dur as numbers, and which are usable (both >= 0: NaN compares false); the text
    and numeric starts counted. `b`: the batch whose complete events these are (its columns read once)."""
    types = set(map(type, ts)) if b is None else b.xtypes("ts")
    n_text = len(ts) if types == {str} else list(map(type, ts)).count(str) if str in types else 0
    st.ts_kinds[1] += n_text
    st.ts_kinds[0] += len(ts) - n_text
    ts, dur = (floats(ts), floats(dur)) if b is None else (b.xfloats("ts"), b.xfloats("dur"))
    return ts, dur, (ts >= 0) & (dur >= 0)


def _lane_batch(b, lanes: list, st: _State) -> None:
    """The complete events of the batch `b` into `st`, each keyed by its lane as the door gave it (None: skipped)."""
    x = b.phase("X")
    if None in lanes:  # (skipped: duplicates, events without a phase)
        x = list(map(and_, x, map(is_not, lanes, repeat(None))))
    if True not in x:
        return
    ts, dur, ok = _times(list(compress(b.col("ts"), x)), list(compress(b.col("dur"), x)), st)
    xl, names = list(compress(lanes, x)), list(compress(b.col("name"), x))
    if not ok.all():
        st.unusable += len(ok) - int(ok.sum())
        ts, dur = ts[ok], dur[ok]
        xl, names = list(compress(xl, ok.tolist())), list(compress(names, ok.tolist()))
    if not xl:
        return
    groups = st.groups
    pairs = list(zip(map(itemgetter(0), xl), _group_keys(names, st.keys)))
    for p in dict.fromkeys(pairs):  # (first seen first: the order the groups are summed in)
        if p not in groups:
            groups[p] = []
    slot = {p: i for i, p in enumerate(groups)}
    g = np.fromiter(map(slot.__getitem__, pairs), dtype=np.intp, count=len(pairs))
    order = np.argsort(g, kind="stable")  # each group's events in the trace's order
    g = g[order]
    cuts = np.flatnonzero(np.diff(g)) + 1
    parts = list(groups.values())
    for a, z in zip(np.concatenate(([0], cuts)).tolist(), np.concatenate((cuts, [len(g)])).tolist()):
        sel = order[a:z]
        parts[int(g[a])].append((ts[sel], dur[sel]))
    for pid, tid in set(xl):
        t = st.tids.get(pid)
        if t is None:
            t = st.tids[pid] = set()
        t.add(tid)


def _plain_batch(b, skip: list, st: _State) -> bool:
    """`_lane_batch` of a batch whose lanes are its events' (pid, tid) as written, whole numbers >= 0 (the door
    judged it: `TraceDoor.judge_plain`; `skip`: the positions of the duplicates it skips), a column at a time with
    numpy: the same groups, first seen first, each group's events in the trace's order. False (nothing taken) when
    a name is not text or a lane id beyond int64: `_lane_batch` then takes the batch."""
    if skip:
        x = list(b.phase("X"))
        for i in skip:
            x[i] = False
        names = list(compress(b.col("name"), x))
        if set(map(type, names)) != {str}:
            return False
        cols = [list(compress(b.col(k), x)) for k in ("pid", "tid", "ts", "dur")]
    else:
        names = b.xcol("name")
        if names and not b.plain and b.xtypes("name") != {str}:
            return False
        cols = [b.xcol(k) for k in ("pid", "tid", "ts", "dur")]
    if not names:
        return True
    n = len(names)
    try:
        pid, tid = (np.fromiter(c, dtype=np.int64, count=n) for c in cols[:2])
    except (OverflowError, ValueError, TypeError):  # (a lane id of 2^63 or more; a named lane: Kineto's "Spans")
        return False
    ts, dur, ok = _times(cols[2], cols[3], st, None if skip else b)
    codes = st.codes
    new = set(names).difference(codes)
    for name in new:
        key = _group_key(name)
        no = st.kind_no.get(key, -1)
        if no < 0:
            no = st.kind_no[key] = len(st.kinds)
            st.kinds.append(key)
        codes[name] = no
    code = np.fromiter(map(codes.__getitem__, names), dtype=np.int64, count=n)
    if not ok.all():
        st.unusable += n - int(ok.sum())
        ts, dur, pid, tid, code = ts[ok], dur[ok], pid[ok], tid[ok], code[ok]
        if not len(ts):
            return True
    pids = np.unique(pid)  # (a few: hashed, then each event's found by bisection; no sort of the events)
    p_of = np.searchsorted(pids, pid)
    nk = len(st.kinds)
    gs, first, g_of = np.unique(p_of * nk + code, return_index=True, return_inverse=True)
    keys = [(p, st.kinds[k]) for p, k in zip(pids[gs // nk].tolist(), (gs % nk).tolist())]
    groups = st.groups
    for j in np.argsort(first, kind="stable").tolist():  # (first seen first: the order the groups are summed in)
        if keys[j] not in groups:
            groups[keys[j]] = []
    order = np.argsort(g_of, kind="stable")  # each group's events in the trace's order
    ends = np.cumsum(np.bincount(g_of, minlength=len(gs))).tolist()
    a = 0
    for key, z in zip(keys, ends):
        sel = order[a:z]
        groups[key].append((ts[sel], dur[sel]))
        a = z
    for j, p in enumerate(pids.tolist()):
        t = st.tids.get(p)
        if t is None:
            t = st.tids[p] = set()
        t.update(np.unique(tid[p_of == j]).tolist())
    return True


def _group_key(name) -> Optional[str]:
    """The group of a complete event by its name: a lane name of the profiler's overlap lanes, COMM_OP for a
    communication operator, else None (a name that is not text too: a list or an object as the name is a malformed
    event the door counts, it used to stop the summary with TypeError).
    [issue 16, h-numbers] a communication operator in a compute process (MindSpore CPU's "CPU OP" AllReduce-opN) is
    communication, as the execution view classifies it (one classifier: op_class)."""
    if not isinstance(name, str):
        return None
    if name in LANE_KEYS:
        return name
    return COMM_OP if op_class(name) != "compute" else None


def _group_keys(names: list, keys: dict) -> list:
    """`_group_key` of each name, through `keys` (name -> group key: names repeat in every step)."""
    if set(map(type, names)) == {str}:
        for n in set(names).difference(keys):
            keys[n] = _group_key(n)
        return list(map(keys.__getitem__, names))
    return [(keys[n] if n in keys else keys.setdefault(n, _group_key(n))) if type(n) is str else None
            for n in names]


def _classify(pid, name: str, proc: dict) -> str:
    pname = proc.get(pid, "")
    if name in LANE_KEYS and (pname in ("Overlap Analysis", "Op Overlap Analyse") or pid == LEGACY_LANE_PID):
        return "lane"
    if pname:
        if pname.startswith(SKIP_PROCESSES):
            return "skip"
        if pname.startswith(COMM_PROCESSES):
            return "comm"
        if pname.startswith(COMPUTE_PROCESSES):
            return "compute"
        return "skip"
    if pid == LEGACY_COMM_PID:
        return "comm"
    if pid in (LEGACY_AICPU_PID, LEGACY_HOST_PID, LEGACY_LANE_PID):
        return "skip"
    return "compute" if isinstance(pid, int) and pid < LEGACY_AICPU_PID else "skip"


def _first_ts_is_string(path: Path) -> bool:
    try:
        for e in trace_events(path):
            if "ts" in e:
                return isinstance(e["ts"], str)
    except TRACE_ERRORS:
        pass
    return False


_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_PLAIN = r"-?(?:0|[1-9][0-9]{0,17})(?:\.[0-9]+)?"  # a JSON number below 1e18: finite and within MAX_ABS_NUMBER
_PLAIN_NUMBERS = re.compile(f"{_PLAIN}(?:\\n{_PLAIN})*")
_MARK = "\u0000#"  # around a ts / dur string while the events are dumped: orjson writes it \u0000#
_MARK_OPEN, _MARK_CLOSE, _MARK_BYTES = b'"\\u0000#', b'\\u0000#"', b"\\u0000#"
EXPORT_BATCH = 4096  # events dumped at a time


def export_trace(src: Path, dst: IO, convert: bool, root: Optional[Path] = None) -> int:
    """Write `src` as a Chrome-trace JSON array to `dst` (a text or a binary file: UTF-8); with `convert`, string timestamps become JSON numbers
    (the decimal text is kept exactly, so no precision is lost). Returns the number of events written.
    `root`: the run folder (a symbolic link out of it is not followed: an empty trace is written).

    The events are those `trace_events` yields: entries that are not an object and events whose numeric ts / dur
    is non-finite or out of range are left out, as the loaders leave them out (the copy shows what the report
    read; Perfetto would refuse or misplace them). A ts / dur string that the loaders read as a number but that is
    not written as a JSON number ("+5", "1_000", "012") is written as that float's shortest text (it used to be
    copied as it stood, which made the file invalid JSON); text that is no number (or a non-finite one) stays
    text. The events are dumped by orjson a batch at a time (`_export_batch`): the ts / dur strings that are plain
    decimals handed to it as JSON text; others marked (`_MARK`), the marks of the numbers then dropped bytewise
    with their quotes (`_write_events`)."""
    if root is not None:
        with run_root(root):
            return export_trace(src, dst, convert)
    if not convert:
        text = dst.write if isinstance(dst, io.TextIOBase) else (lambda t: dst.write(t.encode("utf-8")))
        try:
            with open_maybe_gzip(src) as f:
                dec = codecs.getincrementaldecoder("utf-8")(errors="replace")  # (a character cut by a read
                while True:  # is decoded whole)
                    chunk = f.read(1 << 20)
                    if not chunk:
                        break
                    text(dec.decode(chunk))
                text(dec.decode(b"", final=True))
        except (OSError, EOFError):  # not a regular file, or unreadable: the loader named it; an empty trace
            text("[]\n")
            return 0
        return -1
    binary = not isinstance(dst, io.TextIOBase)  # a binary file takes the bytes orjson writes as they are
    put = dst.write if binary else (lambda b: dst.write(b.decode("utf-8")))
    n = 0
    pending: list = []
    put(b"[")
    with gc_paused():  # (the events make no cycle)
        try:
            for b in trace_batches(src):
                pending.extend(b.events)
                while len(pending) >= EXPORT_BATCH:
                    _export_batch(put, pending[:EXPORT_BATCH], n)
                    n += EXPORT_BATCH
                    del pending[:EXPORT_BATCH]
        except TRACE_ERRORS:
            pass  # the part that was read is written; the loader reported the broken file
        if pending:
            _export_batch(put, pending, n)
            n += len(pending)
    put(b"\n]\n")
    return n


_FRAGMENT = getattr(orjson, "Fragment", None)  # JSON text orjson writes as it stands (orjson >= 3.9.15)


def _export_batch(put, batch: list, n: int) -> None:
    """`batch` as the next entries of the JSON array (`n` written before it), its ts / dur strings as JSON numbers
    where they are plain decimals (`_write_events`). When every one is (one regex over them all: the usual
    torch_npu trace), each is handed to orjson as the JSON text it is (`orjson.Fragment`: no marks to drop after);
    else, or should orjson refuse the batch, the batch is marked and written by `_write_events`."""
    idx: dict = {}
    texts: list = []
    for k in ("ts", "dur"):
        col = list(map(dict.get, batch, repeat(k)))
        i = list(compress(range(len(col)), map(is_, map(type, col), repeat(str))))
        idx[k] = i
        texts += [col[j] for j in i]
    plain = not texts or (_PLAIN_NUMBERS.fullmatch(blob := "\n".join(texts)) and blob.count("\n") == len(texts) - 1)
    if plain and _FRAGMENT is not None:
        k0 = len(idx["ts"])
        for k, vals in (("ts", texts[:k0]), ("dur", texts[k0:])):
            for j, f in zip(idx[k], map(_FRAGMENT, vals)):
                batch[j][k] = f
        try:
            put((b"," if n else b"") + b"\n" + orjson.dumps(batch)[1:-1])
            return
        except orjson.JSONEncodeError:
            for k, vals in (("ts", texts[:k0]), ("dur", texts[k0:])):  # (the strings back, for the marks)
                for j, v in zip(idx[k], vals):
                    batch[j][k] = v
    marked: list = []
    for k in ("ts", "dur"):
        for j in idx[k]:
            v = batch[j][k]
            marked.append(v)
            batch[j][k] = _MARK + v + _MARK
    out = io.StringIO()
    _write_events(out, batch, marked, n)
    put(out.getvalue().encode("utf-8"))


def _write_events(dst: IO[str], batch: list, texts: list, n: int) -> None:
    """`batch` as the next entries of the JSON array (`n` written before it). `texts`: its ts / dur strings, each
    marked in its event. When all are plain decimals (one regex over them all) each is written as it stands, else
    `_settle` judges each as the loaders read it. One orjson call dumps the batch; the marks of the numbers are then
    dropped with their quotes, bytewise. Should a string of the trace itself hold the mark (the count tells) or
    orjson refuse a value, the batch is written event by event with `json`."""
    marked = None
    if texts and not (_PLAIN_NUMBERS.fullmatch(blob := "\n".join(texts)) and blob.count("\n") == len(texts) - 1):
        marked = _settle(batch)
    try:
        out = orjson.dumps(batch)[1:-1]
        if out.count(_MARK_BYTES) == 2 * (len(texts) if marked is None else len(marked)):
            out = out.replace(_MARK_OPEN, b"").replace(_MARK_CLOSE, b"")
            dst.write(("," if n else "") + "\n" + out.decode("utf-8"))
            return
    except orjson.JSONEncodeError:
        pass
    if marked is None:
        marked = _settle(batch)
    raw: dict = {}
    for i, k, t in marked:
        raw.setdefault(i, {})[k] = t
        batch[i][k] = _PLACEHOLDER + k
    for i, e in enumerate(batch):
        text = json.dumps(e, ensure_ascii=False, separators=(",", ":"))
        for k, v in raw.get(i, {}).items():
            text = text.replace(json.dumps(_PLACEHOLDER + k), v, 1)
        dst.write(("," if n + i else "") + "\n" + text)


def _settle(batch: list) -> list:
    """Each marked ts / dur string of `batch` judged as the loaders read it (`to_float`): a number keeps its mark
    around the JSON text to write (its own, stripped, when it is a JSON number), other text loses the mark.
    Returns (index, key, JSON text) of the numbers."""
    marked = []
    m = len(_MARK)
    for i, e in enumerate(batch):
        for k in ("ts", "dur"):
            v = e.get(k)
            if type(v) is str:  # (every one was marked)
                v = v[m:-m]
                f = to_float(v)
                if f == f:
                    t = v.strip()
                    t = t if _JSON_NUMBER.fullmatch(t) else repr(f)
                    e[k] = _MARK + t + _MARK
                    marked.append((i, k, t))
                else:
                    e[k] = v
    return marked
