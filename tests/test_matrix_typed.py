"""communication_matrix.json's typed fast path (`communication._typed_links`, `communication_typed.decode_matrix` and
`matrix_shape`): where it takes a file, the same links frame, entries and key paths as the general way (orjson,
`_modern_link_columns`, `json_shape`); where the general way would name anything or read another value, it refuses
the file and the general way reads it."""

from __future__ import annotations

import json
import random

import orjson
import pandas as pd
import pytest

from reportgen.loaders import communication as C
from reportgen.loaders import communication_typed as T
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.schema import MAX_SHAPE_PATHS, json_shape
from reportgen.numbers import MAX_INT

GROUPS = ("4893540561010384084", "5862276097510448909")


def _links(rng: random.Random, me: int, n: int, op_name: str | None) -> dict:
    out = {}
    for d in range(n):
        size, time = rng.uniform(0, 60), rng.uniform(1e-6, 1)
        li = {"Transport Type": "LOCAL" if d == me else rng.choice(["HCCS", "RDMA", "SIO"]),
              "Transit Size(MB)": size, "Transit Time(ms)": time, "Bandwidth(GB/s)": size / time}
        if op_name is not None:
            li["Op Name"] = op_name
        out[f"{me}-{d}"] = li
    return out


def _doc(seed: int = 1, steps: int = 2, width: int = 8) -> dict:
    """A matrix as torch_npu writes it: per step and kind, per op type its total and its top / middle / bottom
    samples (these with the sampled operator's name)."""
    rng = random.Random(seed)
    doc: dict = {}
    for s in range(1, steps + 1):
        coll = {}
        for t in ("allgather", "allreduce"):
            for tag in ("total", "top1", "middle", "bottom1"):
                name = None if tag == "total" else f"hcom_{t}__{rng.randint(1, 900)}_{s}_1"
                coll[f"{t}-{tag}@{GROUPS[0]}"] = _links(rng, 0, width, name)
        p2p = {f"batchsendrecv-total@{GROUPS[1]}": _links(rng, 1, 2, None)}
        doc[f"step{s}"] = {"collective": coll, "p2p": p2p}
    return doc


def _read(path, typed: bool, monkeypatch):
    """`load_modern_communication` of a matrix alone (the typed path allowed or not), and whether it took it."""
    taken = []
    real = C._typed_links
    monkeypatch.setattr(C, "_typed_links", lambda *a: taken.append(real(*a)) or taken[-1] if typed else None)
    log = IssueLog(path.parent, 0)
    got = C.load_modern_communication(None, path, log, None, 0)
    monkeypatch.setattr(C, "_typed_links", real)
    return got, log, bool(taken) and taken[-1] is not None


def _same(tmp_path, monkeypatch, raw: bytes, *, taken: bool):
    """Frames, entries and key paths the same with and without the typed path; the typed path took the file
    exactly when `taken`. Returns the general way's Communication and log."""
    p = tmp_path / "communication_matrix.json"
    p.write_bytes(raw)
    fast, flog, took = _read(p, True, monkeypatch)
    slow, slog, _ = _read(p, False, monkeypatch)
    assert took == taken
    assert [(i.file, str(i.problem), i.severity) for i in flog.issues] == \
        [(i.file, str(i.problem), i.severity) for i in slog.issues]
    assert flog.shapes == slog.shapes
    assert (fast is None) == (slow is None)
    if slow is not None:
        pd.testing.assert_frame_equal(fast.links, slow.links, check_exact=True)
        for c in ("time_ms", "size_mb", "stored_bandwidth_gbps"):  # bit for bit
            assert fast.links[c].to_numpy().tobytes() == slow.links[c].to_numpy().tobytes()
        assert fast.self_local == slow.self_local
    return slow, slog


def _dump(doc) -> bytes:
    return json.dumps(doc).encode()


