"""Reading Chrome traces (`loaders.traces.trace_events`): the whole-file reader (orjson, traces up to FAST_MAX_BYTES)
gives the same events, the same exception and the same data-quality entries as the streamed reader (ijson) on
healthy and damaged traces; and the Perfetto copy (`timeline.export_trace`) writes ts / dur text as JSON numbers
with their exact decimal text."""

from __future__ import annotations

import gzip
import io
import json
import sys
from pathlib import Path

import orjson
import pytest

from conftest import sample
from reportgen.jsonguard import JsonTooDeep
from reportgen.loaders import trace_batch, traces
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.timeline import export_trace

EV = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "Ascend Hardware"}},
      {"ph": "X", "name": "MatMul", "pid": 1, "tid": 2, "ts": "1763717399999809.500", "dur": "12.25",
       "args": {"ts": "5", "Input Dims": "1,2"}},
      {"ph": "X", "name": "Add", "pid": 1, "tid": 2, "ts": 1763717399999900.25, "dur": 3},
      {"ph": "s", "name": "flow", "id": 7, "pid": 1, "tid": 2, "ts": "1763717399999809.000", "cat": "async_npu"}]
HEALTHY = json.dumps(EV).encode()


def _read(path, fast: bool, monkeypatch):
    """(events, exception, data-quality entries, whether the whole-file reader took the file)."""
    took = []
    whole = traces._whole
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(traces, "FAST_MAX_BYTES", -1)
        m.setattr(traces, "_whole", lambda *a: took.append(r := whole(*a)) or r)
        log = IssueLog(path.parent)
        events, err = [], None
        try:
            for e in traces.trace_events(path, log):
                events.append(e)
        except Exception as x:  # noqa: BLE001 - compared between the readers
            err = (type(x).__name__, str(x))
    return events, err, [(i.problem, i.severity, i.kind) for i in log.issues], took[0] is not None


