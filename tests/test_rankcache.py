"""The per-rank summary cache (reportgen.rankcache, issue 33): hit, miss on a changed file, a changed msreport, a
damaged or untrusted entry, new ranks; and the same summary.json with and without it."""

from __future__ import annotations

import json
import os
import pickle
import shutil
from pathlib import Path

import pytest

from reportgen import rankcache
from reportgen.layouts import discover, load_rank

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def run4(tmp_path_factory) -> Path:
    from reportgen.synth import generate_run

    return generate_run(tmp_path_factory.mktemp("cache") / "run", ranks=4, steps=3, seed=3, trace_view=True,
                        inject=["slow-rank:2:compute:1.3"])


class Counting:
    """load_rank that records which ranks it read (runs in this process: 4 ranks stay below the pool's minimum)."""

    def __init__(self) -> None:
        self.read: list[int] = []

    def __call__(self, rf, root, layout):
        self.read.append(rf.rank)
        return load_rank(rf, root, layout)


def _load(run: Path, folder: Path, ranks=None):
    (lay,) = discover(run)
    items = [rf for r, rf in sorted(lay.ranks.items()) if ranks is None or r in ranks]
    count = Counting()
    got = list(rankcache.map_cached(count, items, (lay.root, lay.layout), folder=folder))
    return count.read, got


def _same(a, b) -> None:
    """Two RankData summaries hold the same values (frames compared cell by cell)."""
    assert a.info == b.info
    assert a.issues == b.issues and a.files == b.files
    assert a.step_trace.steps.equals(b.step_trace.steps)
    assert a.operators.by_type.equals(b.operators.by_type) if hasattr(a.operators, "by_type") else True
    assert pickle.dumps(a.timeline) == pickle.dumps(b.timeline)


def test_hit_then_miss_on_changed_files(run4, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(run4, run)
    folder = tmp_path / ".out.msreport-cache"
    read, first = _load(run, folder)
    assert read == [0, 1, 2, 3]
    assert len(list(folder.glob("rank-*.pkl"))) == 4
    read, second = _load(run, folder)
    assert read == []  # every rank from the cache
    for a, b in zip(first, second):
        _same(a, b)
    assert [d.info.rank for d in second] == [0, 1, 2, 3]  # rank order kept
    # a newer modification time on one of rank 1's files: only rank 1 is read again
    (lay,) = discover(run)
    p = lay.ranks[1].first("step_trace_time.csv")
    st = p.stat()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    read, _ = _load(run, folder)
    assert read == [1]
    read, _ = _load(run, folder)
    assert read == []
    # rank 3's step trace gains a step at the same modification time: the size alone tells
    p = lay.ranks[3].first("step_trace_time.csv")
    st = p.stat()
    lines = p.read_text().splitlines()
    step = lines[-1].split(",")
    step[1] = str(int(step[1]) + 1)
    p.write_text("\n".join(lines + [",".join(step)]) + "\n")
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    read, third = _load(run, folder)
    assert read == [3]
    assert len(third[3].step_trace.steps) == len(first[3].step_trace.steps) + 1  # the new step is there


def test_new_ranks_read_alone(run4, tmp_path):
    folder = tmp_path / "c"
    read, _ = _load(run4, folder, ranks={0, 1})
    assert read == [0, 1]
    read, got = _load(run4, folder)
    assert read == [2, 3]
    assert [d.info.rank for d in got] == [0, 1, 2, 3]


def test_other_msreport_never_trusted(run4, tmp_path, monkeypatch):
    folder = tmp_path / "c"
    _load(run4, folder)
    monkeypatch.setattr(rankcache, "environment_key", lambda: "another msreport")
    read, _ = _load(run4, folder)
    assert read == [0, 1, 2, 3]


def test_environment_key_has_version_and_code(monkeypatch):
    import reportgen

    key = rankcache.environment_key()
    assert reportgen.__version__ in key
    rankcache.environment_key.cache_clear()
    monkeypatch.setattr(reportgen, "__version__", "999.0")
    try:
        assert rankcache.environment_key() != key and "999.0" in rankcache.environment_key()
    finally:
        rankcache.environment_key.cache_clear()


def test_environment_key_changes_with_the_json_readers(monkeypatch):
    """An entry read by another orjson or msgspec (the typed fast paths decide what a file reads) is not trusted."""
    import msgspec
    import orjson

    key = rankcache.environment_key()
    for mod in (orjson, msgspec):
        rankcache.environment_key.cache_clear()
        monkeypatch.setattr(mod, "__version__", "0.0.0-other")
        try:
            assert rankcache.environment_key() != key
        finally:
            monkeypatch.undo()
            rankcache.environment_key.cache_clear()
    assert rankcache.environment_key() == key


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "other key", "not a file", "group-writable",
                                    "body damaged", "body cut", "unknown codec"])
