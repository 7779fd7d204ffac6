"""Rank pages stay lean: the longest operators on the page, the full operator table as a CSV beside it."""
import csv
import json
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from reportgen.site.pages.rank import resources as rank_resources
TOP = 4


@pytest.fixture(scope="module")
def lean_site(tmp_path_factory) -> Path:
    from reportgen.cli import main
    from reportgen.synth import generate_run

    root = tmp_path_factory.mktemp("lean")
    run = root / "run"
    generate_run(run, layout="ascend", ranks=4, steps=2, stages=2)
    mp = pytest.MonkeyPatch()
    mp.setattr(rank_resources, "RANK_TOP_OPS", TOP)
    mp.setattr(rank_resources, "RANK_TOP_OPS_LEAN", TOP)
    try:
        assert main([str(run), "-o", str(root / "out"), "-q"]) == 0
    finally:
        mp.undo()
    return root / "out"


def _rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_rank_page_links_its_full_operator_csv(lean_site):
    for page in sorted((lean_site / "ranks").glob("rank-*.html")):
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        link = soup.select_one("a.csv-download")
        assert link is not None, page.name
        target = (page.parent / link["href"]).resolve()
        assert target.is_file(), link["href"]
        rows = _rows(target)
        # the link announces the number of rows the CSV really holds, and it is more than the page shows
        assert f"({len(rows)} rows" in link.get_text()
        assert len(rows) > TOP
        assert list(rows[0]) == [c["label"] for c in rank_resources.RANK_OP_COLUMNS]


def test_top_n_table_holds_the_longest_operators_of_the_csv(lean_site):
    page = lean_site / "ranks" / "rank-0.html"
    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    body = soup.select("#rank-op-detail tbody tr")
    assert len(body) == TOP
    rows = _rows(lean_site / rank_resources.rank_operators_csv(0))
    longest = sorted(rows, key=lambda r: -float(r["Total (ms)"]))[:TOP]
    assert [tr.find("code").get_text() for tr in body] == [r["Operator"] for r in longest]
    heading = soup.find("h3", string=lambda t: t and t.startswith("By operator"))
    assert f"the {TOP} longest of {len(rows)}" in heading.get_text()


def test_csv_holds_every_operator_of_the_rank(lean_site):
    rows = _rows(lean_site / rank_resources.rank_operators_csv(1))
    keys = [(r["Operator"], r["Type"], r["Runs on"]) for r in rows]
    assert len(keys) == len(set(keys))
    # each share is the operator's part of the rank's operator time: only the full table adds up to 1
    assert sum(float(r["Share"]) for r in rows if r["Share"]) == pytest.approx(1.0, rel=1e-6)
    assert sum(float(r["Share"]) for r in rows[:TOP] if r["Share"]) < 1.0


# --- the copied traces ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gz_kineto_site(tmp_path_factory) -> tuple[Path, Path]:
    """A 2-rank Kineto run whose traces are gzipped, and its site: (run, out)."""
    from reportgen.cli import main
    from reportgen.synth import generate_run

    root = tmp_path_factory.mktemp("gztrace")
    run = generate_run(root / "run", layout="kineto", ranks=2, steps=3, compress=True)
    assert main([str(run), "-o", str(root / "out"), "-q", "--lang", "en"]) == 0
    return run, root / "out"


def test_a_gzipped_trace_is_copied_gzipped(gz_kineto_site):
    """Before: a 1.4 MB .json.gz trace was copied as 25 MB of plain JSON. Now the copy is gzip (mtime 0: the same
    bytes on every build) holding exactly the source's text, and the rank page's link names it."""
    import gzip

    run, out = gz_kineto_site
    sources = sorted((run / "traces").glob("*.pt.trace.json.gz"))
    copies = sorted((out / "traces").iterdir())
    assert len(sources) == 2 and [p.name for p in copies] == ["rank-0.trace.json.gz", "rank-1.trace.json.gz"]
    by_text = {gzip.decompress(p.read_bytes()): p.name for p in sources}
    for copy in copies:
        data = copy.read_bytes()
        assert data[:2] == b"\x1f\x8b" and data[4:8] == b"\0\0\0\0"  # gzip, mtime 0
        assert gzip.decompress(data) in by_text  # the source's text, byte for byte
        assert len(data) < len(gzip.decompress(data)) / 3
    for r in (0, 1):
        soup = BeautifulSoup((out / "ranks" / f"rank-{r}.html").read_text(encoding="utf-8"), "html.parser")
        link = next(a for a in soup.select("a[download]") if "trace" in a["href"])
        assert link["href"] == f"../traces/rank-{r}.trace.json.gz"
        assert (out / "ranks" / link["href"]).resolve().is_file()
        assert link.get_text(" ", strip=True) == "Download the whole trace (gzip-compressed)"


