"""Rank pages stay lean: the longest operators on the page, the full operator table as a CSV beside it."""
import csv
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
