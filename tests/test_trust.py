"""Trust: pages mark exactly what the findings name (with the thresholds in force), waiting ranks are not painted
as culprits, marks hold for a single selected step, and a verdict never says "nothing to report" without the data
to judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from reportgen.charts.column_codec import rows_of
from reportgen.cli import main
from reportgen.synth import generate_run
from tests.conftest import sample


def _summary(site: Path) -> dict:
    return json.loads((site / "summary.json").read_text(encoding="utf-8"))


def _soup(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def test_slow_link_marks_follow_the_threshold_in_force(example_site, tmp_path):
    default, strict = example_site, tmp_path / "b"  # the session's example build is the default one
    assert main(["--example", "-o", str(strict), "-q", "--set", "slow-link.min_drop=0.9"]) == 0
    for site, expect in ((default, ["8-9"]), (strict, [])):
        s = _summary(site)
        named = sorted(l for f in s["findings"] if f["category"] == "slow_link" and f["severity"] != "info"
                       for l in f["links"])
        assert named == expect
        assert s["metrics"]["communication"]["slow_links"] == expect
        assert sorted(f"{l['src']}-{l['dst']}" for l in s["metrics"]["communication"]["links"] if l["slow"]) == expect
        rows = _soup(site / "cluster" / "communication.html").select("#comm-link-table tbody tr.slow")
        assert sorted(f"{r.find_all('td')[0].text}-{r.find_all('td')[1].text}" for r in rows) == expect


def test_waiting_ranks_are_not_painted_as_culprits(example_site):
    s = _summary(example_site)
    culprits = {r for f in s["findings"] if f["category"] == "slow_rank" and f["severity"] != "info"
                and f["id"] != "late-arrival.culprit" for r in f["ranks"]}
    late = {r for f in s["findings"] if f["id"] == "late-arrival.culprit" for r in f["ranks"]}
    assert culprits == {5}
    soup = _soup(example_site / "cluster" / "step-trace.html")
    painted = {int(tr["id"].split("-")[1]) for tr in soup.select("#step-table tbody tr.slow")}
    assert painted == culprits
    badges = {int(tr["id"].split("-")[1]) for tr in soup.select("#step-table tbody tr") if tr.select(".badge.slow")}
    assert badges == culprits
    comm = _soup(example_site / "cluster" / "communication.html")
    waits_least = {int(tr["id"].rsplit("-", 1)[1]) for tr in comm.select("#comm-rank-table tbody tr.slow")}
    assert waits_least == late and waits_least <= culprits
    # every red cell on the step-trace page belongs to a named culprit
    hot = {int(td.find_parent("tr")["id"].split("-")[1]) for td in soup.select("#step-table td.hot")}
    assert hot <= culprits and hot


def test_single_selected_step_keeps_its_marks(example_site):
    soup = _soup(example_site / "cluster" / "step-trace.html")
    data = json.loads(soup.find(id="step-table-data").string)
    for step, rows in data["steps"].items():
        marked = {r["rank"] for r in rows_of(rows) if r.get("hot")}
        assert marked == {5}, (step, marked)


@pytest.mark.samples
@pytest.mark.parametrize("rel", ["real/mindspore_cpu_dist4_legacy_graph", "mindinsight/parallel_strategy_2rank"])
def test_no_false_all_clear(rel, tmp_path):
    site = tmp_path / "r"
    assert main([str(sample(rel)), "-o", str(site), "-q"]) == 0
    cov = _summary(site)["coverage"]
    assert cov["complete"] is False and cov["gaps"]
    html = (site / "index.html").read_text(encoding="utf-8")
    assert "found nothing to report on this run" not in html
    assert "Checks that could not run" in html
    soup = _soup(site / "index.html")
    assert soup.select("#coverage table.coverage tbody tr")


def test_healthy_run_with_full_data_may_say_all_clear(tmp_path):
    run = generate_run(tmp_path / "run", ranks=8, steps=6, seed=4)
    site = tmp_path / "site"
    assert main([str(run), "-o", str(site), "-q"]) == 0
    s = _summary(site)
    assert s["coverage"]["complete"] is True, s["coverage"]["gaps"]
    assert {a: v["status"] for a, v in s["coverage"]["areas"].items()}["step_trace"] == "read"
    assert not [f for f in s["findings"] if f["severity"] != "info"]
    assert "Checks that could not run" not in (site / "index.html").read_text(encoding="utf-8")


def _specs(site: Path):
    for page in site.rglob("*.html"):
        for s in _soup(page).select("figure.chart script.spec"):
            yield page, json.loads(s.string)


def _color_scales(spec, out):
    if isinstance(spec, dict):
        enc = spec.get("encoding", {})
        sc = (enc.get("color") or {}).get("scale") if isinstance(enc.get("color"), dict) else None
        if sc and "domain" in sc and "range" in sc and isinstance(sc["domain"], list):
            out.extend(zip(sc["domain"], sc["range"]))
        for v in spec.values():
            _color_scales(v, out)
    elif isinstance(spec, list):
        for v in spec:
            _color_scales(v, out)


def test_a_phase_has_one_colour_on_every_page(example_site):
    seen: dict[str, set] = {}
    for _, spec in _specs(example_site):
        pairs: list = []
        _color_scales(spec, pairs)
        for label, colour in pairs:
            seen.setdefault(label, set()).add(colour)
    from reportgen.charts.theme import PHASE_COLORS
    phases = [l for l in seen if l in PHASE_COLORS]
    assert "Communication" in phases or "Communication (not overlapped)" in phases
    assert {l: c for l, c in seen.items() if l in PHASE_COLORS and len(c) > 1} == {}
    assert seen.get("Wait", {PHASE_COLORS["Wait"]}) == {PHASE_COLORS["Wait"]}


@pytest.mark.samples
def test_cpu_runs_name_no_step_minus_one_and_one_finding_per_cause(tmp_path):
    site = tmp_path / "r"
    assert main([str(sample("real/mindspore_cpu_dist4_new_graph_skew")), "-o", str(site), "-q"]) == 0
    s = _summary(site)
    assert not any("step -1" in f["title"] for f in s["findings"])
    assert "step -1" not in (site / "index.html").read_text(encoding="utf-8")
    act = [f for f in s["findings"] if f["severity"] != "info"]
    assert [f["ranks"] for f in act] == [[3]], [f["id"] for f in act]  # one finding, both readings in it
    assert [r["id"] for r in act[0]["evidence"].get("related", [])] == ["operator-spread.slow-device"]


@pytest.mark.samples
def test_bubble_title_and_table_agree(tmp_path):
    site = tmp_path / "r"
    assert main([str(sample("mindinsight/cluster_pipeline_parallel_4rank")), "-o", str(site), "-q"]) == 0
    f = next(f for f in _summary(site)["findings"] if f["id"] == "pipeline-bubble.between-stage")
    cells = [row[-1] for row in f["table"]["rows"]]
    import re
    for pct in re.findall(r"(\d+\.\d) %", f["title"]):
        assert f"{pct} %" in cells, (f["title"], cells)


def test_memory_without_capacity_is_a_neutral_scale(tmp_path):
    run = generate_run(tmp_path / "run", ranks=8, steps=4, seed=5)  # ascend layout: no capacity recorded
    site = tmp_path / "site"
    assert main([str(run), "-o", str(site), "-q"]) == 0
    page = _soup(site / "cluster" / "resources.html")
    fig = page.find(id="fig-memory-heatmap")
    if fig is None:
        pytest.skip("the synthetic run has no memory data")
    spec = json.loads(fig.find("script", class_="spec").string)
    ranges = []

    def walk(v):
        if isinstance(v, dict):
            c = (v.get("encoding") or {}).get("color")
            if isinstance(c, dict) and isinstance(c.get("scale"), dict) and "range" in c["scale"]:
                ranges.append(c["scale"]["range"])
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
    walk(spec)
    from reportgen.charts.resources import MEMORY_RAMP, RELATIVE_RAMP
    summary = _summary(site)
    known = any((v or {}).get("capacity_mb") for v in summary["metrics"]["memory"]["per_rank"].values())
    assert ranges and ranges[0] == (MEMORY_RAMP[1] if known else RELATIVE_RAMP[1])
    if not known:
        assert "capacity unknown" in page.get_text()


def test_a_truncated_file_of_a_rank_is_a_warning_naming_the_rank(example_site):
    """The example's rank 11 step trace is cut off mid-row: a warning finding names the file and the rank."""
    s = _summary(example_site)
    f = next(f for f in s["findings"] if f["category"] == "data_quality" and f["files"]
             and "step_trace_time.csv" in f["files"][0])
    assert f["severity"] == "warning" and f["ranks"] == [11], f
    assert "truncat" in f["title"].lower()
