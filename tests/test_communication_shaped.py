"""A small communication.json (under MIN_TYPED_BYTES) decoded with every key typed (`communication_typed.
shaped_columns`): where it takes a file, the same frames, entries and key paths (`whole_shape` == `json_shape`) as
the general way; a key missing, another key, or another kind of value sends the file the general way."""

from __future__ import annotations

import json
import random

import pytest

from reportgen.loaders import communication as C
from reportgen.loaders import communication_typed as T
from reportgen.loaders.schema import json_shape
from tests.test_communication_typed import _dump, _op, _same


def _small(n: int, seed: int = 3, steps: int = 2) -> dict:
    """A document of about 1.1 n operators, every key the profiler writes (no "Total Op Info": its objects lack
    keys, see the refusal test)."""
    rng = random.Random(seed)
    doc: dict = {}
    for s in range(1, steps + 1):
        coll = {f"hcom_allReduce__{i}_{s}_1@{3985310628812055776 + i % 3}": _op(i, rng, 1.7e15 + i * 1e3 + s)
                for i in range(n)}
        p2p = {f"hcom_send__{i}_{s}@17522688603477080586": _op(i, rng, 1.7e15 + i) for i in range(n // 10)}
        doc[f"step{s}"] = {"collective": coll, "p2p": p2p}
    return doc


@pytest.mark.parametrize("n", [1, 12, 60, 90])
def test_a_small_clean_document_goes_the_typed_way_with_its_key_paths(tmp_path, monkeypatch, n):
    raw = _dump(_small(n))
    assert len(raw) < T.MIN_TYPED_BYTES
    got, log = _same(tmp_path, monkeypatch, raw, taken=True)  # (the same key paths noted: `_same` compares them)
    assert log.issues == []
    shape = json_shape(json.loads(raw))
    assert (shape is None) == (n == 90)  # (90: over the walk's cap, no shape)
    assert log.shapes == ({} if shape is None else {"communication.json": shape})
    assert len(got.ops) == 2 * (n + n // 10)


def _variant(rng: random.Random) -> dict:
    """A small document with what the typed decode admits varied: null or absent bandwidth objects, null, empty or
    extra transports (names with and without digits), Size Distribution keys with and without digits, operator and
    step names without a digit, empty kinds."""
    doc = _small(rng.randint(0, 6), rng.randint(0, 99), rng.randint(1, 3))
    for s in list(doc.values()):
        for kind, ops in list(s.items()):
            if rng.random() < 0.1:
                s[kind] = {}
                continue
            for name in list(ops):
                op = ops[name]
                r = rng.random()
                if r < 0.1:
                    op["Communication Bandwidth Info"] = None
                elif r < 0.2:
                    del op["Communication Bandwidth Info"]
                elif r < 0.25:
                    op["Communication Bandwidth Info"] = {}
                b = op.get("Communication Bandwidth Info") or {}
                for t in list(b):
                    if rng.random() < 0.15:
                        b[t] = None
                    elif rng.random() < 0.1:
                        del b[t]
                    elif rng.random() < 0.2:
                        b[t]["Size Distribution"] = {rng.choice(["x", "2.5", "y1", "big"]): [1, 0.5]
                                                     for _ in range(rng.randint(1, 3))}
                if b and rng.random() < 0.1:
                    b[rng.choice(["UB", "HCCS_SW", "LINK2"])] = dict(next((v for v in b.values() if v), None) or
                                                                     {"Transit Time(ms)": 0, "Transit Size(MB)": 0,
                                                                      "Bandwidth(GB/s)": 0, "Large Packet Ratio": 0,
                                                                      "Size Distribution": {}})
                if rng.random() < 0.05:
                    ops[rng.choice(["Total Op Info", "barrier", "x"])] = ops.pop(name)
    if rng.random() < 0.2:
        doc["last"] = doc.pop(next(iter(doc)))
    return doc


def test_the_key_paths_equal_json_shape_on_varied_documents():
    """`whole_shape` of the decoded document is `json_shape` of the same text, both limits reached or not."""
    rng = random.Random(8)
    seen = {True: 0, False: 0}
    for _ in range(300):
        raw = _dump(_variant(rng))
        doc = T._WHOLE_DECODER.decode(raw)
        for limit in (3, 12, 40, 400):
            want = json_shape(json.loads(raw), limit)
            seen[want is None] += 1
            assert T.whole_shape(doc, limit) == want, (limit, raw[:300])
    assert min(seen.values()) > 50  # both outcomes exercised


def test_varied_small_documents_read_the_same_either_way(tmp_path, monkeypatch):
    rng = random.Random(21)
    taken = 0
    for _ in range(40):
        raw = _dump(_variant(rng))
        took = C._typed_columns(raw) is not None
        taken += took
        _same(tmp_path, monkeypatch, raw, taken=took)
    assert taken > 20


@pytest.mark.parametrize("case", ["no-ratio", "no-large-ratio", "no-bandwidth", "no-start", "extra-key",
                                  "sizes-list", "transport-number", "total-op-info", "ratio-text", "times-null",
                                  "ratio-huge", "ratio-int-huge", "sizes-deep", "sizes-null", "sizes-huge", "escape",
                                  "ratio-negative", "sizes-negative"])
def test_a_key_missing_or_another_value_goes_the_general_way(tmp_path, monkeypatch, case):
    """Every value is typed (nothing left unread: no whole-text check), so whatever the careful reader would name
    in any of them (a number beyond its limits, nesting) is refused by the types; a negative ratio or size count,
    which it names nowhere, is taken."""
    doc = _small(8)
    op = next(iter(doc["step1"]["collective"].values()))
    t, b = op["Communication Time Info"], op["Communication Bandwidth Info"]
    raw = None
    if case == "no-ratio":
        del t["Wait Time Ratio"]
    elif case == "no-large-ratio":
        del b["HCCS"]["Large Packet Ratio"]
    elif case == "no-bandwidth":
        del b["SDMA"]["Bandwidth(GB/s)"]
    elif case == "no-start":
        del t["Start Timestamp(us)"]
    elif case == "extra-key":
        b["SIO"]["Foo"] = 1
    elif case == "sizes-list":  # (the walk would go below a list)
        b["HCCS"]["Size Distribution"] = [[1, 2]]
    elif case == "transport-number":
        b["PCIE"] = 0
    elif case == "total-op-info":  # as torch_npu writes it: no start, no bandwidth, no packet ratio
        doc["step1"]["collective"]["Total Op Info"] = {
            "Communication Time Info": {"Elapse Time(ms)": 1.5, "Transit Time(ms)": 1.0, "Wait Time(ms)": 0.5,
                                        "Synchronization Time(ms)": 0, "Idle Time(ms)": 0, "Wait Time Ratio": 0,
                                        "Synchronization Time Ratio": 0},
            "Communication Bandwidth Info": {"SDMA": {"Transit Time(ms)": 1.0, "Transit Size(MB)": 2.0,
                                                      "Size Distribution": {}}}}
    elif case == "ratio-text":
        t["Wait Time Ratio"] = "0.5"
    elif case == "times-null":
        op["Communication Time Info"] = None
    elif case == "ratio-huge":
        t["Wait Time Ratio"] = 1e300
    elif case == "ratio-int-huge":
        t["Wait Time Ratio"] = 2 ** 62 + 1
    elif case == "sizes-deep":
        b["HCCS"]["Size Distribution"] = {"1": [[1, 2]]}
    elif case == "sizes-null":
        b["HCCS"]["Size Distribution"] = {"1": None}
    elif case == "sizes-huge":
        raw = _dump(doc).replace(b'"Size Distribution": {}', b'"Size Distribution": {"1": [1, 1e999]}', 1)
    elif case == "escape":
        doc["step1"]["collective"]["a\"b@1"] = doc["step1"]["collective"].pop(next(iter(doc["step1"]["collective"])))
    elif case == "ratio-negative":
        t["Wait Time Ratio"] = -0.5
    elif case == "sizes-negative":
        b["HCCS"]["Size Distribution"] = {"1": [-1, 0.5]}
    raw = _dump(doc) if raw is None else raw
    _, log = _same(tmp_path, monkeypatch, raw, taken=case in ("ratio-negative", "sizes-negative"))
    if case in ("times-null", "ratio-huge", "ratio-int-huge", "sizes-huge"):
        assert log.issues, case  # the general way names it


def test_real_files_read_the_same_either_way(tmp_path, monkeypatch):
    from tests.conftest import sample

    files = sorted(sample("ascend").rglob("ASCEND_PROFILER_OUTPUT/communication.json"))
    assert files
    for f in files:
        _same(tmp_path, monkeypatch, f.read_bytes(), taken=C._typed_columns(f.read_bytes()) is not None)