def _same(a, b) -> bool:
    """The same events (types too: repr), exception and entries."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10_000)  # (an event nested 1,500 deep)
    try:
        return [repr(e) for e in a[0]] == [repr(e) for e in b[0]] and a[1:3] == b[1:3]
    finally:
        sys.setrecursionlimit(limit)


def _both(tmp_path, monkeypatch, data: bytes, name: str = "trace_view.json"):
    p = tmp_path / name
    p.write_bytes(gzip.compress(data, mtime=0) if name.endswith(".gz") else data)
    fast, slow = _read(p, True, monkeypatch), _read(p, False, monkeypatch)
    assert _same(fast, slow)
    assert not slow[3]
    return fast


HUGE = json.dumps([EV[0], dict(EV[1], args={"x": "y" * 200_000})]).encode()
DAMAGED = {  # name: (bytes, the whole-file reader takes it)
    "healthy": (HEALTHY, True),
    "object form, BOM, whitespace": (b"\xef\xbb\xbf \n\t" + json.dumps({"traceEvents": EV}).encode(), True),
    "non-finite and out-of-range ts": (json.dumps(EV[:2] + [dict(EV[2], ts=1e300)] + EV[3:]).encode(), True),
    "entries that are not objects": (HEALTHY.replace(b"[{", b'[null, "x", 3, [1], {', 1), True),
    "a huge string": (HUGE, True),
    "a huge string with escapes": (HUGE.replace(b"y" * 200_000, (b"y" * 999 + b"\\\\") * 200), True),
    "a huge run of backslashes": (HUGE.replace(b"y" * 200_000, b"\\\\" * 70_000), True),  # (read byte by byte)
    "NaN literal": (HEALTHY.replace(b'"dur": 3', b'"dur": NaN'), False),
    "an integer beyond int64": (HEALTHY.replace(b'"id": 7', b'"id": 99999999999999999999'), False),
    "int64's maximum": (HEALTHY.replace(b'"id": 7', b'"id": 9223372036854775807'), True),
    "long digits in text": (HEALTHY.replace(b'"name": "flow"', b'"name": "HostToDevice40004068119343529983", '
                                            b'"x": "40004068119343529983", "y": 0.40004068119343529983'), True),
    "int64's minimum (yajl refuses it)": (HEALTHY.replace(b'"id": 7', b'"id": -9223372036854775808'), False),
    "a long number alone": (b" 99999999999999999999", False),
    "cut off": (HEALTHY[:-40], False),
    "bytes that are not UTF-8": (HEALTHY.replace(b"MatMul", b"Mat\xffMul"), False),
    "a lone surrogate": (HEALTHY.replace(b"MatMul", b"Mat\\ud800Mul"), False),
    "nested past orjson's bound": (HEALTHY.replace(b'"args": {"ts"', b'"args": {"d": ' + b"[" * 1500 + b"]" * 1500
                                                   + b', "ts"'), False),
    "nested past the stream's bound": (HEALTHY.replace(b'"args": {"ts"', b'"args": {"d": ' + b"[" * 2500
                                                       + b"]" * 2500 + b', "ts"'), False),
    "trailing garbage": (HEALTHY + b" x", False),
    "traceEvents twice": (b'{"traceEvents": [{"ph": "X", "ts": 1}], "traceEvents": [{"ph": "X", "ts": 2}]}', False),
    "a key traceEvents.item": (b'{"traceEvents.item": {"ph": "X", "ts": 3}, "traceEvents": [{"ph": "X"}]}', False),
    "traceEvents spelt with an escape": (b'{"traceEvents": [{"ph": "X", "ts": 1}], "trace\\u0045vents": [{"ts": 2}]}',
                                         False),
    "no event list": (b'{"a": 1}', True),
    # review findings: a run of 4,301 digits after a space inside a string (int() of it raised before any event);
    # a non-object entry ~1,000 levels deep (its repr for the entry raised RecursionError outside the stream's guard)
    "a 4,301-digit run in text": (HEALTHY.replace(b'"Input Dims": "1,2"', b'"note": "id ' + b"7" * 4301 + b'"'),
                                  False),
    "a non-object entry 1,000 deep": (HEALTHY.replace(b"[{", b"[" + b"[" * 1000 + b"]" * 1000 + b", {", 1), True),
    "empty": (b"", False),
}


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("case", list(DAMAGED))
def test_whole_file_and_streamed_readers_agree(tmp_path, monkeypatch, case, gz):
    data, whole = DAMAGED[case]
    events, err, entries, took = _both(tmp_path, monkeypatch, data, "trace_view.json" + (".gz" if gz else ""))
    assert took == whole
    if case == "healthy":
        assert err is None and events == EV and not entries
    if case == "non-finite and out-of-range ts":
        assert len(events) == 3 and "1e+300" in entries[0][0]
    if case == "entries that are not objects":
        assert len(events) == 4 and "4 entr(y/ies)" in entries[0][0] and "None" in entries[0][0]
    if case.startswith("a huge string"):
        (e,) = entries
        assert "65,536 characters" in e[0] and e[2] == "schema drift"
    if case == "nested past the stream's bound":
        assert err[0] == JsonTooDeep.__name__
    if case in ("cut off", "NaN literal", "empty"):
        assert err is not None
    if case == "a 4,301-digit run in text":
        assert err is None and len(events) == len(EV)
    if case == "a non-object entry 1,000 deep":
        assert err is not None and err[0] == "ValueError" and "nested too deeply" in err[1]
    if case == "traceEvents twice":
        assert [e["ts"] for e in events] == [1, 2]  # the stream's reading: every list under the key


def test_the_whole_file_reader_reads_past_a_size_that_says_less(tmp_path, monkeypatch):
    """`_whole` reads what the file's size (a gzip: its trailer, the last member's size) says and then the rest:
    a gzip of two members (the trailer names the second only) and a file that grew after its size was taken
    are read whole, the events those of the stream; a file past FAST_MAX_BYTES once read is streamed."""
    import os

    data = json.dumps(EV * 50).encode()
    half = len(data) // 2
    two = tmp_path / "two" / "trace_view.json.gz"
    two.parent.mkdir()
    two.write_bytes(gzip.compress(data[:half], mtime=0) + gzip.compress(data[half:], mtime=0))
    assert int.from_bytes(two.read_bytes()[-4:], "little") == len(data) - half
    events, err, entries, took = _both(two.parent, monkeypatch, data, two.name)
    assert took and err is None and events == EV * 50 and not entries
    grew = tmp_path / "trace_view.json"
    grew.write_bytes(data)
    real = os.fstat

    class Small:  # the size taken before the file grew
        def __init__(self, st):
            self.st = st

        def __getattr__(self, name):
            return self.st.st_size // 3 if name == "st_size" else getattr(self.st, name)

    with monkeypatch.context() as m:
        m.setattr(traces.os, "fstat", lambda fd: Small(real(fd)))
        assert traces._whole(grew, None)[2] == EV * 50
        m.setattr(traces, "FAST_MAX_BYTES", len(data) // 2)  # (the size says less than the bound; the file is more)
        assert traces._whole(grew, None) is None


def test_the_huge_string_entry_names_the_same_offset_whatever_the_prefix(tmp_path, monkeypatch):
    """The watch's offset counts the stream's probe of the first bytes (BOM, whitespace) and the bytes each piece
    gains while it ends in a backslash: the whole-file reader names the same byte."""
    for lead in (b"", b"\xef\xbb\xbf", b"\xef\xbb\xbf\n\n  ", b"   "):
        for pad in (0, 1, 7):
            data = lead + HUGE.replace(b'"MatMul"', b'"Mat' + b"\\\\" * pad + b'Mul"')
            _, err, entries, took = _both(tmp_path, monkeypatch, data)
            assert took and err is None and len(entries) == 1


def test_whole_file_reader_gives_the_real_trace_the_stream_gives(tmp_path, monkeypatch):
    path = sample("ascend/msinsight_pytorch_2rank_level1_text") / "rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json"
    fast, slow = _read(path, True, monkeypatch), _read(path, False, monkeypatch)
    assert fast[3] and _same(fast, slow) and len(fast[0]) > 1000


def test_a_trace_above_the_bound_is_streamed(tmp_path, monkeypatch):
    p = tmp_path / "trace_view.json"
    p.write_bytes(HEALTHY)
    monkeypatch.setattr(traces, "FAST_MAX_BYTES", len(HEALTHY) - 1)
    assert traces._whole(p, None) is None
    p2 = tmp_path / "t.json.gz"  # gzip's trailer gives the size without inflating
    p2.write_bytes(gzip.compress(HEALTHY))
    assert traces._whole(p2, None) is None
    monkeypatch.setattr(traces, "FAST_MAX_BYTES", len(HEALTHY))
    assert traces._whole(p, None)[2] == EV and traces._whole(p2, None)[2] == EV


# --- the Perfetto copy ----------------------------------------------------------------------------------------


def _export(tmp_path, events) -> tuple[bytes, int]:
    p = tmp_path / "trace_view.json"
    p.write_text(json.dumps(events))
    out = io.StringIO()
    n = export_trace(p, out, convert=True)
    return out.getvalue().encode(), n


def test_export_writes_ts_and_dur_text_as_json_numbers_with_their_exact_text(tmp_path):
    odd = [{"ph": "X", "name": "b", "ts": " 15.5 ", "dur": "N/A"}, {"ph": "X", "name": "c", "ts": "1e5", "dur": "-0"},
           {"ph": "X", "name": "d", "ts": "+5", "dur": "012"}, {"ph": "X", "name": "e", "ts": "1_000", "dur": "inf"},
           {"ph": "X", "name": "f", "ts": "1e300", "dur": "5\n6"}, None, {"ph": "X", "name": "g", "ts": 1e300}]
    text, n = _export(tmp_path, EV + odd)
    got = orjson.loads(text)
    assert n == len(got) == len(EV) + 5  # the entry that is not an object and the unusable ts are left out
    assert b'"ts":1763717399999809.500,"dur":12.25' in text  # the profiler's own digits
    assert got[1]["ts"] == 1763717399999809.5 and got[1]["args"] == {"ts": "5", "Input Dims": "1,2"}  # args as written
    assert got[2] == EV[2] and got[3]["ts"] == 1763717399999809.0
    b, c, d, e, f = got[4:]
    assert (b["ts"], b["dur"]) == (15.5, "N/A") and (c["ts"], c["dur"]) == (1e5, 0)
    assert (d["ts"], d["dur"]) == (5.0, 12.0) and (e["ts"], e["dur"]) == (1000.0, "inf")  # read as the loaders do
    assert (f["ts"], f["dur"]) == ("1e300", "5\n6")  # beyond any profiler value, or no number: text stays text


def test_export_of_a_trace_holding_the_mark_is_still_exact(tmp_path):
    """A string of the trace holding the exporter's own mark: the batch is written event by event instead."""
    events = [{"ph": "X", "name": "a\u0000#x\u0000#", "ts": "\u0000#7\u0000#", "dur": "2"},
              {"ph": "X", "name": "b", "ts": "3", "dur": "4", "args": {"s": "\\u0000#"}}]
    text, n = _export(tmp_path, events)
    got = orjson.loads(text)
    assert n == 2 and got[0] == {"ph": "X", "name": "a\u0000#x\u0000#", "ts": "\u0000#7\u0000#", "dur": 2}
    assert got[1] == {"ph": "X", "name": "b", "ts": 3, "dur": 4, "args": {"s": "\\u0000#"}}