def test_a_clean_matrix_goes_the_typed_way_with_the_same_links_and_key_paths(tmp_path, monkeypatch):
    doc = _doc()
    got, log = _same(tmp_path, monkeypatch, _dump(doc), taken=True)
    assert log.issues == []
    assert log.shapes  # a small document: its key paths noted (compared across ranks)
    assert next(iter(log.shapes.values())) == json_shape(doc)
    # the numbers against the document itself (an independent reading: json.loads)
    links = [(k, lk, li) for s in doc.values() for m in s.values() for k, v in m.items() for lk, li in v.items()]
    assert len(got.links) == len(links)
    assert got.links["size_mb"].tolist() == [li["Transit Size(MB)"] for _, _, li in links]
    assert got.links["stored_bandwidth_gbps"].tolist() == [li["Bandwidth(GB/s)"] for _, _, li in links]
    assert got.links["src"].tolist() == [int(lk.split("-")[0]) for _, lk, _ in links]
    assert got.links["dst"].tolist() == [int(lk.split("-")[1]) for _, lk, _ in links]
    assert got.links["transport"].tolist() == [li["Transport Type"] for _, _, li in links]
    assert got.links["op"].tolist() == [li.get("Op Name") or k.partition("-")[0] for k, _, li in links]
    assert set(got.links["scope"]) == {"total", "sample"}
    assert got.self_local == {GROUPS[0]: 0, GROUPS[1]: 1}


@pytest.mark.parametrize("case", [
    "unknown-field", "text-size", "bool-time", "null-size", "missing-bandwidth", "negative-size", "int-at-limit",
    "nonfinite", "huge-int", "number-op-name", "number-transport", "list-linkmap", "link-not-object",
    "bad-link-key", "bom", "trailing", "control-char", "bad-utf8-key", "top-level-list", "step-not-object",
    "empty", "no-links"])
def test_what_the_general_way_would_name_or_read_otherwise_is_refused(tmp_path, monkeypatch, case):
    doc = _doc()
    coll = doc["step1"]["collective"]
    first = next(iter(coll.values()))
    li = next(iter(first.values()))
    raw = None
    if case == "unknown-field":
        li["Large Packet Ratio"] = 1.0
    elif case == "text-size":
        li["Transit Size(MB)"] = "8"
    elif case == "bool-time":
        li["Transit Time(ms)"] = True
    elif case == "null-size":
        li["Transit Size(MB)"] = None
    elif case == "missing-bandwidth":
        del li["Bandwidth(GB/s)"]
    elif case == "negative-size":
        li["Transit Size(MB)"] = -1.0
    elif case == "int-at-limit":  # below MAX_INT as an integer, 2**62 as a float: `_plain_column` refuses it
        li["Transit Time(ms)"] = MAX_INT - 1
    elif case == "nonfinite":
        raw = _dump(doc).replace(b'"Bandwidth(GB/s)": ', b'"Bandwidth(GB/s)": 1e999, "x": ', 1)
    elif case == "huge-int":
        raw = _dump(doc).replace(b'"Transit Size(MB)": ', b'"Transit Size(MB)": 123456789012345678901234567890, '
                                                          b'"y": ', 1)
    elif case == "number-op-name":  # read as its text by the general way: not a text here
        li["Op Name"] = 7
    elif case == "number-transport":
        li["Transport Type"] = 3
    elif case == "list-linkmap":  # skipped silently by both readers: the typed one leaves it to the general one
        coll["allgather-top1@" + GROUPS[0]] = [1, 2]
    elif case == "link-not-object":
        first["0-9"] = 5
    elif case == "bad-link-key":
        first["0_9"] = dict(li)
    elif case == "bom":
        raw = b"\xef\xbb\xbf" + _dump(doc)
    elif case == "trailing":
        raw = _dump(doc) + b" x"
    elif case == "control-char":
        raw = _dump(doc).replace(b'"HCCS"', b'"HC\x01CS"', 1)
    elif case == "bad-utf8-key":
        raw = _dump(doc).replace(b'"step1"', b'"step1\xff"', 1)
    elif case == "top-level-list":
        raw = _dump([doc])
    elif case == "step-not-object":
        doc["step3"] = 5
    elif case == "empty":
        raw = b"{}"
    elif case == "no-links":
        raw = b'{"step1": {"collective": {}}}'
    raw = _dump(doc) if raw is None else raw
    _, log = _same(tmp_path, monkeypatch, raw, taken=False)
    if case in ("bool-time", "null-size", "missing-bandwidth", "nonfinite", "huge-int",
                "link-not-object", "bad-link-key", "trailing", "control-char", "bad-utf8-key", "top-level-list",
                "step-not-object", "empty", "no-links"):
        assert log.issues, case  # the general way names it (and the typed one did not take the file)


