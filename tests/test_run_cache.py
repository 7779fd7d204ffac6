"""The whole-run results cached beside the output (issue 33, the rebuild: `rankcache.run_memo` through
`report.analyse_phase`): a second build of the same run (another language, other thresholds) takes the analysis and
the findings from the cache and writes what a build without any cache writes; a changed rank file, a setting the
analysis reads, a damaged entry or another msreport make it compute them again, and say nothing about it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from reportgen import rankcache, report
from reportgen.report import BuildOptions, build_report
from reportgen.site.render import builder, csv_store
from reportgen.site.render.csv_text import csv_text

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SLOW_RANK = {"slow-rank": {"critical_share": 0.99, "min_rel": 0.5}}  # a threshold only the rules read


@pytest.fixture(scope="module", autouse=True)
def large_and_forked():
    """Every build here as a large run's (gzipped CSV downloads: the CSV store) and its rank pages written by forked
    writers (the store's share sent back from them)."""
    from reportgen import urls
    from reportgen.site.render import builder

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(urls, "LARGE_RUN_RANKS", 2)
        mp.setattr(builder, "PARALLEL_MIN_PAGES", 2)
        yield


@pytest.fixture(scope="module")
def run4(tmp_path_factory) -> Path:
    from reportgen.synth import generate_run

    return generate_run(tmp_path_factory.mktemp("runcache") / "run", ranks=4, steps=3, seed=5, trace_view=True,
                        inject=["slow-rank:2:compute:1.3"])


class Calls:
    """Counts the analyses and the rule passes the pipeline runs (the real functions do the work)."""

    def __init__(self, monkeypatch) -> None:
        self.analyze = self.rules = 0
        real_analyze, real_rules = report.analyze, report.run_rules

        def analyze(*a, **k):
            self.analyze += 1
            return real_analyze(*a, **k)

        def rules(*a, **k):
            self.rules += 1
            return real_rules(*a, **k)
        monkeypatch.setattr(report, "analyze", analyze)
        monkeypatch.setattr(report, "run_rules", rules)

    def take(self) -> tuple[int, int]:
        out, (self.analyze, self.rules) = (self.analyze, self.rules), (0, 0)
        return out


def _site(out: Path) -> dict:
    """Every file of a site (summary.json without its generated_at)."""
    files = {}
    for p in sorted(out.rglob("*")):
        if p.is_file():
            if p.name == "summary.json":
                s = json.loads(p.read_text(encoding="utf-8"))
                s.pop("generated_at", None)
                files[str(p.relative_to(out))] = s
            else:
                files[str(p.relative_to(out))] = p.read_bytes()
    return files


def _same_site(a: Path, b: Path) -> None:
    sa, sb = _site(a), _site(b)
    assert sorted(sa) == sorted(sb)
    differ = [k for k in sa if sa[k] != sb[k]]
    assert not differ, differ[:5]


def _entries(out: Path) -> dict:
    return {p.name: p.stat().st_mtime_ns for p in rankcache.folder_for(out).glob("run-*.pkl")}


@pytest.fixture(scope="module")
def fresh(run4, tmp_path_factory) -> dict:
    """Builds without any cache, one per set of options the tests rebuild with."""
    base = tmp_path_factory.mktemp("fresh")
    out = {}
    for name, opts in {"zh": dict(lang="zh"), "set": dict(lang="zh", overrides=SLOW_RANK),
                       "peak": dict(lang="zh", overrides=SLOW_RANK, peak_tflops=123.0)}.items():
        build_report(run4, base / name, BuildOptions(cache=False, **opts))
        out[name] = base / name
    assert not any(p.name.endswith(".msreport-cache") for p in base.iterdir())
    return out


def test_rebuild_takes_the_analysis_and_findings_from_the_cache(run4, fresh, tmp_path, monkeypatch):
    calls = Calls(monkeypatch)
    site = tmp_path / "site"
    build_report(run4, site, BuildOptions(lang="en", jobs=2))
    assert calls.take() == (1, 1)
    entries = _entries(site)
    # the analysis, the findings and summary.json's metrics (the same in every language) of the one run
    assert sorted(n.split("-")[1] for n in entries) == ["analysis", "metrics", "rules"]
    folder = rankcache.folder_for(site)
    en_tables = set(csv_store.CsvStore(folder, builder.CSV_GZIP).old)
    # another language: both from the cache, nothing rewritten, the site a fresh build in that language writes
    build_report(run4, site, BuildOptions(lang="zh", jobs=2))
    assert calls.take() == (0, 0)
    assert _entries(site) == entries
    _same_site(site, fresh["zh"])
    # the gzipped CSVs: the rank pages' tables are the same in both languages (kept), the cluster tables with
    # translated headers are others; the same build again writes every table from the store (not saved again)
    n = len(list((site / "ranks").glob("*.csv.gz")))
    zh_tables = set(csv_store.CsvStore(folder, builder.CSV_GZIP).old)
    assert n >= 3 and len(en_tables & zh_tables) >= n and zh_tables != en_tables
    stamp = (folder / csv_store.ENTRY).stat().st_mtime_ns
    build_report(run4, site, BuildOptions(lang="zh", jobs=2))
    assert (folder / csv_store.ENTRY).stat().st_mtime_ns == stamp
    _same_site(site, fresh["zh"])
    # a threshold only the rules read: the rules again, the analysis from the cache
    build_report(run4, site, BuildOptions(lang="zh", overrides=SLOW_RANK))
    assert calls.take() == (0, 1)
    _same_site(site, fresh["set"])
    # a setting the analysis reads (--peak-tflops): both again
    build_report(run4, site, BuildOptions(lang="zh", overrides=SLOW_RANK, peak_tflops=123.0))
    assert calls.take() == (1, 1)
    _same_site(site, fresh["peak"])
    build_report(run4, site, BuildOptions(lang="zh", overrides=SLOW_RANK, peak_tflops=123.0))
    assert calls.take() == (0, 0)
    _same_site(site, fresh["peak"])


def test_changed_rank_file_or_msreport_computes_again(run4, fresh, tmp_path, monkeypatch):
    run = tmp_path / "run"
    shutil.copytree(run4, run)
    calls = Calls(monkeypatch)
    site = tmp_path / "site"
    build_report(run, site, BuildOptions(lang="zh"))
    build_report(run, site, BuildOptions(lang="zh"))
    assert calls.take() == (1, 1)
    # a newer modification time on one rank's step trace: that rank read again, the run analysed again
    from reportgen.layouts import discover

    (lay,) = discover(run)
    p = lay.ranks[1].first("step_trace_time.csv")
    st = p.stat()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    build_report(run, site, BuildOptions(lang="zh"))
    assert calls.take() == (1, 1)
    # another msreport (its environment key): never trusted
    monkeypatch.setattr(rankcache, "environment_key", lambda: "another msreport")
    build_report(run, site, BuildOptions(lang="zh"))
    assert calls.take() == (1, 1)
    s = json.loads((site / "summary.json").read_text(encoding="utf-8"))
    want = json.loads((fresh["zh"] / "summary.json").read_text(encoding="utf-8"))
    for x in (s, want):
        x.pop("generated_at", None)
        x["run"].pop("path", None)
    assert s == want


def test_damaged_run_entry_is_a_miss_named_nowhere(run4, fresh, tmp_path, monkeypatch):
    site = tmp_path / "site"
    build_report(run4, site, BuildOptions(lang="zh"))
    calls = Calls(monkeypatch)
    for damage in ("garbage", "truncated", "body damaged", "empty"):
        for entry in sorted(rankcache.folder_for(site).glob("run-*.pkl")):
            raw = entry.read_bytes()
            if damage == "garbage":
                entry.write_bytes(b"\x80\x05not a pickle at all" * 10)
            elif damage == "truncated":
                entry.write_bytes(raw[: len(raw) // 2])
            elif damage == "body damaged":
                entry.write_bytes(raw[:-40] + bytes(b ^ 0xFF for b in raw[-40:]))
            else:
                entry.write_bytes(b"")
        build_report(run4, site, BuildOptions(lang="zh"))
        assert calls.take() == (1, 1), damage  # computed again (and the entries written again)
        _same_site(site, fresh["zh"])  # nothing about the cache in the report (its data-quality notes included)
    build_report(run4, site, BuildOptions(lang="zh"))
    assert calls.take() == (0, 0)


def test_run_memo_keys_and_references(tmp_path):
    """The result's references to this build's objects are stored as references and resolved against the objects
    of the build that reads it: the very objects, not copies; a reference the reader lacks is a miss."""
    from reportgen.i18n import lazy

    shared = {"big": [1, 2, 3]}
    calls = []

    def call():
        calls.append(1)
        return {"ref": shared["big"], "own": [4, 5]}

    with rankcache.use(tmp_path / "c"):
        got = rankcache.run_memo("t", "run", ("k", 1), {("big",): shared["big"]}, call)
        assert got["ref"] is shared["big"] and len(calls) == 1
        other = [1, 2, 3]
        got = rankcache.run_memo("t", "run", ("k", 1), {("big",): other}, call)
        assert len(calls) == 1 and got["ref"] is other and got["own"] == [4, 5]
        got = rankcache.run_memo("t", "run", ("k", 1), {}, call)  # the reference cannot be resolved: a miss
        assert len(calls) == 2 and got["ref"] is shared["big"]
        rankcache.run_memo("t", "run", ("k", 2), {("big",): other}, call)  # other inputs: a miss
        assert len(calls) == 3
        # a result `keep` refuses (summary.json's metrics holding a lazily translated text) is not stored
        assert rankcache.run_memo("u", "run", ("k",), {}, call, keep=lambda r: False)["own"] == [4, 5]
        assert rankcache.run_memo("u", "run", ("k",), {}, call)["own"] == [4, 5] and len(calls) == 5
        assert not report._plain({"a": [1, 2.5, None, {"b": lazy("text")}]}) and report._plain({"a": [1, "x"]})
        # written by a forked process: there when `settle` returns (the end of the `use` block)
        rankcache.run_memo("v", "run", ("k",), {}, call, background=True)
        rankcache.settle()
        rankcache.run_memo("v", "run", ("k",), {}, call)
        assert len(calls) == 6
    rankcache.run_memo("t", "run", ("k", 2), {("big",): other}, call)  # no cache folder: just the call
    assert len(calls) == 7


def test_no_whole_run_cache_without_every_rank_key(run4, tmp_path):
    """A rank served without the cache (no key) leaves nothing to key the analysis by: no entry is used."""
    from reportgen.layouts import discover

    (lay,) = discover(run4)
    opts = BuildOptions()
    assert report.analysis_inputs(lay, opts, [None] * len(lay.ranks)) is None
    keys = [("key", r) for r in sorted(lay.ranks)]
    ident, key = report.analysis_inputs(lay, opts, keys)
    assert report.analysis_inputs(lay, BuildOptions(device_memory_mb=1.0), keys)[1] != key
    assert report.analysis_inputs(lay, BuildOptions(marey_steps=(2,)), keys)[1] != key
    assert report.analysis_inputs(lay, BuildOptions(lang="zh", overrides=SLOW_RANK), keys) == (ident, key)
    assert report.analysis_inputs(lay, opts, keys[:-1] + [("key", "other")])[1] != key


def test_csv_store_fingerprint_tells_every_cell(tmp_path):
    """A table's fingerprint changes with any cell, its type (1, 1.0, "1"), a float's sign (-0.0), a label or a key;
    a cell that is not a plain value (a lazily translated text) gives none. A hit returns what csv_text and gzip
    write; a damaged store is a miss; the store keeps only the tables of the last build."""
    import gzip

    import numpy as np

    from reportgen.i18n import lazy

    cols = [{"key": "a", "label": "A"}, {"key": "b", "label": "B"}]
    base = {"a": [1, "x", None], "b": np.array([0.5, 0.0, 2.0])}
    fp = csv_store.fingerprint(cols, base, 3)
    assert fp == csv_store.fingerprint(cols, {"a": [1, "x", None], "b": np.array([0.5, 0.0, 2.0])}, 3)
    others = [({**base, "a": [1.0, "x", None]}, cols), ({**base, "a": ["1", "x", None]}, cols),
              ({**base, "a": [True, "x", None]}, cols), ({**base, "b": np.array([0.5, -0.0, 2.0])}, cols),
              ({**base, "b": np.array([0.5, 0.0, 2.0], dtype=np.float32)}, cols),
              ({**base, "b": [0.5, 0.0, 2.0]}, cols), (base, [cols[0], {"key": "b", "label": "B (ms)"}]),
              (base, [cols[1], cols[0]])]
    assert len({fp, *(csv_store.fingerprint(c, t, 3) for t, c in others)}) == len(others) + 1
    assert csv_store.fingerprint(cols, {**base, "a": [lazy("unknown"), "x", None]}, 3) is None
    assert csv_store.fingerprint(cols, {**base, "b": np.array(["p", "q", "r"], dtype=object)}, 3) is None

    rows = [{"a": 1, "b": 0.5}, {"a": "x, y", "b": -0.0}, {"a": None, "b": 1e20}]
    want = gzip.compress(csv_text(cols, rows).encode("utf-8"), compresslevel=9, mtime=0)
    folder = tmp_path / "c"
    first = csv_store.CsvStore(folder, 9)
    assert first.gz(cols, rows) == want
    first.save()
    again = csv_store.CsvStore(folder, 9)
    assert len(again.old) == 1 and again.gz(cols, rows) == want and not again.new  # a hit
    assert csv_store.CsvStore(folder, 6).old == {}  # another level: another store
    other = [dict(r, b=1.5) for r in rows]
    later = csv_store.CsvStore(folder, 9)
    later.gz(cols, other)
    later.save()  # the tables of this build only: the first table's gone, the other one kept
    kept = csv_store.CsvStore(folder, 9).old
    assert len(kept) == 1 and gzip.decompress(next(iter(kept.values()))).decode() == csv_text(cols, other)
    entry = folder / csv_store.ENTRY
    raw = entry.read_bytes()
    entry.write_bytes(raw[:-10] + bytes(b ^ 0xFF for b in raw[-10:]))
    damaged = csv_store.CsvStore(folder, 9)
    assert damaged.old == {}  # a miss: the table written again
    assert gzip.decompress(damaged.gz(cols, other)).decode() == csv_text(cols, other)


def test_a_coded_column_writes_and_tells_its_cells(tmp_path):
    """A column of codes into distinct values (`CodedColumn`, a rank's communication operators) writes the CSV its
    list writes and reads as that list; its fingerprint tells the codes and every distinct value (their types
    too), and gives none when a value is not a plain one."""
    import numpy as np

    from reportgen.i18n import lazy
    from reportgen.site.plan.page import LazyRows
    from reportgen.site.render.csv_text import CodedColumn, values_key

    def coded(codes, values):
        arr = np.empty(len(values), dtype=object)
        arr[:] = values
        return CodedColumn(np.array(codes), arr, values_key(arr))

    cols = [{"key": "op", "label": "Op"}, {"key": "t", "label": "T (ms)"}]
    values = ["b,x", "a", float("nan"), 'q"']
    col = coded([1, 0, 2, 3, 1, -1], values)
    as_list = [values[i] for i in (1, 0, 2, 3, 1, -1)]
    times = np.array([1.5, 2.0, np.nan, 0.25, -0.0, 1e20])
    assert list(col) == col.tolist() == as_list and len(col) == 6 and col[1] == "b,x" and col[4:] == as_list[4:]
    assert csv_text(cols, LazyRows(lambda: {"op": col, "t": times}, columns=True)) == \
        csv_text(cols, LazyRows(lambda: {"op": as_list, "t": times}, columns=True))
    fp = csv_store.fingerprint(cols, {"op": col, "t": times}, 6)
    assert fp is not None and fp == csv_store.fingerprint(cols, {"op": coded([1, 0, 2, 3, 1, -1], values), "t": times}, 6)
    others = [coded([1, 0, 2, 3, 1, 0], values), coded([1, 0, 2, 3, 1, -1], ["b,x", "A", float("nan"), 'q"']),
              coded([1, 0, 2, 3, 1, -1], ["b,x", "a", None, 'q"']), coded([1, 0, 2, 3, 1, -1], ["b,x", 1, float("nan"), 'q"']),
              coded(np.array([1, 0, 2, 3, 1, -1], dtype=np.int32), values)]
    assert len({fp, *(csv_store.fingerprint(cols, {"op": c, "t": times}, 6) for c in others)}) == len(others) + 1
    assert csv_store.fingerprint(cols, {"op": coded([0, 1], [lazy("unknown"), "x"]), "t": times[:2]}, 2) is None
    store = csv_store.CsvStore(tmp_path / "c", 9)
    assert store.gz(cols, LazyRows(lambda: {"op": col, "t": times}, columns=True)) == \
        csv_store.compress(csv_text(cols, LazyRows(lambda: {"op": as_list, "t": times}, columns=True)), 9)


def test_csv_gzip_level_follows_the_size_of_the_text(tmp_path):
    """A download's level is the small tables' up to the size bound, the large tables' above, whichever way it is
    written (the store or without one); a store of other levels is another store."""
    import gzip
    import zlib

    levels = csv_store.GzipLevels(small=9, large=1, large_bytes=2000)
    cols = [{"key": "name", "label": "Name"}, {"key": "v", "label": "V"}]
    small = [{"name": f"op{i}", "v": i / 7} for i in range(20)]
    large = [{"name": f"op{i % 13}", "v": (i % 97) / 7} for i in range(2000)]
    for rows in (small, large):
        text = csv_text(cols, rows).encode("utf-8")
        level = 9 if len(text) <= 2000 else 1
        want = gzip.compress(text, compresslevel=level, mtime=0)
        assert want != gzip.compress(text, compresslevel=10 - level, mtime=0)  # (the levels write other bytes)
        assert csv_store.gz_csv(cols, rows, levels) == want
        store = csv_store.CsvStore(tmp_path / "c", levels)
        with csv_store.use(store):
            assert csv_store.gz_csv(cols, rows, levels) == want
        assert gzip.decompress(want) == text and zlib.crc32(text) == int.from_bytes(want[-8:-4], "little")
    store.save()
    assert csv_store.CsvStore(tmp_path / "c", levels).old
    assert csv_store.CsvStore(tmp_path / "c", levels._replace(large=6)).old == {}
    assert csv_store.CsvStore(tmp_path / "c", 9).old == {}
    assert builder.CSV_GZIP.level(1) == 9 and builder.CSV_GZIP.level(10**6) < 9


def test_a_run_level_file_rewritten_during_the_load_is_read_again_next_time(tmp_path, monkeypatch):
    """The run-level files are keyed by what they were before the load: one rewritten while the ranks are read (a
    live job) makes the next build compute everything again (keyed after the load, the results read from the old
    content would have been kept under the new file's key for good)."""
    out = tmp_path / "run" / "cluster_analysis_output"
    out.mkdir(parents=True)
    header = ("Step,Type,Index,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,"
              "Communication(Not Overlapped and Exclude Receive)\n")
    rows = "".join(f",rank,{r},{800 + 10 * r}.5,{120 - r}.25,5.0,{125 - r}.25,30.0,{960 + r}.0,0.0,{120 - r}.25\n"
                   for r in range(4))
    csv = out / "cluster_step_trace_time.csv"
    csv.write_text(header + rows, encoding="utf-8")
    calls = Calls(monkeypatch)
    real_load = report.load_phase

    def load_then_rewrite(*a, **k):
        run = real_load(*a, **k)
        csv.write_text(header + rows.replace("800.5", "1800.5"), encoding="utf-8")  # the job wrote it meanwhile
        st = csv.stat()
        os.utime(csv, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
        return run
    site = tmp_path / "site"
    with monkeypatch.context() as m:
        m.setattr(report, "load_phase", load_then_rewrite)
        build_report(tmp_path / "run", site, BuildOptions(lang="en"))
    assert calls.take() == (1, 1)
    build_report(tmp_path / "run", site, BuildOptions(lang="en"))
    assert calls.take() == (1, 1)  # the file changed since the load that made the entries: computed again
    build_report(tmp_path / "run", site, BuildOptions(lang="en"))
    assert calls.take() == (0, 0)
    fresh = tmp_path / "fresh"
    build_report(tmp_path / "run", fresh, BuildOptions(lang="en", cache=False))
    _same_site(site, fresh)


def test_an_analysis_from_the_cache_leaves_no_collective_instances(run4, tmp_path, monkeypatch):
    """A rebuild drops every rank's collective instances after the analysis, as a build that computes it does (the
    page writers forked after it would each hold them)."""
    seen = []
    real = report.plan_pages

    def plan(analysis, *a, **k):
        seen.append(sum(d.communication is not None and d.communication.instances is not None
                        for d in analysis.run.ranks.values()))
        return real(analysis, *a, **k)
    monkeypatch.setattr(report, "plan_pages", plan)
    calls = Calls(monkeypatch)
    site = tmp_path / "site"
    for lang in ("en", "zh"):
        build_report(run4, site, BuildOptions(lang=lang))
    assert calls.take() == (1, 1)  # the second from the cache
    assert seen == [0, 0]


def test_the_code_digest_covers_the_data_files(tmp_path):
    """Another peak table (`reportgen/data/peaks.toml`, read by the analysis, edited by users) is another
    environment: entries made with the old one are not trusted."""
    (tmp_path / "data").mkdir()
    (tmp_path / "mod.py").write_text("x = 1\n", encoding="utf-8")
    peaks = tmp_path / "data" / "peaks.toml"
    peaks.write_text("[h100]\nbf16 = 989.5\n", encoding="utf-8")
    a = rankcache.code_digest(tmp_path)
    assert rankcache.code_digest(tmp_path) == a
    peaks.write_text("[h100]\nbf16 = 1.5\n", encoding="utf-8")
    b = rankcache.code_digest(tmp_path)
    (tmp_path / "mod.py").write_text("x = 2\n", encoding="utf-8")
    assert len({a, b, rankcache.code_digest(tmp_path)}) == 3


def test_settle_stops_an_entry_writer_that_hangs(monkeypatch):
    """A forked entry writer that never ends does not hold the build: stopped after the timeout."""
    import time

    pid = os.fork()
    if pid == 0:  # pragma: no cover  (the child: hangs until killed)
        time.sleep(60)
        os._exit(0)
    monkeypatch.setattr(rankcache, "_children", [pid])
    t0 = time.monotonic()
    rankcache.settle(timeout=0.3)
    assert time.monotonic() - t0 < 5
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped


def test_a_table_named_by_its_source_is_found_without_being_built(tmp_path):
    """A table that names its source (`SourcedRows`: a rank's operators as sealed) is found in the store by it and
    its columns without being built; another source, other column labels or no source build it (a table of another
    source is never served a stale file)."""
    from reportgen.site.render.csv_text import SourcedRows

    cols = [{"key": "a", "label": "A"}, {"key": "b", "label": "B"}]
    table = {"a": ["x", "y, z"], "b": [1.5, None]}
    calls = []

    def build(t=table):
        calls.append(1)
        return t

    def never():
        raise AssertionError("a table found by its source was built")

    want = csv_store.compress(csv_text(cols, [dict(zip(table, row)) for row in zip(*table.values())]), 9)
    folder = tmp_path / "c"
    first = csv_store.CsvStore(folder, 9)
    assert not first.holds(cols, b"src-a")
    assert first.gz(cols, SourcedRows(build, b"src-a")) == want and len(calls) == 1
    assert first.holds(cols, b"src-a") and first.gz(cols, SourcedRows(never, b"src-a")) == want
    first.save()
    again = csv_store.CsvStore(folder, 9)
    with csv_store.use(again):
        assert csv_store.holds(cols, b"src-a") and not csv_store.holds(cols, b"src-b")
    assert again.gz(cols, SourcedRows(never, b"src-a")) == want and not again.new  # a hit: nothing built
    other = {"a": ["x", "q"], "b": [1.5, None]}
    got = again.gz(cols, SourcedRows(lambda: build(other), b"src-b"))
    assert got != want and len(calls) == 2  # another source: built
    relabelled = [cols[0], {"key": "b", "label": "B (ms)"}]
    assert not again.holds(relabelled, b"src-a")
    assert again.gz(relabelled, SourcedRows(build, b"src-a")) != want and len(calls) == 3  # another header: built
    assert again.gz(cols, SourcedRows(build, None)) == want and len(calls) == 4  # no source: built (then its cells hit)


def test_a_sealed_object_is_told_by_its_digest_and_held_until_read():
    """`Sealed.digest` is the same for equal objects and changes with any value; `held` gives the `Sealed` a
    holder still keeps for a field, none once the field is its own (read or set)."""
    import types

    import pandas as pd

    from reportgen.sealed import Sealed, held

    frame = pd.DataFrame({"name": ["a", "b"], "total_ms": [1.0, 2.0]})
    one = Sealed.of({"detail": frame})
    assert one.digest() == Sealed.of({"detail": frame.copy()}).digest()
    assert one.digest() != Sealed.of({"detail": frame.assign(total_ms=[1.0, 2.5])}).digest()
    assert one.digest() != Sealed.of({"detail": frame.assign(name=["a", "c"])}).digest()
    holder = types.SimpleNamespace(_sealed={"operators": one})
    assert held(holder, "operators") is one and held(holder, "memory") is None
    holder.operators = "opened"
    assert held(holder, "operators") is None


def test_a_rank_whose_operators_changed_gets_its_new_csv(run4, tmp_path):
    """Rebuilds find a rank's operator CSV by its operators as sealed (`SourcedRows`); a rank whose operator file
    changed gets the CSV of its new operators: the site a build without any cache writes."""
    run = tmp_path / "run"
    shutil.copytree(run4, run)
    site = tmp_path / "site"
    build_report(run, site, BuildOptions(lang="en", jobs=2))
    build_report(run, site, BuildOptions(lang="zh", jobs=2))  # (from the rank cache: the operators sealed)
    before = (site / "ranks" / "rank-1-operators.csv.gz").read_bytes()
    build_report(run, site, BuildOptions(lang="zh", jobs=2))
    assert (site / "ranks" / "rank-1-operators.csv.gz").read_bytes() == before
    kernels = next(run.glob("*_100001_*/ASCEND_PROFILER_OUTPUT/kernel_details.csv"))
    text = kernels.read_text()
    assert "aclnnMatMulV3_1," in text
    kernels.write_text(text.replace("aclnnMatMulV3_1,", "aclnnMatMulV3_X,"))
    st = kernels.stat()
    os.utime(kernels, ns=(st.st_atime_ns, st.st_mtime_ns + 10**10))
    build_report(run, site, BuildOptions(lang="zh", jobs=2))
    assert (site / "ranks" / "rank-1-operators.csv.gz").read_bytes() != before
    fresh = tmp_path / "fresh"
    build_report(run, fresh, BuildOptions(lang="zh", cache=False))
    _same_site(site, fresh)


def test_a_rank_whose_communication_changed_gets_its_new_csv(run4, tmp_path, monkeypatch):
    """Rebuilds find a rank's communication-operator CSV by what its cells are made of (the analysis' digest, the
    rank, its groups' labels) without making the table; a rank whose communication file changed gets the CSV of
    its new operators: the site a build without any cache writes."""
    from reportgen.site.pages.rank import communication as rank_comm

    monkeypatch.setattr(rank_comm, "shown_rows", lambda usual, n: 2)  # (a 4-rank run: every rank gets its CSV)
    run = tmp_path / "run"
    shutil.copytree(run4, run)
    site = tmp_path / "site"
    csv = site / "ranks" / "rank-1-comm-ops.csv.gz"
    build_report(run, site, BuildOptions(lang="en", jobs=2))
    before = csv.read_bytes()
    made = []
    real = rank_comm.RankComm._op_columns

    def counted(self, r, limit=None, arrays=False):
        if arrays:
            made.append(r)
        return real(self, r, limit, arrays)
    monkeypatch.setattr(rank_comm.RankComm, "_op_columns", counted)
    build_report(run, site, BuildOptions(lang="zh", jobs=1))
    assert not made  # every rank's CSV found by its source: no table made
    build_report(run, site, BuildOptions(lang="en", jobs=1))
    assert csv.read_bytes() == before and not made
    comm = next(run.glob("*_100001_*/ASCEND_PROFILER_OUTPUT/communication.json"))
    text = comm.read_text()
    assert '"Elapse Time(ms)": ' in text
    comm.write_text(text.replace('"Elapse Time(ms)": ', '"Elapse Time(ms)": 1', 1))
    st = comm.stat()
    os.utime(comm, ns=(st.st_atime_ns, st.st_mtime_ns + 10**10))
    build_report(run, site, BuildOptions(lang="en", jobs=1))
    assert csv.read_bytes() != before and made
    fresh = tmp_path / "fresh"
    build_report(run, fresh, BuildOptions(lang="en", cache=False))
    _same_site(site, fresh)


def test_the_command_holds_its_last_build_and_a_library_build_frees_its_own(run4, tmp_path, monkeypatch):
    """`report.keep_until_exit` (the command, which exits without the interpreter's teardown): what a build made is
    held when it ends (frozen: no collector pass walks it), one build's at a time; a library caller's build frees
    everything it made (nothing held, nothing left frozen)."""
    import gc
    import weakref

    made = []
    real = report.load_phase

    def load_phase(*a, **k):  # (a reference to each build's loaded run, that does not keep it alive)
        run = real(*a, **k)
        made.append(weakref.ref(run))
        return run
    monkeypatch.setattr(report, "load_phase", load_phase)
    monkeypatch.setattr(report, "_kept", [])
    frozen = gc.get_freeze_count()
    build_report(run4, tmp_path / "lib", BuildOptions(cache=False))
    gc.collect()
    assert made[-1]() is None and report._kept == [] and gc.get_freeze_count() == frozen
    monkeypatch.setattr(report, "_keep", True)
    try:
        build_report(run4, tmp_path / "cmd", BuildOptions(cache=False))
        first = made[-1]
        gc.collect()
        assert first() is not None and gc.get_freeze_count() > frozen
        build_report(run4, tmp_path / "cmd2", BuildOptions(cache=False))  # the next build lets the last one go
        gc.collect()
        assert first() is None and made[-1]() is not None
    finally:
        report._kept.clear()
        gc.unfreeze()