def test_export_of_many_events_keeps_every_one_in_order(tmp_path):
    events = [{"ph": "X", "name": f"op{i}", "ts": f"{1000 + i}.125", "dur": "1.5"} for i in range(10_000)]
    text, n = _export(tmp_path, events)
    got = orjson.loads(text)
    assert n == 10_000 and [e["name"] for e in got] == [e["name"] for e in events]
    assert all(g["ts"] == float(e["ts"]) and g["dur"] == 1.5 for g, e in zip(got, events))


# --- a batch at a time, a column at a time (issue 33) ----------------------------------------------------------

_ODD_VALUES = {  # field -> values that take a batch off the column path, or test its duplicate key
    "pid": ["519", 2.0, -3, 2 ** 70, None, [1], "Spans"], "tid": ["7", 1.5, None, "Ops", {"a": 1}],
    "ph": [None, 5, "i", "M"], "name": [None, [1], 3, "process_name", "thread_name"],
    "ts": ["abc", " 12.5", "1_000", 12, 12.0, "12", "nan(1)", None], "dur": [-1.0, "5", 0.0, -0.0, 5, 5.0, True, None],
    "args": ["x", {"connection_id": "text"}, {"connection_id": -2}, {"connection_id": -1}, {"connection_id": 1.5},
             {"connection_id": True}, {"connection_id": [1]}, {"connection_id": "7"}, {"name": 3},
             {"correlation": -5}, {"stream": 1.5}, {"Device Id": "x"}],
    "cat": ["cpu_op", "Trace", ["a"], None, "kernel"],
}


