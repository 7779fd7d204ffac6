"""The written site: structure (BeautifulSoup), links, offline-ness, escaping, summary.json contract."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from reportgen.charts.column_codec import rows_of
from reportgen.cli import main
from reportgen.synth import generate_run


def _soup(p: Path) -> BeautifulSoup:
    return BeautifulSoup(p.read_text(encoding="utf-8"), "html.parser")


def _pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def test_site_pages_exist(example_site):
    assert (example_site / "index.html").is_file()
    assert (example_site / "cluster" / "step-trace.html").is_file()
    ranks = sorted(p.name for p in (example_site / "ranks").glob("rank-*.html"))
    assert len(ranks) == 16  # every rank of the example has a page, even the one with a broken file
    assert (example_site / "summary.json").is_file()
    assert (example_site / "cluster" / "step-trace.csv").read_text().count("\n") == 17


def test_every_link_resolves_and_nothing_is_remote(example_site):
    for page in _pages(example_site):
        soup = _soup(page)
        ids = {t.get("id") for t in soup.find_all(id=True)}
        for tag, attr in (("a", "href"), ("link", "href"), ("script", "src"), ("img", "src")):
            for t in soup.find_all(tag):
                v = t.get(attr)
                if not v:
                    continue
                assert not re.match(r"^(https?:)?//", v), f"{page}: remote {v}"
                path, _, frag = v.partition("#")
                target = (page.parent / path).resolve() if path else page
                assert target.exists(), f"{page}: broken link {v}"
                if frag and target == page:
                    assert frag in ids, f"{page}: missing anchor #{frag}"


def _shared_specs(site) -> dict:
    text = (site / "assets" / "rank-specs.js").read_text(encoding="utf-8")
    assert text.startswith("window.MSREPORT_SPECS = ") and text.rstrip().endswith(";")
    return json.loads(text[len("window.MSREPORT_SPECS = "):].rstrip().rstrip(";"))


def test_charts_carry_valid_specs(example_site):
    n = 0
    shared = _shared_specs(example_site)
    for page in _pages(example_site):
        for fig in _soup(page).select("figure.chart"):
            spec = json.loads(fig.select_one("script.spec").string)
            if fig.get("data-spec"):  # rank pages: the spec is shared, the page carries the data
                assert set(spec) == {"datasets"} and fig["data-spec"] in shared
                spec = {**shared[fig["data-spec"]], **spec}
            assert "$schema" in spec
            assert "url" not in json.dumps(spec.get("data", {}))  # data inline, never loaded by URL
            n += 1
    assert n >= 3 + 16  # cluster charts + one line chart per rank


def test_step_table_rows_link_to_rank_pages(example_site):
    soup = _soup(example_site / "cluster" / "step-trace.html")
    rows = soup.select("#step-table tbody tr")
    assert [r["id"] for r in rows] == [f"rank-{i}" for i in range(16)]
    assert rows[5].select_one("a")["href"] == "../ranks/rank-5.html"
    headers = [th.get_text() for th in soup.select("#step-table thead th")]
    assert "Computing (ms)" in headers and "PP stage" in headers
    assert "sortable" in soup.select_one("#step-table")["class"]
    data = json.loads(soup.select_one("#step-table-data").string)
    assert len(data["steps"]) == 12 and len(rows_of(data["steps"]["1"])) == 16
    assert len(rows_of(data["steps"]["12"])) == 15  # rank 11's file is truncated: its last steps are gone


def test_injected_slow_rank_is_highlighted(example_site):
    soup = _soup(example_site / "cluster" / "step-trace.html")
    slow_cells = soup.select("#rank-5 td.hot")
    assert slow_cells, "rank 5 (computing x1.35) should be marked in its Computing column"


def test_data_quality_lists_the_broken_file(example_site):
    soup = _soup(example_site / "index.html")
    text = soup.select_one("#issues-table").get_text()
    assert "step_trace_time.csv" in text and "wrong number of fields" in text


def test_summary_json_contract(example_site):
    s = json.loads((example_site / "summary.json").read_text())
    assert s["schema"] == "msreport.summary/1"
    assert s["tool"]["name"] == "msreport"
    run = s["run"]
    assert run["layout"] == "ascend" and run["ranks"] == list(range(16))
    assert run["parallel_mode"] == "pipeline-parallel" and run["stages"] == 2
    assert run["steps"] == 12 and isinstance(run["thresholds"], dict)
    per_rank = s["metrics"]["step_trace"]["per_rank"]
    assert set(per_rank) == {str(r) for r in range(16)}
    assert per_rank["5"]["computing_ms"] > 1.2 * per_rank["4"]["computing_ms"]
    assert all(v["total_ms"] > 0 for v in per_rank.values())
    ids = {f["id"]: f for f in s["findings"]}
    assert ids["slow-rank.compute"]["ranks"] == [5] and ids["slow-rank.compute"]["phase"] == "compute"
    assert ids["slow-link.bandwidth"]["links"] == ["8-9"]
    contract = {"id", "category", "severity", "title", "ranks", "links", "transport", "stages", "phase", "files",
                "evidence", "advice", "page"}
    assert all(contract <= set(f) for f in s["findings"])
    assert set(run["thresholds"]["slow-rank"]) >= {"min_share", "persistence"}
    dq = s["data_quality"]
    # the contract's three keys, and only documented additions (the structured code and its parameters)
    assert all({"file", "problem", "severity"} <= set(d) <= {"file", "problem", "severity", "code", "params"}
               for d in dq)
    assert any(d["file"].endswith("step_trace_time.csv") for d in dq)


def test_strings_from_files_are_escaped(tmp_path):
    run = generate_run(tmp_path / "run", ranks=2, steps=3)
    evil = "</script><script>alert(1)</script>"
    for info in run.glob("*/profiler_info_*.json"):
        data = json.loads(info.read_text())
        data["cann_version"] = evil
        info.write_text(json.dumps(data))
    out = tmp_path / "out"
    assert main([str(run), "-o", str(out), "-q"]) == 0
    for page in _pages(out):
        html = page.read_text()
        assert "<script>alert(1)" not in html
        for s in _soup(page).find_all("script"):
            assert "alert(1)" not in (s.string or "") or "\\u003c" in s.string
    single = tmp_path / "one.html"
    assert main([str(run), "-o", str(single), "--single-file", "-q"]) == 0
    assert "<script>alert(1)" not in single.read_text()


def test_single_file_is_self_contained(tmp_path, synth_8):
    out = tmp_path / "report.html"
    assert main([str(synth_8), "-o", str(out), "--single-file", "-q"]) == 0
    soup = _soup(out)
    assert not soup.select("script[src]") and not soup.select("link[href]")
    assert len([s for s in soup.find_all("script") if "vegaEmbed" in (s.string or "")]) >= 1
    assert soup.select_one("#overview") and soup.select_one("#step-trace") and soup.select_one("#ranks")
    data = json.loads(soup.select_one("#rank-data").string)
    assert set(data) == {str(r) for r in range(8)}
    assert (tmp_path / "report.summary.json").is_file()


def test_communication_page_marks_the_injected_slow_link(example_site):
    page = example_site / "cluster" / "communication.html"
    soup = _soup(page)
    slow = soup.select("#comm-link-table tbody tr.slow")
    assert [(r.select("td")[0].text, r.select("td")[1].text, r.select("td")[2].text) for r in slow] == [
        ("8", "9", "HCCS")]
    ranks = soup.select("#comm-rank-table tbody tr")
    assert len(ranks) == 16
    assert {f["id"] for f in soup.select("figure.chart")} >= {"fig-comm-by-rank", "fig-comm-graph",
                                                              "fig-comm-matrix", "fig-comm-links"}
    csv_text = (example_site / "cluster" / "communication-links.csv").read_text()
    assert csv_text.splitlines()[0].startswith("Source,Destination,Transport")
    # the rank page of the slow link's sender lists the link as slow
    rank8 = _soup(example_site / "ranks" / "rank-8.html")
    assert rank8.select_one("#communication") is not None
    assert any(r.select("td")[1].text.strip() == "9" for r in rank8.select("tr.slow"))


def test_summary_communication_contract(example_site):
    s = json.loads((example_site / "summary.json").read_text())
    comm = s["metrics"]["communication"]
    assert set(comm["per_rank"]) == {str(r) for r in range(16)}
    assert {"communication_ms", "wait_ms"} <= set(comm["per_rank"]["0"])
    link = comm["links"][0]
    assert {"src", "dst", "transport", "group", "time_ms", "size_mb", "bandwidth_gbps"} <= set(link)
    slow = [l for l in comm["links"] if l["slow"]]
    assert [(l["src"], l["dst"], l["transport"], l["group"]) for l in slow] == [(8, 9, "HCCS", "tp")]
    # bandwidth is size over time (GB/s = MB/ms)
    assert slow[0]["bandwidth_gbps"] == pytest.approx(slow[0]["size_mb"] / slow[0]["time_ms"], rel=1e-6)


def test_operator_names_from_files_are_escaped(tmp_path):
    run = generate_run(tmp_path / "run", ranks=2, steps=2)
    for p in run.glob("*/ASCEND_PROFILER_OUTPUT/communication.json"):
        p.write_text(p.read_text().replace("hcom_allReduce", "hcom_<script>alert(2)</script>allReduce"))
    out = tmp_path / "out"
    assert main([str(run), "-o", str(out), "-q"]) == 0
    for page in _pages(out):
        assert "<script>alert(2)" not in page.read_text()


def test_rank_page_comm_operators_per_call_memory_units_and_the_flagged_ranks_csv(example_site):
    """Issue 34: operators named per call read "Per step 0.08"; allocation sizes read "5,491.70" and "4" in one
    column; the rank the findings name (5) was the only one without its comm-ops CSV."""
    import csv

    page = BeautifulSoup((example_site / "ranks" / "rank-5.html").read_text(encoding="utf-8"), "html.parser")
    table = page.select_one("#rank-comm-ops")
    head = [th.get_text() for th in table.select("thead th")]
    assert head[3:5] == ["Calls per step", "Time per step (ms)"] and head[-1] == "Per call (ms)"
    steps = len(page.select("#communication ~ details table tbody tr"))
    assert steps == 12
    rows = [[td.get_text() for td in tr.select("td")] for tr in table.select("tbody tr")]
    assert rows
    for r in rows:
        if r[3] == "1 in 12 steps":  # an operator named per call: its per-step time is its duration over 12 steps
            assert float(r[-1].replace(",", "")) == pytest.approx(float(r[4].replace(",", "")) * 12, abs=0.01)
        else:
            assert float(r[-1].replace(",", "")) == pytest.approx(
                float(r[4].replace(",", "")) / float(r[3].replace(",", "")), abs=0.01)
    assert any(r[3] == "1 in 12 steps" for r in rows)
    link = page.select_one("#communication ~ .table-tools a.csv-download, a.csv-download[href*='comm-ops']")
    assert link is not None
    path = example_site / "ranks" / link["href"]
    assert path.exists()
    with open(path, newline="", encoding="utf-8") as f:
        data = list(csv.reader(f))
    assert "Calls per step" in data[0] and "Per call (ms)" in data[0]
    assert len(data) - 1 == int(re.search(r"\((\d+) rows", link.get_text()).group(1))
    sizes = [tr.select("td")[1].get_text() for tr in page.select("#rank-mem-top tbody tr")]
    assert sizes and all(re.fullmatch(r"[\d,]+\.\d{3}", s) for s in sizes), sizes
    # an allocation without detail shows an empty cell, not an empty code box
    assert not [c for c in page.select("#rank-mem-top code") if not c.get_text()]


def test_rank_overlap_per_step_table_not_repeated_when_the_step_table_holds_it(example_site):
    """Issue 33: the overlap section's per-step table repeated the step table (the same step_trace_time.csv):
    it is replaced by a link to the step table, which holds every step; a value that differs keeps the table."""
    from reportgen.site.pages.rank.overlap import _same_steps
    from reportgen.site.pages.rank.sections import StepSection

    soup = BeautifulSoup((example_site / "ranks" / "rank-3.html").read_text(encoding="utf-8"), "html.parser")
    h2 = soup.find("h2", id="overlap")
    section = []
    for el in h2.find_all_next():
        if el.name == "h2":
            break
        section.append(el)
    assert any(el.name == "p" and el.find("a", href="#rank-steps") for el in section)
    assert not any(el.name == "details" for el in section)  # no per-step table of its own
    steps = soup.find("table", id="rank-steps")
    assert steps is not None and len(steps.find("tbody").find_all("tr")) >= 2

    table = StepSection(phases=[{"key": "computing", "label": "C"}, {"key": "free", "label": "F"}],
                        rows=[{"step": 1, "computing": 10.5, "free": 1.0}, {"step": 2, "computing": 11.0, "free": 2.0}])
    rows = [{"step": 1, "values": [10.5, 1.0]}, {"step": 2, "values": [11.0, 2.0]}]
    assert _same_steps(rows, ["computing", "free"], table)
    assert not _same_steps([rows[0], {"step": 2, "values": [11.0, 2.5]}], ["computing", "free"], table)
    assert not _same_steps(rows, ["computing", "bubble"], table)  # a column the step table lacks
    assert not _same_steps(rows[:1], ["computing", "free"], table)  # a step the overlap lacks
    assert not _same_steps(rows, ["computing", "free"], None)
