"""The trace copies' budget counts what a trace holds (issue 33): a gzipped Kineto trace by its text (the gzip's
trailer, ~20x its file), as the copy is written re-gzipped from that text. A rank whose trace is not copied links
its original file, on its page and through the execution view's links to that page."""

from __future__ import annotations

import gzip
import types
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from reportgen import urls
from reportgen.site.pages.rank import resources as rank_resources


def _gz(path: Path, text_bytes: int) -> None:
    """A gzipped trace holding `text_bytes` of JSON (compresses to a few dozen bytes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = b'{"traceEvents": []' + b" " * (text_bytes - 19) + b"}"
    assert len(body) == text_bytes
    path.write_bytes(gzip.compress(body, mtime=0))


def test_the_budget_counts_a_gzipped_traces_text_not_its_file(tmp_path, monkeypatch):
    """Before: the bounds counted `trace_bytes`, the .gz file's size (~50 bytes here): every trace was copied. Now
    each trace counts its text: 2,500 bytes of budget take two 1,000-byte traces, a 3,000-byte one is over the
    per-file bound (its file is as small), in the priority order (rank 3 first)."""
    monkeypatch.setattr(rank_resources, "MAX_TRACE_EXPORT_BYTES", 2500)
    monkeypatch.setattr(rank_resources, "MAX_TRACE_FILE_BYTES", 2000)
    sizes = {0: 1000, 1: 3000, 2: 1000, 3: 1000, 4: 100}
    ranks = {}
    for r, n in sizes.items():
        _gz(tmp_path / f"r{r}" / "t.pt.trace.json.gz", n)
        assert (tmp_path / f"r{r}" / "t.pt.trace.json.gz").stat().st_size < 100
        ranks[r] = types.SimpleNamespace(timeline=types.SimpleNamespace(
            trace_bytes=(tmp_path / f"r{r}" / "t.pt.trace.json.gz").stat().st_size,
            source=f"r{r}/t.pt.trace.json.gz", trace_needs_numbers=False))
    a = types.SimpleNamespace(run=types.SimpleNamespace(rank_ids=list(sizes), ranks=ranks, root=tmp_path))
    detail = rank_resources.RankDetail(a, priority=[3, 1])
    # 3 (1,000), 1 over the per-file bound, 0 (2,000 in all), 2 over the budget, 4 (100 bytes) still fits
    assert [e.dest for e in detail.exports] == [urls.trace_copy(r) for r in (3, 0, 4)]
    assert detail._skipped_export == {1, 2}
    # an uncompressed trace counts its file
    (tmp_path / "r0" / "t.pt.trace.json").write_bytes(b" " * 2600)
    ranks[0].timeline.source = "r0/t.pt.trace.json"
    assert rank_resources.RankDetail(a, priority=[0]).exports[0].dest != urls.trace_copy(0)


def test_the_bounds_keep_a_32_rank_gpu_runs_copies_near_10_mb():
    """160 MB of trace text (~10 MB of gzip copies, a quarter of the 40 MB site goal); 64 MB for one trace."""
    assert rank_resources.MAX_TRACE_EXPORT_BYTES == 160_000_000
    assert rank_resources.MAX_TRACE_FILE_BYTES == 64_000_000


@pytest.fixture(scope="module")
def gpu_site(tmp_path_factory) -> tuple[Path, Path]:
    """4 gzipped Kineto ranks, rank 1 slow, the budget patched to hold two of their traces' text."""
    from reportgen.cli import main
    from reportgen.loaders.files import data_bytes
    from reportgen.synth import generate_run

    root = tmp_path_factory.mktemp("budget")
    run = generate_run(root / "run", layout="kineto", ranks=4, steps=3, compress=True,
                       inject=["slow-rank:1:compute:1.4"])
    traces = sorted(run.rglob("*.pt.trace.json.gz"))
    text = max(data_bytes([p]) for p in traces)
    budget = 2 * text + text // 2
    assert len(traces) == 4 and sum(p.stat().st_size for p in traces) < budget  # (counting the files: all 4 fit)
    mp = pytest.MonkeyPatch()
    mp.setattr(rank_resources, "MAX_TRACE_EXPORT_BYTES", budget)
    try:
        assert main([str(run), "-o", str(root / "out"), "-q", "-j", "1", "--lang", "en", "--no-cache"]) == 0
    finally:
        mp.undo()
    return run, root / "out"


def _soup(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def test_a_rank_whose_trace_is_not_copied_links_its_original_file(gpu_site):
    run, out = gpu_site
    copied = sorted(int(p.name.split("-")[1].split(".")[0]) for p in (out / "traces").glob("rank-*.trace.json.gz"))
    assert len(copied) == 2 and 1 in copied  # the slow rank the findings name first
    execution = _soup(out / "cluster" / "execution.html")
    linked = {a["href"].split("#")[0] for a in execution.select("a[href]") if "ranks/rank-" in a["href"]}
    assert {f"../ranks/rank-{r}.html" for r in range(4)} <= linked
    for href in linked:  # every rank the execution view links: its page opens its trace, copied or the original
        page = (out / "cluster" / href).resolve()
        r = int(page.stem.split("-")[1])
        soup = _soup(page)
        timeline = soup.find("h2", id="timeline")
        notes = timeline.find_all_next("p", limit=4)
        text = " ".join(p.get_text(" ", strip=True) for p in notes)
        link = soup.select_one(f"a[href='../{urls.trace_copy(r)}']")
        source = notes[0].select_one("code").get_text()
        assert (run / source).is_file() and source.endswith(".pt.trace.json.gz")
        # the source line gives the file's size and the JSON it holds (what the bounds count)
        from reportgen.loaders.files import data_bytes

        size = (run / source).stat().st_size / 1e6
        assert f"({size:.1f} MB, {data_bytes([run / source]) / 1e6:.1f} MB of JSON)" in notes[0].get_text()
        if r in copied:
            assert link is not None and (page.parent / link["href"]).resolve().is_file()
            assert "not copied" not in text
        else:
            assert link is None
            assert "was not copied into the report" in text and "MB of trace text" in text
            assert any(c.get_text() == source for p in notes[1:] for c in p.select("code"))  # the file to open