def _healthy(rng, n: int) -> list:
    out = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "Ascend Hardware"}},
           {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "Stream 2"}}]
    for i in range(n):
        out.append({"ph": rng.choice("XXXXsf"), "name": rng.choice(["MatMul", "AllReduce", "Free", "aten::add"]),
                    "pid": rng.choice([1, 4242]), "tid": rng.choice([2, 3]), "ts": f"{1000 + i}.{rng.randrange(1000)}",
                    "dur": rng.choice([1.5, 2.25, 0.0]), "cat": rng.choice(["cpu_op", "kernel"]),
                    "args": {"connection_id": rng.choice([i, -1])}})
    return out


def _door_state(d) -> tuple:
    return (d.n_events, list(d.bad_lane.items()), list(d.bad_args.items()), d.malformed, d.unnamed, d.dups,
            sorted(map(repr, d.threads)), list(d.on_threads.items()))


def test_the_column_door_judges_every_batch_as_event_by_event(tmp_path):
    """`TraceDoor.events` (a batch a column at a time, or event by event when the batch is not of the usual kind)
    gives the lanes, counts, examples and their order that `event` gives one event at a time: healthy traces and
    traces with odd values (lane ids as text, floats, huge, negative; no phase; names that are not text; ts / dur
    text and numbers that print alike; args values to name; exact and near duplicates), whole or in batches."""
    import copy
    import random

    from reportgen.loaders.schema import GENERIC_TRACE, GPU_TIMELINE, KINETO_TRACE, TRACE_SCHEMAS, TraceDoor

    rng = random.Random(33)
    schemas = [GENERIC_TRACE, GPU_TIMELINE, KINETO_TRACE, TRACE_SCHEMAS[1][1]]
    judged = 0
    for case in range(240):
        ev = _healthy(rng, rng.choice([0, 3, 40]))
        for _ in range(rng.choice([0, 0, 1, 2, 5])):
            if ev:
                e = rng.choice(ev)
                k = rng.choice(list(_ODD_VALUES))
                e[k] = copy.deepcopy(rng.choice(_ODD_VALUES[k]))
        for _ in range(rng.choice([0, 0, 1, 3])):  # exact duplicates, anywhere
            if ev:
                ev.insert(rng.randrange(len(ev)), copy.deepcopy(rng.choice(ev)))
        schema = schemas[case % len(schemas)]
        one = TraceDoor(IssueLog(tmp_path), tmp_path / "t.json", schema)
        want = [one.event(e) for e in ev]
        size = rng.choice([len(ev) or 1, 1, 7])
        two = TraceDoor(IssueLog(tmp_path), tmp_path / "t.json", schema)
        got = []
        for i in range(0, len(ev), size):
            got += two.events(traces.Events(ev[i:i + size], whole=size >= len(ev)))
        assert got == want, (case, schema.family)
        assert _door_state(two) == _door_state(one), (case, schema.family)
        judged += two.judge_plain(traces.Events(_healthy(rng, 5))) is not None
    assert judged == 240  # healthy batches take the column path


