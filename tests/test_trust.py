"""Trust: pages mark exactly what the findings name (with the thresholds in force), waiting ranks are not painted
as culprits, marks hold for a single selected step, and a verdict never says "nothing to report" without the data
to judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from reportgen.cli import main
from reportgen.synth import generate_run
from tests.conftest import sample


def _summary(site: Path) -> dict:
    return json.loads((site / "summary.json").read_text(encoding="utf-8"))


def _soup(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def test_slow_link_marks_follow_the_threshold_in_force(tmp_path):
    default, strict = tmp_path / "a", tmp_path / "b"
    assert main(["--example", "-o", str(default), "-q"]) == 0
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
                and f["id"] != "slow-rank.late-arrival" for r in f["ranks"]}
    late = {r for f in s["findings"] if f["id"] == "slow-rank.late-arrival" for r in f["ranks"]}
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
        marked = {r["rank"] for r in rows if r.get("hot")}
        assert marked == {5}, (step, marked)


@pytest.mark.samples
@pytest.mark.parametrize("rel", ["real/torch_gloo_4rank", "mindinsight/parallel_strategy_2rank"])
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