def test_nulls_absences_duplicates_and_total_op_info_are_read_the_same(tmp_path, monkeypatch):
    """A null or absent transport (UNKNOWN) or operator name (the op type), a key twice (its last value at its first
    place), integers, an escaped key, a "Total Op Info" entry (skipped, its keys in the key paths): taken, the same
    links and key paths, no entry."""
    doc = _doc()
    coll = doc["step1"]["collective"]
    links = [li for m in coll.values() for li in m.values()]
    links[0]["Transport Type"] = None
    del links[1]["Transport Type"]
    links[9]["Op Name"] = None
    del links[10]["Op Name"]
    links[11]["Op Name"] = ""
    links[12]["Transit Size(MB)"] = 3
    coll["Total Op Info"] = {"0-1": dict(links[2])}
    text = _dump(doc)
    text = text.replace(b'"Transit Time(ms)": ', b'"Transit Time(ms)": 7.5, "Transit Time(ms)": ', 3)
    text = text.replace(b'"0-1"', b'"0\\u002d1"', 1)
    got, log = _same(tmp_path, monkeypatch, text, taken=True)
    assert log.issues == [] and log.shapes
    assert got.links["transport"].iloc[:2].tolist() == ["UNKNOWN", "UNKNOWN"]
    assert 7.5 not in got.links["time_ms"].tolist()[:3]


@pytest.mark.parametrize("seed", range(6))
def test_the_key_paths_equal_json_shape_over_random_documents(seed):
    """`matrix_shape` against `json_shape` of the same text (an independent walk of orjson's dicts): keys with
    and without digits, optional keys here and there, documents below and beyond the path and value limits."""
    rng = random.Random(seed)
    doc: dict = {}
    for s in range(rng.randint(1, 4)):
        skey = rng.choice([f"step{s}", f"s{'x' * s}", "total"])
        kinds = doc.setdefault(skey, {})
        for kind in rng.sample(["collective", "p2p", "k2"], rng.randint(1, 3)):
            ops = kinds.setdefault(kind, {})
            for _ in range(rng.randint(0, 40 if seed % 3 else 400)):
                key = rng.choice([f"allreduce-top1@{rng.randint(1, 9)}", "sendrecv-total", f"op{rng.randint(0, 5)}",
                                  rng.choice(["alpha", "beta", "gamma"])])
                lm = ops.setdefault(key, {})
                for _ in range(rng.randint(0, 6)):
                    li = {"Transit Size(MB)": 1.0, "Transit Time(ms)": 2, "Bandwidth(GB/s)": 0.5}
                    if rng.random() < 0.7:
                        li["Transport Type"] = rng.choice(["HCCS", None])
                    if rng.random() < 0.4:
                        li["Op Name"] = rng.choice(["hcom_x", None])
                    lm[rng.choice([f"{rng.randint(0, 7)}-{rng.randint(0, 7)}", "self", "a-b"])] = li
    raw = orjson.dumps(doc)
    dec = T.decode_matrix(raw)
    ref = json_shape(orjson.loads(raw))
    if dec is None:
        assert doc == {}
        return
    assert T.matrix_shape(dec) == ref
    for limit in (3, 10, 40):
        assert T.matrix_shape(dec, limit) == json_shape(orjson.loads(raw), limit)


def test_a_document_past_the_limits_has_no_key_paths_either_way(tmp_path, monkeypatch):
    doc = _doc(width=4, steps=MAX_SHAPE_PATHS // 4)  # operator keys hold digits: `*`; step keys too
    # past the count of values walked: no paths (None) from both walks
    assert json_shape(doc) is None
    _, log = _same(tmp_path, monkeypatch, _dump(doc), taken=True)
    assert log.shapes == {}


def test_the_typed_links_equal_the_general_links_on_real_files():
    """Every communication_matrix.json of the samples: taken by the typed path, the same links and key paths."""
    from tests.conftest import sample

    root = sample("ascend")
    files = sorted(root.rglob("ASCEND_PROFILER_OUTPUT/communication_matrix.json"))
    assert files
    for f in files:
        raw = f.read_bytes()
        tlog, glog = IssueLog(f.parent), IssueLog(f.parent)
        got = C._typed_links(raw, f, tlog)
        from reportgen.loaders.jsonfile import read_json

        ref = C._modern_link_columns(read_json(f, glog))
        assert got is not None and ref is not None, f
        pd.testing.assert_frame_equal(got.frame(), ref.frame(), check_exact=True)
        assert tlog.shapes == glog.shapes and tlog.shapes, f
        assert not tlog.issues and not glog.issues