def test_the_door_finds_duplicates_among_events_that_share_their_start(tmp_path):
    """`schema._distinct` (the door's test that no two complete events of a whole batch can be exact duplicates)
    narrows the events to those sharing their first cheap field with another: its answer is the answer of every
    event's fields compared (the first fields that tell all events apart), and the door then keeps, skips and
    counts what it keeps, skips and counts event by event -- starts shared by many events (a torch_npu trace's
    overlap lanes start with their kernels), names, lanes and durations drawn from a few values."""
    import random

    from reportgen.loaders.schema import TRACE_SCHEMAS, TraceDoor, _distinct

    def brute(ev) -> bool:  # every complete event's key (as `TraceDoor.event` hashes it) compared with all others
        keys = [hash(tuple(str(e.get(k)) for k in ("pid", "tid", "name", "ts", "dur"))) for e in ev
                if e.get("ph") == "X"]
        return len(set(keys)) == len(keys)

    rng = random.Random(30)
    schema = TRACE_SCHEMAS[1][1]  # trace_view.json: duplicates counted once
    answers = set()
    for case in range(300):
        n = rng.choice([1, 2, 5, 30, 200])
        ev = [{"ph": rng.choice("XXXM" if case % 7 else "XXXX"), "name": rng.choice(["MatMul", "Free", "Computing"]),
               "pid": rng.choice([1, 2]), "tid": rng.choice([0, 2] if case % 3 else [0, "2"]),
               "ts": rng.choice([f"{rng.randrange(4)}.5", str(rng.randrange(3 * n))] * 4
                                + ["1.50", 1.5, 2, "nan", None, "abc"]),  # (one number, several texts; NaN)
               "dur": rng.choice([1.5, 2, "3"])} for _ in range(n)]
        b = traces.Events(ev, whole=True)
        got = _distinct(b)
        assert got == brute(ev), case
        answers.add(got)
        one = TraceDoor(IssueLog(tmp_path), tmp_path / "trace_view.json", schema)
        want = [one.event(e) for e in ev]
        two = TraceDoor(IssueLog(tmp_path), tmp_path / "trace_view.json", schema)
        assert two.events(traces.Events(ev, whole=True)) == want, case
        assert _door_state(two) == _door_state(one), case
    assert answers == {True, False}


def test_orjson_is_not_given_a_trace_nested_past_its_bound(tmp_path):
    """The whole-file reader reads no document nested past 1,024 levels (orjson refuses it from 3.9.15, the version
    pyproject.toml asks for; 3.8 had no bound and crashed the process, SIGSEGV, on the fuzz sweep's 200,000 levels):
    such a trace is streamed (the stream's guard refuses it past its own bound: cut short); 1,000 levels are still
    read whole."""
    ok = b'[{"ph": "X", "name": "a", "ts": 1, "dur": 1}]'
    for depth, whole in ((1_000, True), (1_100, False), (200_000, False)):
        for doc in (ok[:1] + b"[" * depth + b"]" * depth + b", " + ok[1:],
                    b'{"traceEvents": ' + ok[:-1] + b', {"args": {"d": ' + b"[" * depth + b"]" * depth + b"}}]}"):
            path = tmp_path / "trace_view.json"
            path.write_bytes(doc)
            assert (traces._whole(path, None) is not None) == whole, (depth, doc[:20])
            raised = False
            try:
                for _ in traces.trace_events(path):
                    pass
            except traces.TRACE_ERRORS:  # (too deep for the stream too: the loaders name it as cut short)
                raised = True
            assert raised or depth < 2_000, depth


