"""The write stage's file work (issue 33): the replaced report removed by several threads (`output.remove_tree`),
files it holds byte for byte linked into the new report (`reuse`), trace copies kept for a rebuild
(`trace_copies`). Each must do exactly what writing and removing one file at a time did."""

from __future__ import annotations

import gzip
import os

from reportgen import rankcache
from reportgen.site.render import output, reuse, trace_copies


def test_remove_tree_removes_every_file_and_follows_no_link(tmp_path, monkeypatch):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    top = tmp_path / "old"
    names = []
    for d in ("", "ranks", "ranks/deep", "cluster"):
        (top / d).mkdir(parents=True, exist_ok=True)
        for i in range(30):
            (top / d / f"f{i}.html").write_text(str(i))
            names.append(f"{d}/f{i}.html")
    (top / "ranks" / "folder-link").symlink_to(outside, target_is_directory=True)
    (top / "file-link").symlink_to(outside / "keep.txt")
    seen = []
    real = output._unlink_at
    monkeypatch.setattr(output, "_unlink_at", lambda item: (seen.append(item[1]), real(item)))
    output.remove_tree(top)
    assert not top.exists()
    assert (outside / "keep.txt").read_text() == "mine"  # the links went, not what they point to
    assert len(seen) == len(names) + 2 >= output.REMOVE_MIN_FILES  # (the threads' path)
    output.remove_tree(top)  # (gone already: nothing raised)
    (tmp_path / "link-to-outside").symlink_to(outside, target_is_directory=True)
    output.remove_tree(tmp_path / "link-to-outside")  # a link given as the tree: left, as shutil.rmtree leaves it
    assert (outside / "keep.txt").exists()


def test_a_file_is_linked_only_when_the_replaced_report_holds_the_same_bytes(tmp_path):
    out, tmp, outside = tmp_path / "report", tmp_path / ".report.tmp-1", tmp_path / "outside"
    for d in (out / "ranks", tmp / "ranks", outside):
        d.mkdir(parents=True)
    (out / "ranks" / "same.csv.gz").write_bytes(b"\x1f\x8bsame")
    (out / "ranks" / "other.html").write_bytes(b"<p>old</p>")
    (out / "ranks" / "longer.html").write_bytes(b"<p>same</p> and more")
    (outside / "x.html").write_bytes(b"<p>x</p>")
    (out / "via").symlink_to(outside, target_is_directory=True)  # a folder of the old report that is a link
    (tmp / "via").mkdir()
    (out / "ranks" / "link.html").symlink_to(outside / "x.html")  # a file that is a link
    prev = reuse.Previous(out, tmp)

    def put(rel: str, data: bytes) -> os.stat_result:
        with reuse.use(prev):
            reuse.put(tmp / rel, rel, data)
        assert (tmp / rel).read_bytes() == data
        return (tmp / rel).stat()

    assert put("ranks/same.csv.gz", b"\x1f\x8bsame").st_ino == (out / "ranks" / "same.csv.gz").stat().st_ino
    assert put("ranks/other.html", b"<p>new</p>").st_ino != (out / "ranks" / "other.html").stat().st_ino
    assert put("ranks/longer.html", b"<p>same</p>").st_nlink == 1  # (a prefix of the old file is not it)
    assert put("via/x.html", b"<p>x</p>").st_nlink == 1  # reached through a link: written
    assert put("ranks/link.html", b"<p>x</p>").st_nlink == 1
    assert put("ranks/new.html", b"new").st_nlink == 1  # nothing there before
    # a staged path written again is replaced, never written into: the old report's file stays as it was
    put("ranks/same.csv.gz", b"changed")
    with reuse.use(prev):
        reuse.put_text(tmp / "ranks" / "other.html", "ranks/other.html", "<p>old</p>")  # a text: its UTF-8 bytes
    assert (tmp / "ranks" / "other.html").stat().st_ino == (out / "ranks" / "other.html").stat().st_ino
    assert (out / "ranks" / "same.csv.gz").read_bytes() == b"\x1f\x8bsame"
    assert (tmp / "ranks" / "same.csv.gz").read_bytes() == b"changed"
    assert (out / "ranks" / "other.html").read_bytes() == b"<p>old</p>"
    assert (outside / "x.html").read_bytes() == b"<p>x</p>"
    # no report there (a first build) or one given as a link: every file written
    assert reuse.Previous(tmp_path / "none", tmp).root is None
    (tmp_path / "report-link").symlink_to(out, target_is_directory=True)
    assert reuse.Previous(tmp_path / "report-link", tmp).root is None