@pytest.mark.parametrize("convert", [False, True])
@pytest.mark.parametrize("dest", ["traces/rank-0.trace.json", "traces/rank-0.trace.json.gz"])
def test_a_trace_linked_out_of_the_run_is_not_copied(tmp_path, convert, dest):
    """The copy is made after loading, outside the loaders' `run_root`: the run folder is passed to the open, so a
    symbolic link out of the run is refused there too (an empty trace is written, the secret is not), while the
    same trace inside the run is copied (gzipped for a .gz destination, deterministically)."""
    import gzip

    from reportgen.site.pages.rank.resources import TraceExport
    from reportgen.site.render.trace_copies import export_trace as _export_trace

    body = b'{"traceEvents": [{"ph": "X", "name": "secret-kernel", "ts": "1.5", "dur": "2"}]}'
    secret = tmp_path / "secret.pt.trace.json"
    secret.write_bytes(body)
    run = tmp_path / "run"
    (run / "t").mkdir(parents=True)
    (run / "t" / "link.pt.trace.json").symlink_to(secret)
    (run / "t" / "own.pt.trace.json").write_bytes(body)

    def copied(source: str, out: Path) -> str:
        _export_trace(run, TraceExport(dest, source, convert), out)
        data = (out / dest).read_bytes()
        if dest.endswith(".gz"):
            assert data[4:8] == b"\0\0\0\0"
            data = gzip.decompress(data)
        return data.decode("utf-8")

    assert "secret-kernel" not in copied("t/link.pt.trace.json", tmp_path / "a")
    assert json.loads(copied("t/link.pt.trace.json", tmp_path / "b")) == []
    own = copied("t/own.pt.trace.json", tmp_path / "c")
    events = json.loads(own)
    events = events["traceEvents"] if isinstance(events, dict) else events
    assert [e["name"] for e in events] == ["secret-kernel"]
    assert events[0]["ts"] == (1.5 if convert else "1.5")
    copied("t/own.pt.trace.json", tmp_path / "d")
    assert (tmp_path / "c" / dest).read_bytes() == (tmp_path / "d" / dest).read_bytes()  # deterministic
    assert not (tmp_path / "e" / dest).exists()
    _export_trace(run, TraceExport(dest, "../secret.pt.trace.json", convert), tmp_path / "e")
    assert not (tmp_path / "e" / dest).exists()  # a path out of the run is not even opened


def test_forked_page_writers_copy_the_traces_and_write_the_same_site_as_one_process(tmp_path, monkeypatch):
    """The trace copies are made by the forked rank-page writers (beside the rank pages, while the main process
    writes the cluster pages): the site, traces included, is byte for byte the one a single process writes."""
    import filecmp
    import gzip

    from reportgen.cli import main
    from reportgen.site.render import builder
    from reportgen.synth import generate_run

    run = generate_run(tmp_path / "run", ranks=4, steps=3, trace_view=True)
    monkeypatch.setattr(builder, "PARALLEL_MIN_PAGES", 1)  # 4 rank pages: forked writers all the same
    assert main([str(run), "-o", str(tmp_path / "one"), "-q", "--lang", "en", "-j", "1", "--no-cache"]) == 0
    assert main([str(run), "-o", str(tmp_path / "two"), "-q", "--lang", "en", "-j", "2", "--no-cache"]) == 0
    files = sorted(p.relative_to(tmp_path / "one") for p in (tmp_path / "one").rglob("*") if p.is_file())
    traces = [f for f in files if f.parts[0] == "traces"]
    assert len(traces) == 4 and all(gzip.decompress((tmp_path / "two" / f).read_bytes()).startswith(b"[")
                                    for f in traces)
    assert files == sorted(p.relative_to(tmp_path / "two") for p in (tmp_path / "two").rglob("*") if p.is_file())
    differ = [f for f in files if f.name != "summary.json" and f.name != ".msreport"
              and not filecmp.cmp(tmp_path / "one" / f, tmp_path / "two" / f, shallow=False)]
    assert differ == []


def test_operator_csv_takes_the_columns_its_page_was_planned_from(tmp_path, monkeypatch):
    """The operator CSV's columns are made once per page: the page's top rows are their first rows, the CSV
    written just after the page gets the very columns (once); a CSV written later, or after another rank's page
    was planned, is made again, with the same values."""
    from reportgen.progress import Progress
    from reportgen.layouts import discover
    from reportgen.report import BuildOptions, analyse_phase, load_phase
    from reportgen.site.plan.page import column_rows
    from reportgen.synth import generate_run

    generate_run(tmp_path / "run", layout="ascend", ranks=2, steps=2, stages=1)
    opts = BuildOptions(cache=False)
    a, _findings, _t = analyse_phase(load_phase(discover(tmp_path / "run")[0], opts, Progress(False)), opts)
    monkeypatch.setattr(rank_resources, "RANK_TOP_OPS", TOP)
    monkeypatch.setattr(rank_resources, "RANK_TOP_OPS_LEAN", TOP)
    made = []
    real = rank_resources.detail_columns
    monkeypatch.setattr(rank_resources, "detail_columns", lambda d, limit=None: made.append(limit) or real(d, limit))
    detail = rank_resources.RankDetail(a)
    want = {r: real(a.run.ranks[r].operators.detail) for r in (0, 1)}
    assert all(len(w["name"]) > TOP for w in want.values())
    part = detail.operators(0)
    assert made == [None]  # the page's rows and the CSV's columns: one pass
    assert part.section.detail == column_rows({k: v[:TOP] for k, v in want[0].items()})
    lazy = part.downloads[0][2]
    assert lazy.fn() == want[0] and made == [None]  # the CSV just after its page: the same columns
    assert lazy.fn() == want[0] and made == [None, None]  # asked again: made again
    other = detail.operators(1).downloads[0][2]
    assert lazy.fn() == want[0] and other.fn() == want[1]  # another page planned in between: made again
