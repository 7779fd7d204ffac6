"""communication.json's typed fast path (`loaders.communication_typed`): where it takes a file, the same frames, entries
and key paths as the general way (orjson, `_modern_columns`, the door); where the general way would name anything or
read another value, it refuses the file. One test per difference the module's docstring lists."""

from __future__ import annotations

import functools
import json
import random
import struct

import numpy as np
import pandas as pd
import pytest

from reportgen.loaders import communication as C
from reportgen.loaders import communication_typed as T
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.schema import json_shape, shape_over
from reportgen.numbers import MAX_INT

N_OPS = 800  # (960 operators) over the shape walk's cap (`shape_over`) and MIN_TYPED_BYTES: the typed path may take it


def _op(i: int, rng: random.Random, start: float) -> dict:
    tr = {t: {"Transit Time(ms)": 0, "Transit Size(MB)": 0, "Bandwidth(GB/s)": 0, "Large Packet Ratio": 0,
              "Size Distribution": {}} for t in ("RDMA", "HCCS", "PCIE", "SDMA", "SIO")}
    size, time = rng.uniform(0, 300), rng.uniform(1e-6, 2)
    for t in ("HCCS", "SDMA"):
        tr[t] = {"Transit Time(ms)": time, "Transit Size(MB)": size, "Bandwidth(GB/s)": size / time,
                 "Large Packet Ratio": 1.0, "Size Distribution": {repr(size): [1, time]}}
    w = rng.choice([0, 0.0, 2e-05, rng.uniform(0, 1)])
    return {"Communication Time Info": {
        "Start Timestamp(us)": start, "Elapse Time(ms)": time + w, "Transit Time(ms)": time, "Wait Time(ms)": w,
        "Synchronization Time(ms)": w / 2, "Idle Time(ms)": rng.uniform(0, 1e-3), "Wait Time Ratio": 0.5,
        "Synchronization Time Ratio": 0}, "Communication Bandwidth Info": tr}


def _doc(n: int = N_OPS, seed: int = 1) -> dict:
    """A document of about 1.2 n operators in 2 steps (made once per size: a copy each call)."""
    return json.loads(_doc_text(n, seed))