def test_a_trace_copy_is_kept_for_the_next_build_and_made_again_when_the_trace_changes(tmp_path, monkeypatch):
    from reportgen.site.pages.rank.resources import TraceExport

    run = tmp_path / "run"
    (run / "r0").mkdir(parents=True)
    trace = run / "r0" / "x.pt.trace.json"
    trace.write_text('{"traceEvents": [{"ph": "X", "name": "k", "ts": "1.5", "dur": "2"}]}')
    ex = TraceExport("traces/rank-0.trace.json.gz", "r0/x.pt.trace.json", True)
    reads = []
    real = trace_copies.timeline.export_trace
    # (counted once a copy: the call given the run folder, not the one it makes inside it)
    monkeypatch.setattr(trace_copies.timeline, "export_trace",
                        lambda *a, **k: (reads.append(1) if "root" in k else None, real(*a, **k))[1])

    def copy(site: str) -> bytes:
        trace_copies.export_trace(run, ex, tmp_path / site)
        return (tmp_path / site / ex.dest).read_bytes()

    with rankcache.use(tmp_path / "cache"):
        first = copy("a")
        assert copy("b") == first and len(reads) == 1  # kept: the trace not read again
        assert b'"ts":1.5' in gzip.decompress(first)
        trace.write_text('{"traceEvents": [{"ph": "X", "name": "k", "ts": "2.5", "dur": "2"}]}')
        os.utime(trace, ns=(1, 1))
        changed = copy("c")
        assert len(reads) == 2 and b'"ts":2.5' in gzip.decompress(changed)
        assert copy("d") == changed and len(reads) == 2
        other = TraceExport(ex.dest, ex.source, False)  # written another way: another copy
        trace_copies.export_trace(run, other, tmp_path / "e")
        assert len(reads) == 3
        entry = next((tmp_path / "cache").glob("trace-*.pkl"))
        raw = entry.read_bytes()
        entry.write_bytes(raw[:-8] + bytes(b ^ 0xFF for b in raw[-8:]))  # damaged: a miss, made again
        assert copy("f") == changed and len(reads) == 4
        other_rank = TraceExport("traces/rank-1.trace.json.gz", ex.source, True)
        trace_copies.export_trace(run, other_rank, tmp_path / "h")
        assert len(list((tmp_path / "cache").glob("trace-*.pkl"))) == 2
        trace_copies.prune(tmp_path / "another-run", [])  # another run's build: this run's copies stay
        assert len(list((tmp_path / "cache").glob("trace-*.pkl"))) == 2
        trace_copies.prune(run, [other_rank.dest])  # a build that copies rank 1's trace only: rank 0's copy goes
        assert [p.name for p in (tmp_path / "cache").glob("trace-*.pkl")] == [trace_copies.entry_name(run, other_rank.dest)]
        reads.clear()
    assert copy("g") == changed and len(reads) == 1  # no cache folder: copied as always
    assert trace_copies.Kept(run, trace, ex, 9).get() is None


def test_the_communication_labels_coded_from_a_categorical_are_the_cells_it_holds():
    """`RankComm` codes rank_ops' labels from their categoricals (no text hashed again): `distinct[codes]` read in
    any row order is the column in that order, as the object path gives it (a missing cell: NaN, as it reads)."""
    import numpy as np
    import pandas as pd

    from reportgen.site.pages.rank.communication import _coded, _column

    vals = ["allreduce_1", "send, \"x\"", "allreduce_1", "recv", "broadcast", "recv"]
    order = np.array([5, 0, 3, 1, 4, 2])
    for col in (pd.Series(pd.Categorical(vals)), pd.Series(pd.Categorical(vals, categories=sorted(set(vals))[::-1])),
                pd.Series(pd.Categorical([*vals[:-1], None])), pd.Series(vals, dtype=object),
                pd.Series([1, 2.0, None, "x", float("nan"), 1], dtype=object)):
        codes, distinct = _column(col, False)
        codes = codes[order]
        want_codes, want = _coded(col.to_numpy(dtype=object)[order])
        got, expect = distinct[codes].tolist(), want[want_codes].tolist()
        assert [(type(v), v) for v in got if v == v] == [(type(v), v) for v in expect if v == v]
        assert [v != v for v in got] == [v != v for v in expect]  # (NaN where the column has it)
        assert [v is None for v in got] == [v is None for v in expect]
    empty = pd.Series(pd.Categorical([]))
    codes, distinct = _column(empty, False)
    assert len(codes) == 0


def test_the_rank_pages_operator_order_is_the_lexsort_of_rank_then_longest_first():
    """`by_rank_longest_first` gives `np.lexsort((-comm, rank))`'s order: ties (and NaN, last) in the rows' order,
    ranks' blocks in any order, a rank whose rows are apart."""
    import numpy as np

    from reportgen.site.pages.rank.communication import by_rank_longest_first

    rng = np.random.default_rng(3)
    cases = []
    for blocks in ([3, 1, 2, 0], [0, 1, 2], [2, 0, 2], [5]):
        rank = np.concatenate([np.full(int(rng.integers(1, 9)), r, dtype=np.int64) for r in blocks])
        comm = rng.choice([0.5, 1.5, 2.0, np.nan, -0.0, 0.0], size=len(rank))
        cases.append((rank, comm))
    cases += [(np.zeros(0, dtype=np.int64), np.zeros(0)), (np.array([4]), np.array([1.0]))]
    for rank, comm in cases:
        assert by_rank_longest_first(rank, comm).tolist() == np.lexsort((-comm, rank)).tolist()