def test_a_complete_events_column_is_the_same_read_either_way(tmp_path):
    """`Events.xcol` reads a field of the complete events alone while its whole column is unread (a torch_npu trace's
    flows: 40 % of its events), else picks them from the column: the same values in the same order, both orders of
    reading, for orjson's dicts and msgspec's typed events (odd values, absent fields, no complete event at all)."""
    import random

    rng = random.Random(7)
    for case in range(60):
        ev = [{"ph": rng.choice(["X", "X", "s", "f", "M", None, 3]), "name": rng.choice(["MatMul", None, 5, "HCCL"]),
               "pid": rng.choice([1, 2, "3", 1.5]), "ts": rng.choice(["1.5", 2, 2.5, None]),
               "dur": rng.choice([1.0, "2", None])} for _ in range(rng.choice([0, 1, 5, 40]))]
        for e in ev:
            for k in [k for k in e if e[k] is None and rng.random() < 0.5]:
                del e[k]  # (absent, not null)
        path = tmp_path / f"t{case}.json"
        path.write_bytes(orjson.dumps(ev))
        for typed in (False, True):
            batches = [list(traces.trace_batches(path, typed=typed))[0] for _ in range(2)]
            assert batches[0].typed == typed or not ev, case
            for key in ("name", "pid", "ts", "dur", "args"):
                want = [e.get(key) for e in ev if e.get("ph") == "X"]
                batches[1].col(key)  # (the whole column first: picked from it)
                assert batches[0].xcol(key) == want == batches[1].xcol(key), (case, typed, key)


def test_usable_columns_tell_a_nan_from_a_missing_value():
    """`_usable` (the whole-file reader keeps every event without a look at each): a `dur` column of floats and
    None (absent: the usual trace) passes; a NaN or an out-of-range float among them does not (`_screen` drops
    that event and names it)."""
    assert traces._usable([1.5, None, 2.0, None])
    assert traces._usable([None, None])
    assert not traces._usable([1.5, None, float("nan")])
    assert not traces._usable([float("nan"), 1.5])
    assert not traces._usable([1.5, None, 2.0 ** 63])
    assert not traces._usable([None, float("-inf")])
    assert traces._usable([1.5, None, 3, "x"]) and not traces._usable([1.5, None, 2 ** 63])