@functools.lru_cache(maxsize=8)
def _doc_text(n: int, seed: int) -> str:
    rng = random.Random(seed)
    doc: dict = {}
    for s in range(1, 3):
        coll = {f"hcom_allReduce__{i}_{s}_1@{3985310628812055776 + i % 3}": _op(i, rng, 1.7e15 + i * 1e3 + s)
                for i in range(n // 2)}
        p2p = {f"hcom_send__{i}_{s}@17522688603477080586": _op(i, rng, 1.7e15 + i) for i in range(n // 10)}
        coll["Total Op Info"] = {"Communication Time Info": {"Elapse Time(ms)": 1.5, "Transit Time(ms)": 1.0,
                                                             "Wait Time(ms)": 0.5, "Synchronization Time(ms)": 0,
                                                             "Idle Time(ms)": 0},
                                 "Communication Bandwidth Info": {"SDMA": {"Transit Time(ms)": 1.0,
                                                                           "Transit Size(MB)": 2.0,
                                                                           "Size Distribution": {}}}}
        doc[f"step{s}"] = {"collective": coll, "p2p": p2p}
    return json.dumps(doc)


def _first(doc: dict) -> dict:
    return next(iter(doc["step1"]["collective"].values()))


def _read(path, typed: bool, monkeypatch):
    """`load_modern_communication` of `path` (the typed path allowed or not) and whether the typed path took it."""
    taken = []
    real = C._typed_columns
    monkeypatch.setattr(C, "_typed_columns", lambda raw: taken.append(real(raw)) or taken[-1] if typed else None)
    log = IssueLog(path.parent, 0)
    got = C.load_modern_communication(path, None, log, None, 0)
    monkeypatch.setattr(C, "_typed_columns", real)
    return got, log, bool(taken) and taken[-1] is not None


def _same(tmp_path, monkeypatch, raw: bytes, *, taken: bool, name: str = "communication.json"):
    """The outcome with and without the typed path is the same: frames, entries, key paths; the typed path took
    the file exactly when `taken`. Returns the (general way's) Communication and log."""
    p = tmp_path / name
    p.write_bytes(raw)
    fast, flog, took = _read(p, True, monkeypatch)
    slow, slog, _ = _read(p, False, monkeypatch)
    assert took == taken
    assert [(i.file, str(i.problem), i.severity) for i in flog.issues] == \
        [(i.file, str(i.problem), i.severity) for i in slog.issues]
    assert flog.shapes == slog.shapes
    assert (fast is None) == (slow is None)
    if slow is not None:
        for k in ("steps", "ops", "links", "instances"):
            a, b = getattr(fast, k), getattr(slow, k)
            assert (a is None) == (b is None), k
            if a is not None:
                pd.testing.assert_frame_equal(a, b, check_exact=True)
        for c in ("communication_ms", "sdma_mb", "rdma_ms"):  # bit for bit, not only equal
            assert fast.ops[c].to_numpy().tobytes() == slow.ops[c].to_numpy().tobytes()
    return slow, slog


def _dump(doc) -> bytes:
    return json.dumps(doc).encode()


def test_a_clean_large_file_goes_the_typed_way_with_the_same_frames(tmp_path, monkeypatch):
    doc = _doc()
    got, log = _same(tmp_path, monkeypatch, _dump(doc), taken=True)
    assert log.issues == []
    # the numbers against the document itself (an independent reading: json.loads)
    ops = [(k, v) for s in doc.values() for m in s.values() for k, v in m.items() if not k.startswith("Total")]
    assert len(got.ops) == len(ops)
    assert got.ops["communication_ms"].tolist() == [v["Communication Time Info"]["Elapse Time(ms)"] for _, v in ops]
    assert got.ops["rdma_mb"].eq(0).all()
    assert got.ops["sdma_mb"].tolist() == [v["Communication Bandwidth Info"]["SDMA"]["Transit Size(MB)"]
                                           for _, v in ops]
    assert got.ops["group"].tolist() == [k.partition("@")[2] for k, _ in ops]


def test_floats_are_read_bit_for_bit_as_orjson_reads_them(tmp_path, monkeypatch):
    """Random bit patterns, long mantissas, tiny and huge exponents, integers: msgspec's floats are orjson's. (Below
    1e16: Python writes larger floats with a positive exponent, which sends the file the general way.)"""
    rng = random.Random(4)
    doc = _doc()
    for i, (name, op) in enumerate(doc["step1"]["collective"].items()):
        if name.startswith("Total"):
            continue
        t = op["Communication Time Info"]
        for k in ("Elapse Time(ms)", "Transit Time(ms)", "Wait Time(ms)", "Idle Time(ms)"):
            t[k] = rng.choice([abs(struct.unpack("d", struct.pack("Q", rng.getrandbits(62)))[0]),
                               rng.uniform(0, 1e-300), rng.randint(0, 2**53), rng.uniform(0, 1e16),
                               float(f"{rng.randint(1, 9)}.{rng.randint(0, 10**20)}e-{rng.randint(1, 320)}")])
    text = _dump(doc).replace(b"e-", b"E-", 50)  # an upper-case E too
    _same(tmp_path, monkeypatch, text, taken=True)


@pytest.mark.parametrize("case", [
    "unknown-field", "unknown-transport-field", "nonfinite-unused", "nonfinite-sizes", "int-at-limit", "text-time",
    "bool-size", "null-time", "missing-time", "negative-unused", "bandwidth-info-zero", "total-op-info-list",
    "sizes-three", "bom", "trailing", "control-char", "deep-sizes", "bad-utf8-name", "bad-utf8-in-sizes",
    "exponent-positive", "exponent-positive-read", "long-fraction", "long-integer-unused", "top-level-list",
    "step-not-object", "empty", "backslash-unused", "deep-unused"])
def test_what_the_general_way_would_name_or_read_otherwise_is_refused(tmp_path, monkeypatch, case):
    doc = _doc()
    op = _first(doc)
    t, b = op["Communication Time Info"], op["Communication Bandwidth Info"]
    raw = None
    if case == "unknown-field":
        t["Foo"] = 1
    elif case == "unknown-transport-field":
        b["SIO"]["Foo"] = "x"
    elif case == "nonfinite-unused":  # a value nobody reads, still named by the careful reader
        raw = _dump(doc).replace(b'"Wait Time Ratio": 0.5', b'"Wait Time Ratio": 1e999', 1)
    elif case == "nonfinite-sizes":
        b["HCCS"]["Size Distribution"] = {"1": [1, 5]}
        raw = _dump(doc).replace(b'{"1": [1, 5]}', b'{"1": [1, 5e999]}', 1)
    elif case == "int-at-limit":  # below MAX_INT as an integer, 2**62 as a float: `_plain_column` refuses it
        t["Elapse Time(ms)"] = MAX_INT - 1
    elif case == "text-time":
        t["Elapse Time(ms)"] = "NaN"
    elif case == "bool-size":
        b["SDMA"]["Transit Size(MB)"] = True
    elif case == "null-time":
        t["Idle Time(ms)"] = None
    elif case == "missing-time":
        del t["Idle Time(ms)"]
    elif case == "negative-unused":  # no entry either way; the typed path only admits numbers >= 0
        b["HCCS"]["Bandwidth(GB/s)"] = -1.5
    elif case == "bandwidth-info-zero":  # the general way reads a falsy non-object as {}
        op["Communication Bandwidth Info"] = 0
    elif case == "total-op-info-list":
        doc["step2"]["collective"]["Total Op Info"] = [1, 2]
    elif case == "sizes-three":  # any JSON value in Size Distribution: neither way reads it
        b["HCCS"]["Size Distribution"] = {"1": [1, 2, 3], "x": None}
    elif case == "bom":
        raw = b"\xef\xbb\xbf" + _dump(doc)
    elif case == "trailing":
        raw = _dump(doc) + b" x"
    elif case == "control-char":
        raw = _dump(doc).replace(b"hcom_allReduce__0_1_1", b"hcom_allReduce__0_1\x01", 1)
    elif case == "deep-sizes":  # 6 levels above it: 195 brackets make 201
        raw = _dump(doc).replace(b'"Size Distribution": {}', b'"Size Distribution": ' + b"[" * 195 + b"]" * 195, 1)
    elif case == "bad-utf8-name":
        raw = _dump(doc).replace(b"hcom_allReduce__0_1_1", b"hcom_allReduce__0_1\xff", 1)
    elif case == "bad-utf8-in-sizes":
        raw = _dump(doc).replace(b'"Size Distribution": {}', b'"Size Distribution": {"\xff": 1}', 1)
    elif case == "exponent-positive":  # in range, but only the values tell: still the same numbers both ways
        raw = _dump(doc).replace(b'"Wait Time Ratio": 0.5', b'"Wait Time Ratio": 5e-1', 1)
    elif case == "exponent-positive-read":  # a positive exponent anywhere: the values are looked at the general way
        raw = _dump(doc).replace(b'"Idle Time(ms)": ', b'"Idle Time(ms)": 1.5e+3, "Idle Time(ms)": ', 1)
    elif case == "long-fraction":  # 20 fraction digits (Python's repr of 0.000117...): a small number, taken
        t["Wait Time Ratio"] = 0.00011791870367106104
    elif case == "long-integer-unused":  # a value nobody reads, beyond MAX_INT: named by the careful reader
        raw = _dump(doc).replace(b'"Wait Time Ratio": 0.5', b'"Wait Time Ratio": 123456789012345678901', 1)
    elif case == "backslash-unused":  # an escape in a skipped string: the strings cannot be told from the text
        b["SIO"]["Foo"] = "a\"b"
    elif case == "deep-unused":  # a field nobody reads nested 195 deep below the operator's 5 levels: 200 + 1
        t["Foo"] = json.loads("[" * 196 + "]" * 196)
    elif case == "top-level-list":
        raw = _dump([doc])
    elif case == "step-not-object":
        doc["step3"] = 5
    elif case == "empty":
        raw = b"{}" + b" " * T.MIN_TYPED_BYTES
    raw = _dump(doc) if raw is None else raw
    # a value nobody reads is skipped (an unknown field, a negative ratio, any JSON value in Size Distribution) where
    # its numbers are usable and its nesting allowed; 5e-1 is a number like any: taken
    taken = case in ("exponent-positive", "sizes-three", "unknown-field", "unknown-transport-field",
                     "negative-unused", "long-fraction")
    _, log = _same(tmp_path, monkeypatch, raw, taken=taken)
    if case in ("nonfinite-unused", "nonfinite-sizes", "text-time", "bool-size", "null-time", "missing-time",
                "trailing", "control-char", "deep-sizes", "bad-utf8-name", "bad-utf8-in-sizes",
                "top-level-list", "long-integer-unused", "deep-unused"):
        assert log.issues, case  # the general way names it (and the typed one did not take the file)


def test_deep_but_allowed_sizes_and_negative_exponents_are_taken(tmp_path, monkeypatch):
    """Size Distribution nested 194 deep (200 with the levels above it) and numbers such as 2e-05 in it: the
    careful reader names nothing, the typed path takes the file."""
    raw = _dump(_doc()).replace(b'"Size Distribution": {}', b'"Size Distribution": ' + b"[" * 194 + b"2e-05" +
                                b"]" * 194, 1)
    _, log = _same(tmp_path, monkeypatch, raw, taken=True)
    assert log.issues == []


def test_nulls_and_absences_the_general_way_reads_as_values_are_read_the_same(tmp_path, monkeypatch):
    """A null start (NaN), a null or absent transport and absent transit figures (0.0), a null bandwidth object
    ({}): read so by both ways, no entry."""
    doc = _doc()
    ops = [o for k, o in doc["step1"]["collective"].items() if not k.startswith("Total")]
    ops[0]["Communication Time Info"]["Start Timestamp(us)"] = None
    del ops[1]["Communication Time Info"]["Start Timestamp(us)"]
    ops[2]["Communication Bandwidth Info"]["SDMA"] = None
    del ops[3]["Communication Bandwidth Info"]["SDMA"]
    del ops[4]["Communication Bandwidth Info"]["SDMA"]["Transit Size(MB)"]
    ops[5]["Communication Bandwidth Info"] = None
    del ops[6]["Communication Bandwidth Info"]
    ops[7]["Communication Bandwidth Info"] = {}
    got, log = _same(tmp_path, monkeypatch, _dump(doc), taken=True)
    assert log.issues == []
    assert got.ops["sdma_mb"].iloc[2:8].eq(0).all() and got.ops["sdma_mb"].iloc[8] > 0
    assert got.instances is not None and len(got.instances) == len(got.ops) - 2  # two without a start


def test_duplicate_keys_read_as_the_last_value_at_the_first_place(tmp_path, monkeypatch):
    doc = _doc()
    text = _dump(doc)
    first = next(iter(doc["step1"]["collective"]))
    # an operator twice (the second copy's figures, the first's place) and a time twice within an operator
    dup = b'"' + first.encode() + b'": ' + _dump(_op(0, random.Random(9), 5.0)) + b", "
    text = text.replace(b'"collective": {', b'"collective": {' + dup, 1)
    text = text.replace(b'"Idle Time(ms)": ', b'"Idle Time(ms)": 7.5, "Idle Time(ms)": ', 3)
    got, _ = _same(tmp_path, monkeypatch, text, taken=True)
    assert got.ops["idle_ms"].iloc[0] != 7.5  # (the first operator's later copy wins)


def test_a_huge_string_is_named_either_way(tmp_path, monkeypatch):
    from reportgen.loaders.screen import MAX_FIELD_CHARS

    doc = _doc()
    op = doc["step1"]["collective"].pop(next(iter(doc["step1"]["collective"])))
    doc["step1"]["collective"]["x" * (MAX_FIELD_CHARS + 5) + "@1"] = op
    _, log = _same(tmp_path, monkeypatch, _dump(doc), taken=True)
    assert len(log.issues) == 1


@pytest.mark.parametrize("n", [40, 300, 700, 1150, N_OPS])
def test_a_document_with_a_shape_goes_the_general_way(tmp_path, monkeypatch, n):
    """The key paths of a document the shape walk can list (compared across ranks) are noted as the general way
    notes them: the typed path declines such a document, and its bound never claims "no shape" for one that has
    one."""
    doc = _doc(n)
    raw = _dump(doc)
    monkeypatch.setattr(T, "MIN_TYPED_BYTES", 0)
    got = T.columns_of(T.decode(raw), raw, C._step_of_key, C.op_kind, C._OpColumns)
    assert got is not None
    if shape_over(got[1]):
        assert json_shape(json.loads(raw)) is None
    has_shape = json_shape(json.loads(raw)) is not None
    _same(tmp_path, monkeypatch, raw, taken=shape_over(got[1]))
    assert not (has_shape and shape_over(got[1]))


def test_the_typed_columns_equal_the_general_columns_on_real_files():
    """Every communication.json of the samples: decoded, the same columns as `_modern_columns` bit for bit."""
    from tests.conftest import sample

    root = sample("ascend")
    files = sorted(root.rglob("ASCEND_PROFILER_OUTPUT/communication.json"))
    assert files
    for f in files:
        raw = f.read_bytes()
        got = T.columns_of(T.decode(raw), raw, C._step_of_key, C.op_kind, C._OpColumns)
        log = IssueLog(f.parent)
        from reportgen.loaders.jsonfile import parse_json_bytes

        ref = C._modern_columns(parse_json_bytes(f, log, raw))
        assert got is not None and ref is not None, f
        cols = got[0]
        for a in ("step", "op", "group", "kind"):
            assert getattr(cols, a) == getattr(ref, a), (f, a)
        for k, v in ref.values.items():
            assert cols.values[k].tobytes() == v.tobytes(), (f, k)
        assert np.array_equal(cols.start_us, ref.start_us, equal_nan=True)


def test_a_pool_worker_keeps_its_texts_and_the_main_process_interns_them(tmp_path, monkeypatch):
    """In a pool worker the texts are not interned (the rank is pickled; the main process interns the texts as it
    reads them: `framepack.table`): the same frames either way, and after the trip every operator name is the one
    object of this process, as a rank loaded here has it."""
    import pickle
    import sys

    p = tmp_path / "communication.json"
    p.write_bytes(_dump(_doc()))
    here = C.load_modern_communication(p, None, IssueLog(tmp_path, 0), None, 0)
    monkeypatch.setattr(C, "_in_worker", lambda: True)
    there = C.load_modern_communication(p, None, IssueLog(tmp_path, 0), None, 0)
    for k in ("steps", "ops", "links", "instances"):
        pd.testing.assert_frame_equal(getattr(here, k), getattr(there, k), check_exact=True)
    names = there.ops["op"].tolist()
    assert any(n is not sys.intern(n) for n in names)  # not interned in the worker (fresh strings)
    back = pickle.loads(pickle.dumps(there, protocol=pickle.HIGHEST_PROTOCOL))
    pd.testing.assert_frame_equal(back.ops, here.ops, check_exact=True)
    assert all(a is b for a, b in zip(back.ops["op"].tolist(), here.ops["op"].tolist()))
    assert all(a is b for a, b in zip(back.instances["key"].tolist(), here.instances["key"].tolist()))


def test_instance_labels_remembered_per_group_are_those_of_each_rank():
    """`communication._labels_by_group` remembers a group's labels and keys (its operators' steps and names in
    start order): ranks that share a group get the labels the row-by-row count gives them, whatever else they
    run and in whichever order their starts put the group's operators (a reordered group is another sequence)."""
    rng = random.Random(12)
    C._GROUP_LABELS.clear()
    group = [(s, f"hcom_allReduce__{i}_{s}_1", "g1") for s in (1, 2) for i in range(6)] + \
        [(None, "hcom_broadcast__3_1", "g1"), (2, "hcom_allGather__7_2_1", "g1")]
    for trial in range(12):
        ops = list(group) + [(rng.choice([1, 2]), f"hcom_send__{i}", rng.choice(["g2", "g3"]))
                             for i in range(rng.randint(0, 9))]
        starts = np.arange(len(ops), dtype=float)
        if trial % 3 == 2:  # the group's own order differs on this rank
            rng.shuffle(starts)
        steps, names, groups = ([o[j] for o in ops] for j in range(3))
        kinds = ["collective"] * len(ops)
        cols = tuple(np.array(x, dtype=object) for x in (names, groups, kinds))
        got = C._instances(steps, names, groups, kinds, starts, np.ones(len(ops)), cols)
        want = C._instances(steps, names, groups, kinds, starts, np.ones(len(ops)))  # (row by row: no columns)
        pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert C._GROUP_LABELS  # (remembered)


def test_the_whole_text_check_of_skipped_values_never_clears_what_the_careful_checks_refuse():
    """`jsonfile.skipped_values_usable` (what the typed decode skipped, checked on the whole text): True only where
    `_fast_json`'s own checks pass (numbers small outside strings, nesting within the limit); the nesting exactly
    theirs; a group id's or a fraction's 19 digits let through, an integer's not."""
    from reportgen.loaders.jsonfile import _nesting_within, _numbers_small, _outside_strings, skipped_values_usable

    def careful(raw: bytes, limit: int) -> bool:
        o = _outside_strings(raw)
        return o is not None and _nesting_within(raw, limit, o) and _numbers_small(o)

    rng = random.Random(33)
    atoms = ["1", "0.5", "1e5", "1E+5", "2e-05", "12345678901234567890", "0.00011791870367106104", '"a1e5b"',
             '"x@1234567890123456789012"', '"[[["', '"]]]"', '"{"', '"}"', "true", "null", "-3", '"s\\\\"', "1.5e999",
             '"x.1234567890123456789012"', "123456789012345678"]

    def gen(d: int = 0) -> str:
        r = rng.random()
        if d > 8 or r < 0.4:
            return rng.choice(atoms)
        if r < 0.7:
            return "[" + ",".join(gen(d + 1) for _ in range(rng.randint(0, 4))) + "]"
        return "{" + ",".join(f'"k{i}":' + gen(d + 1) for i in range(rng.randint(0, 4))) + "}"

    for _ in range(3000):
        text, limit = gen(), rng.choice([2, 3, 5, 8, 200])
        for raw in (text.encode(), ("[" + "0," * 35000 + text + "]").encode()):  # (a small and a large text)
            lim = limit + (len(raw) > 65536)
            if skipped_values_usable(raw, lim):
                assert careful(raw, lim), text
            if not any(c.isdigit() for c in text) and "\\" not in text:  # the nesting alone: exactly theirs
                assert skipped_values_usable(raw, lim) == careful(raw, lim), text
    ok = b'{"hcom_allReduce__586_3_1@14695312458125335735": [0.00011791870367106104, 1.5]}'
    assert skipped_values_usable(ok)
    assert not skipped_values_usable(ok.replace(b"1.5", b"12345678901234567890"))
    assert not skipped_values_usable(ok.replace(b"1.5", b"1.5e+3"))
    assert not skipped_values_usable(b"[" * 201 + b"]" * 201) and skipped_values_usable(b"[" * 200 + b"]" * 200)