def test_damaged_entry_is_a_miss(run4, tmp_path, damage):
    folder = tmp_path / "c"
    _, good = _load(run4, folder)
    entry = sorted(folder.glob("rank-2-*.pkl"))[0]
    raw = entry.read_bytes()
    if damage == "garbage":
        entry.write_bytes(b"\x80\x05not a pickle at all" * 10)
    elif damage == "truncated":
        entry.write_bytes(raw[: len(raw) // 2])
    elif damage == "empty":
        entry.write_bytes(b"")
    elif damage == "other key":
        with open(entry, "wb") as f:
            pickle.dump(("some", "other", "key"), f)
            pickle.dump("not rank data", f)
    elif damage == "not a file":
        entry.unlink()
        entry.mkdir()
    elif damage in ("body damaged", "body cut", "unknown codec"):  # the key and header intact, the data not
        import io

        f = io.BytesIO(raw)
        key = pickle.load(f)
        codec, size, _crc = pickle.load(f)
        head, body = raw[:f.tell()], raw[f.tell():]
        assert codec == rankcache.CODEC and size > len(body)  # a rank's summary is stored compressed
        if damage == "body damaged":
            body = body[:40] + bytes(b ^ 0x5A for b in body[40:80]) + body[80:]
        elif damage == "body cut":
            body = body[:-10]
        else:
            head = pickle.dumps(key, protocol=pickle.HIGHEST_PROTOCOL) + pickle.dumps(("brotli-x", size, _crc))
        entry.write_bytes(head + body)
    elif damage == "group-writable":
        if not hasattr(os, "getuid"):
            pytest.skip("no file owners on this platform")
        entry.chmod(0o664)
    read, got = _load(run4, folder)
    assert read == [2]  # that rank alone is read again, nothing raised
    _same(got[2], good[2])
    if damage != "not a file":  # the entry was written again and is used next time
        read, _ = _load(run4, folder)
        assert read == []


def test_unwritable_cache_folder_builds_anyway(run4, tmp_path):
    folder = tmp_path / "c"
    folder.write_text("a file where the cache folder would go")
    read, got = _load(run4, folder)
    assert read == [0, 1, 2, 3] and len(got) == 4
    read, _ = _load(run4, folder)
    assert read == [0, 1, 2, 3]  # no cache, no error


def test_folder_beside_output(tmp_path):
    assert rankcache.folder_for(tmp_path / "site") == tmp_path / ".site.msreport-cache"
    assert rankcache.folder_for(tmp_path / "one.html") == tmp_path / ".one.html.msreport-cache"


def _summary(p: Path) -> dict:
    s = json.loads(p.read_text(encoding="utf-8"))
    s.pop("generated_at", None)
    return s


def test_report_same_with_and_without_cache(run4, tmp_path):
    """The product path: build_report writes the cache beside its output and a second build (other language,
    other thresholds) reads no rank file; summary.json equals the uncached build's."""
    from reportgen.report import BuildOptions, build_report

    plain = build_report(run4, tmp_path / "plain", BuildOptions(cache=False))
    assert not rankcache.folder_for(tmp_path / "plain").exists()
    first = build_report(run4, tmp_path / "site", BuildOptions())
    folder = rankcache.folder_for(tmp_path / "site")
    assert len(list(folder.glob("rank-*.pkl"))) == 4
    assert not any(p.name.endswith(".msreport-cache") for p in (tmp_path / "site").iterdir())
    # the execution view's two timeline passes are cached too (4 ranks with trace_view.json: 8 entries)
    assert len(list(folder.glob("call-*.pkl"))) == 8
    stamps = {p: p.stat().st_mtime_ns for p in folder.glob("*.pkl")}
    want = _summary(tmp_path / "plain" / "summary.json")
    assert _summary(tmp_path / "site" / "summary.json") == want
    assert first.summary["findings"] == plain.summary["findings"]
    # another language and other thresholds from the same cache: what a fresh build with them writes
    opts = dict(lang="zh", overrides={"slow-rank": {"critical_share": 0.99, "min_rel": 0.5}})
    build_report(run4, tmp_path / "site", BuildOptions(**opts))
    # all hits: nothing rewritten but the findings and summary.json's metrics (other thresholds: the rules ran
    # again, tests/test_run_cache.py)
    rules = {p for p in stamps if p.name.startswith(("run-rules-", "run-metrics-"))}
    assert len(rules) == 2
    assert {p: p.stat().st_mtime_ns for p in folder.glob("*.pkl") if p not in rules} == \
        {p: t for p, t in stamps.items() if p not in rules}
    build_report(run4, tmp_path / "other", BuildOptions(cache=False, **opts))
    got, fresh = _summary(tmp_path / "site" / "summary.json"), _summary(tmp_path / "other" / "summary.json")
    assert got == fresh


def test_symlinked_cache_folder_not_used(run4, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    folder = tmp_path / ".out.msreport-cache"
    folder.symlink_to(elsewhere)
    read, got = _load(run4, folder)
    assert read == [0, 1, 2, 3] and len(got) == 4
    assert not any(elsewhere.iterdir())  # nothing written through the link


def test_memo_replays_entries_and_misses_on_change(tmp_path):
    from reportgen.loaders.issuelog import IssueLog

    f = tmp_path / "input.txt"
    f.write_text("one")
    calls = []

    def call(lg):
        calls.append(1)
        lg.add(f, "a problem the call names")
        return f.read_text().upper()

    with rankcache.use(tmp_path / "c"):
        log1, log2 = IssueLog(tmp_path), IssueLog(tmp_path)
        assert rankcache.memo("t", [f], ("x",), log1, call) == "ONE"
        assert rankcache.memo("t", [f], ("x",), log2, call) == "ONE" and len(calls) == 1
        assert [i.problem for i in log2.issues] == [i.problem for i in log1.issues] == ["a problem the call names"]
        assert rankcache.memo("t", [f], ("y",), IssueLog(tmp_path), call) == "ONE" and len(calls) == 2  # other input
        f.write_text("two!")
        assert rankcache.memo("t", [f], ("y",), IssueLog(tmp_path), call) == "TWO!" and len(calls) == 3  # file changed
    assert rankcache.memo("t", [f], ("y",), IssueLog(tmp_path), call) == "TWO!" and len(calls) == 4  # no cache


def test_entry_compressed_only_when_large(tmp_path):
    big = {"values": [float(i % 7) for i in range(20_000)], "text": "x" * 10_000}
    for data, packed in ((big, True), ({"small": 1}, False)):
        path = tmp_path / ("big.pkl" if packed else "small.pkl")
        rankcache.write_entry(path, ("k",), data)
        raw = pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
        assert (path.stat().st_size < len(raw) / 4) == packed
        assert rankcache.read_entry(path, ("k",)) == data
        assert rankcache.read_entry(path, ("other",)) is None


def test_pool_workers_send_the_entry_bytes_and_the_main_process_gets_the_rank(run4, tmp_path):
    """A miss read in a worker process comes back as the bytes its entry was written from (packed once) and is
    unpacked here: the caller gets the same RankData as a load in this process, and a second pass hits."""
    (lay,) = discover(run4)
    items = [rf for _, rf in sorted(lay.ranks.items())]
    here = [load_rank(rf, lay.root, lay.layout) for rf in items]
    got = list(rankcache.map_cached(load_rank, items, (lay.root, lay.layout), folder=tmp_path / "c", jobs=2))
    assert [type(g).__name__ for g in got] == ["RankData"] * len(items)
    for a, b in zip(got, here):
        _same(a, b)
    read, again = _load(run4, tmp_path / "c")
    assert read == []
    for a, b in zip(again, here):
        _same(a, b)
    # read in the main process (one job, no pool), the data comes back as it is: nothing packed twice
    body = rankcache._load_and_store(load_rank, tmp_path / "one.pkl", ("k",), items[0], lay.root, lay.layout)
    assert type(body).__name__ == "RankData"  # in this (the main) process: the data itself


@pytest.mark.parametrize("kw", [dict(layout="mindinsight"), dict(layout="kineto"), dict(layout="mindspore_gpu"),
                                dict(layout="ascend", export="db")], ids=lambda kw: "-".join(kw.values()))
def test_every_layouts_ranks_are_cached(kw, tmp_path):
    """Every layout's rank summaries make an entry (a MindInsight rank's data pipeline holds lists of children ids
    in a frame, which the packed pickling refused: no entry, every rebuild read every rank again), and the
    entry reads back as the rank."""
    from reportgen.synth import generate_run

    run = generate_run(tmp_path / "run", ranks=2, steps=2, seed=1, **kw)
    folder = tmp_path / ".out.msreport-cache"
    read, first = _load(run, folder)
    assert read == [0, 1]
    assert len(list(folder.glob("rank-*.pkl"))) == 2
    read, second = _load(run, folder)
    assert read == []
    for a, b in zip(first, second):
        assert a.info == b.info and a.issues == b.issues and a.files == b.files
        for name in ("dataprep", "operators", "memory", "timeline", "step_trace"):
            _same_values(getattr(a, name), getattr(b, name))


def _same_values(a, b) -> None:
    """The same values: frames cell by cell (dtypes too), dataclasses field by field."""
    import dataclasses

    import pandas as pd
    from pandas.testing import assert_frame_equal

    if isinstance(a, pd.DataFrame):
        assert_frame_equal(a, b, check_exact=True)
    elif dataclasses.is_dataclass(a) and not isinstance(a, type):
        assert type(a) is type(b)
        for f in dataclasses.fields(a):
            _same_values(getattr(a, f.name), getattr(b, f.name))
    elif isinstance(a, (list, tuple)) and len(a) == len(b) and any(isinstance(x, pd.DataFrame) for x in a):
        for x, y in zip(a, b):
            _same_values(x, y)
    else:
        assert a == b