def test_floats_reads_text_as_float_and_to_float_do():
    """`trace_batch.floats` (Arrow's parser for a column of text) gives `trace_batch.num` of every value: what float() reads
    (exactly: the same double) and to_float's NaN for what it does not read, out-of-range values NaN."""
    import math
    import random

    rng = random.Random(5)
    tricky = ["1", "1.", ".5", "+5", "-5", "012", "1e5", "1E+5", "1e", "1_000", " 1", "1 ", "nan", "nan(12)", "inf",
              "-Infinity", "0x10", "", "1e400", "-0", "4.9e-324", "\u0661\u0662", "5.0f", "--5",
              "123456789012345678901234567890", "9007199254740993", "1763717400040518.855", "4611686018427387905",
              "\ud800", "N/A", "12\t"]
    rand = [f"{rng.randrange(10 ** rng.randrange(1, 19))}.{rng.randrange(10 ** 6):06d}" for _ in range(2000)]
    for vals in (tricky, rand, rand + tricky, [1.5, None, 2.0 ** 63, -0.0], [3, 2 ** 70, True, "7"], []):
        want = [trace_batch.num(v) for v in vals]
        got = trace_batch.floats(vals).tolist()
        assert len(got) == len(want)
        assert all((math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
                   for a, b in zip(got, want)), vals[:3]


def test_the_timeline_summary_is_the_same_whole_and_in_batches(tmp_path, monkeypatch):
    """summarize_trace over the whole-file reader and over the stream in batches of 3 (duplicates across a batch's
    edge, odd values): the same summary and the same data-quality entries; a complete event named by a list is
    counted as malformed (it stopped the summary with TypeError before)."""
    from reportgen.loaders.timeline import summarize_trace

    ev = EV + [dict(EV[1]), dict(EV[2], name=[1]), dict(EV[2], ts="9e9", pid="1"), dict(EV[2], dur=-1.0),
               {"ph": "X", "name": "AllReduce", "pid": 1, "tid": 3, "ts": "1763717399999950", "dur": 4.5}, dict(EV[1])]
    p = tmp_path / "trace_view.json"
    p.write_text(json.dumps(ev))

    def read():
        log = IssueLog(tmp_path, 0)
        return summarize_trace(p, log), [(i.code, i.params) for i in log.issues]

    whole = read()
    with monkeypatch.context() as m:
        m.setattr(traces, "FAST_MAX_BYTES", -1)
        m.setattr(traces, "BATCH", 3)
        assert read() == whole
    s, entries = whole
    codes = dict(entries)
    assert s.n_ops == 5 and codes["trace.duplicated-events"] == {"dups": 2}
    assert codes["trace.events-without-phase-or-name"] == {"malformed": 1}
    assert codes["trace.complete-event-without-usable"] == {"n": 1}
    assert s.communication_ms == pytest.approx(0.0045) and s.compute_ms == pytest.approx((12.25 + 3 + 3) / 1e3)


def test_the_timeline_groups_a_judged_batch_as_it_groups_the_doors_lanes(tmp_path, monkeypatch):
    """`timeline._plain_batch` (a batch the door judged a column at a time, grouped with numpy) gives what
    `_lane_batch` (the door's lanes, event by event) gives: the same process names, groups in the same order with
    the same starts and durations, tids, unusable and text / number counts, door counts and data-quality entries --
    on healthy traces and traces with odd values (duplicates, negative or text ts / dur, names that are not text,
    lane ids as text or beyond int64), whole and in batches."""
    import copy
    import random

    import numpy as np

    from reportgen.loaders import timeline
    from reportgen.loaders.schema import TraceDoor

    rng = random.Random(7)
    odd = dict(_ODD_VALUES, ts=_ODD_VALUES["ts"] + ["-5", -1.0], pid=_ODD_VALUES["pid"] + [2 ** 63 + 5],
               name=_ODD_VALUES["name"] + ["Communication", "Computing", "hcom_allReduce_1"])
    took = 0
    for case in range(200):
        ev = _healthy(rng, rng.choice([0, 3, 40, 200]))
        for e in ev:
            if rng.random() < 0.2:
                e["name"] = rng.choice(["Computing", "Free", "Communication(Not Overlapped)", "hcom_send_2"])
            if rng.random() < 0.1:
                e["pid"] = rng.choice([7, 2 ** 40])
            if rng.random() < 0.02:  # unusable: left out and counted
                e[rng.choice(["ts", "dur"])] = rng.choice(["-5", -1.0, "abc", None])
        for _ in range(rng.choice([0, 0, 1, 2, 5])):
            if ev:
                k = rng.choice(list(odd))
                rng.choice(ev)[k] = copy.deepcopy(rng.choice(odd[k]))
        for _ in range(rng.choice([0, 0, 1, 3])):
            if ev:
                ev.insert(rng.randrange(len(ev)), copy.deepcopy(rng.choice(ev)))
        p = tmp_path / "trace_view.json"
        p.write_text(json.dumps(ev))
        size = rng.choice([len(ev) or 1, 7])

        def read(fast: bool):
            calls = []
            with monkeypatch.context() as m:
                if size < len(ev):
                    m.setattr(traces, "FAST_MAX_BYTES", -1)
                    m.setattr(traces, "BATCH", size)
                plain = timeline._plain_batch
                m.setattr(timeline, "_plain_batch",
                          (lambda *a: calls.append(r := plain(*a)) or r) if fast else (lambda *a: False))
                log = IssueLog(tmp_path, 0)
                door = TraceDoor(log, p)
                got = timeline._read_trace(p, log, door)
                door.close(got[-1])
            proc, groups, tids, unusable, kinds, cut = got
            return ((proc, [(k, a.tolist(), b.tolist()) for k, (a, b) in groups.items()], tids, unusable, kinds, cut,
                     _door_state(door), [(i.code, i.params) for i in log.issues]), calls)

        (slow, _), (fast, calls) = read(False), read(True)
        assert fast == slow, case
        took += any(calls)
        ids = [k[0] for k, _, _ in fast[1]] + [t for ts in fast[2].values() for t in ts] + list(fast[2])
        assert not any(isinstance(i, np.generic) for i in ids)  # (lane ids as Python's ints, not numpy's)
    assert took > 100  # most batches take the column path


def test_the_execution_views_step_table_is_the_frame_pandas_gave():
    """`analysis.execution._per_step` gathers the ranks' (step, total) as arrays when the columns are the loaders'
    types (Int64 steps with gaps, float totals with NaN); the frame equals the one a frame a rank gave."""
    import numpy as np
    import pandas as pd

    from reportgen.analysis.execution import _per_step
    from reportgen.model import RankData, RankInfo, Run, StepTrace

    def run_of(steps_of):
        ranks = {}
        for r, (steps, totals) in steps_of.items():
            d = RankData(info=RankInfo(rank=r, source_dir="."))
            d.step_trace = StepTrace(kind="modern", source="x", steps=pd.DataFrame({"step": pd.array(steps, dtype="Int64"),
                                                                     "computing": 1.0, "total": totals}))
            ranks[r] = d
        return Run(root=Path("."), info=None, ranks=ranks, issues=[])

    steps_of = {0: ([1, 2, None, 4], [10.0, np.nan, 3.0, 4.5]), 3: ([2, 3], [1.0, 2.0]), 5: ([None], [7.0]),
                7: ([], [])}
    run = run_of(steps_of)
    got = _per_step(run, [0, 3, 5, 7, 9])
    frames = []
    for r in (0, 3, 5, 7):
        t = run.ranks[r].step_trace
        if len(t.steps):
            f = t.steps.dropna(subset=["step"])[["step", "total"]].copy()
            f["rank"] = r
            frames.append(f)
    want = pd.concat(frames, ignore_index=True)
    want["step"] = want["step"].astype(int)
    pd.testing.assert_frame_equal(got, want)
    assert got["step"].tolist() == [1, 2, 4, 2, 3] and got["rank"].tolist() == [0, 0, 0, 3, 3]


def test_a_launch_flow_without_a_usable_ts_is_left_out_and_named(tmp_path):
    """A host-to-device launch flow whose ts is negative or not a number (issue 30's fuzz: a flow's ts set to -1
    moved step 1's device window to -1 µs and changed the execution view's numbers unnamed) is left out of the
    pairing and named once: the step's device window starts at the first usable launch."""
    from reportgen.loaders.step_ops import trace_layout

    def trace(ts1) -> Path:
        ev = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "Python"}},
              {"ph": "M", "name": "process_name", "pid": 2, "tid": 0, "args": {"name": "Ascend Hardware"}},
              {"ph": "X", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": "100", "dur": 50},
              {"ph": "X", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": "150", "dur": 50}]
        for i, (host, dev) in enumerate([(110, ts1), (120, "210"), (160, "300")]):
            ev += [{"ph": "s", "cat": "HostToDevice", "id": i, "pid": 1, "tid": 1, "ts": str(host)},
                   {"ph": "f", "cat": "HostToDevice", "id": i, "pid": 2, "tid": 3, "ts": dev}]
        p = tmp_path / str(ts1) / "trace_view.json"
        p.parent.mkdir()
        p.write_text(json.dumps(ev))
        return p

    for ts1, start, named in (("200", 200.0, False), (-1, 210.0, True), ("x", 210.0, True), (None, 210.0, True)):
        log = IssueLog(tmp_path)
        lay = trace_layout(trace(ts1), log)
        assert lay.windows[1][0] == start and lay.windows[2][0] == 300.0, ts1
        codes = [(i.code, i.params) for i in log.issues]
        assert codes == ([("trace-view.flow-ts-unusable", {"n": 1})] if named else []), ts1


def test_shared_reads_parse_a_trace_once_for_readers_without_a_log(tmp_path, monkeypatch):
    """Inside `shared_reads` a trace read whole without a log is parsed once (the second reader gets the same
    events); a reader with a log (its data-quality entries depend on the reading) and a reader outside the block
    parse it again, as does a trace that is streamed."""
    events = [{"ph": "X", "name": "a", "pid": 1, "tid": 2, "ts": "10.5", "dur": 3.0},
              {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "Ascend Hardware"}}]
    p = tmp_path / "trace_view.json"
    p.write_bytes(orjson.dumps(events))
    cut = tmp_path / "cut.json"
    cut.write_bytes(orjson.dumps(events)[:-5])  # (orjson refuses it: streamed)
    parsed: list = []
    real = traces._whole
    monkeypatch.setattr(traces, "_whole", lambda path, root, *a: parsed.append(Path(path).name) or real(path, root, *a))
    with traces.shared_reads():
        first = list(traces.trace_events(p))
        again = [b.events for b in traces.trace_batches(p)]
        logged = list(traces.trace_events(p, IssueLog(tmp_path)))
        with pytest.raises(traces.TRACE_ERRORS):
            list(traces.trace_events(cut))
        with pytest.raises(traces.TRACE_ERRORS):
            list(traces.trace_events(cut))
    after = list(traces.trace_events(p))
    assert first == logged == after == events and again == [first]
    assert parsed == ["trace_view.json", "trace_view.json", "cut.json", "cut.json", "trace_view.json"]
