"""One cause, one saving (rules._shared_savings): a slow rank makes its peers wait, so the late-arrival rule names
it too, and both estimates replace the same excess of the same rank. The slow-rank finding keeps the saving; the
late arrival says where its saving is counted (`impact.included_in`, `additional_step_ms`), on the page, in
findings.md and in summary.json. Savings of different causes (a slow rank and a slow link elsewhere) both stand.
The savings are checked against the step trace by hand: the step ends when the last rank arrives (computing +
free), so fixing rank R saves, per step, the latest arrival minus the latest arrival with R's excess removed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from reportgen.analysis import analyze
from reportgen.layouts import discover, load_run
from reportgen.rules import SAME_SAVING_MS, _shared_savings, run_rules
from reportgen.rules.base import Finding
from reportgen.synth import generate_run

ROOT = Path(__file__).resolve().parents[1]
SLOW, LINK = "slow-rank:5:compute:1.3", "slow-link:10-11:0.3"


def _findings(tmp_path: Path, inject: list[str]):
    a = analyze(load_run(discover(generate_run(tmp_path / "run", ranks=16, steps=4, inject=inject))[0], jobs=1))
    return a, {f.id: f for f in run_rules(a)[0]}


def _by_hand(a, rank: int, phases: tuple[str, ...]) -> float:
    """Mean over steps of: latest arrival (computing + free) minus the latest arrival once `rank`'s `phases` are
    set to the median of the other ranks (never above its own)."""
    ps = a.steps.per_step
    saved = []
    for _step, g in ps.groupby("step"):
        g = g.set_index("rank")
        arrival = g["computing"] + g["free"]
        fixed = arrival.copy()
        for p in phases:
            fixed[rank] -= max(0.0, g.at[rank, p] - g.drop(index=rank)[p].median())
        saved.append(arrival.max() - fixed.max())
    return sum(saved) / len(saved)


def test_slow_rank_only_the_late_arrival_saving_is_included_in_the_slow_rank_one(tmp_path):
    a, fs = _findings(tmp_path, [SLOW])
    slow, late = fs["slow-rank.compute"], fs["late-arrival.culprit"]
    assert slow.ranks == late.ranks == [5]
    # the same time, estimated twice: fixing rank 5's computing, and its computing and free
    assert slow.impact["step_ms"] == pytest.approx(_by_hand(a, 5, ("computing",)), abs=1e-3)
    own = _by_hand(a, 5, ("computing", "free"))
    # late arrival's saving is read at the collectives (the wait-for matrix: what its peers wait for it, issue 32
    # item 4); it agrees with the what-if of rank 5's computing and free time (two estimates of the same time)
    assert late.impact["step_ms"] == pytest.approx(own, rel=0.01)
    assert own - slow.impact["step_ms"] < SAME_SAVING_MS  # rank 5's free time is typical: nothing beyond
    # the slow-rank finding names the cause and keeps its saving; the late arrival's is counted there
    assert "included_in" not in slow.impact
    assert late.impact["included_in"] == ["slow-rank.compute"] and late.impact["additional_step_ms"] == 0.0
    assert late.included_in == [slow]
    # what ranks the findings: the saving counted once
    assert slow.saving_ms + late.saving_ms == pytest.approx(slow.impact["step_ms"])
    d = late.to_dict()["impact"]
    assert d["step_ms"] == late.impact["step_ms"] and d["included_in"] == ["slow-rank.compute"]


def test_slow_link_only_its_saving_stands_alone(tmp_path):
    _, fs = _findings(tmp_path, [LINK])
    link = fs["slow-link.bandwidth"]
    assert link.links == ["10-11"] and link.impact["step_ms"] > 0
    assert not any(f.included_in or "included_in" in (f.impact or {}) for f in fs.values())
    assert "late-arrival.culprit" not in fs and link.saving_ms == link.impact["step_ms"]


def test_unit_rules_same_ranks_included_other_ranks_stand_partial_adds_the_rest():
    def f(fid, ranks, ms, phase):
        x = Finding(id=fid, category="slow_rank", severity="warning", title=fid, advice="", page="index.html",
                    ranks=ranks, phase=phase, impact={"step_ms": ms, "step_share": ms / 100, "basis": ""})
        x.rule = fid.split(".")[0]
        return x

    slow, late_elsewhere = f("slow-rank.compute", [5], 30.0, "compute"), f("late-arrival.culprit", [7], 20.0,
                                                                            "communication")
    _shared_savings([slow, late_elsewhere])
    assert not late_elsewhere.included_in and late_elsewhere.saving_ms == 20.0  # another rank: both stand
    # ranks 5 and 7 arrive late, rank 5 is the slow one: 40 ms in all, 30 of them rank 5's
    slow, late = f("slow-rank.compute", [5], 30.0, "compute"), f("late-arrival.culprit", [5, 7], 40.0,
                                                                   "communication")
    _shared_savings([slow, late])
    assert late.impact["additional_step_ms"] == 10.0 and late.saving_ms == 10.0 and late.impact["step_ms"] == 40.0
    # a slow-rank finding about the tail (not an arrival phase) is no cause of the wait
    tail, late = f("slow-rank.tail", [5], 30.0, "tail"), f("late-arrival.culprit", [5], 30.0, "communication")
    _shared_savings([tail, late])
    assert not late.included_in


@pytest.fixture(scope="module")
def both_site(tmp_path_factory) -> Path:
    """A slow rank (5) and a slow link elsewhere (10-11), both languages (zh first)."""
    base = tmp_path_factory.mktemp("both")
    run = generate_run(base / "run", ranks=16, steps=4, inject=[SLOW, LINK])
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LANG": "C", "LC_ALL": ""}
    subprocess.run([sys.executable, "-m", "reportgen", str(run), "-o", str(base / "site"), "-q", "--lang", "zh,en"],
                   cwd=ROOT, env=env, check=True, timeout=300)
    return base / "site"


def _soup(p: Path) -> BeautifulSoup:
    return BeautifulSoup(p.read_text(encoding="utf-8"), "html.parser")


def test_both_causes_each_saving_stands_and_the_late_arrival_points_at_the_slow_rank(both_site):
    s = json.loads((both_site / "summary.json").read_text(encoding="utf-8"))
    fs = {f["id"]: f for f in s["findings"]}
    slow, link, late = fs["slow-rank.compute"], fs["slow-link.bandwidth"], fs["late-arrival.culprit"]
    assert "included_in" not in slow["impact"] and "included_in" not in link["impact"]
    assert late["impact"]["included_in"] == ["slow-rank.compute"] and late["impact"]["additional_step_ms"] == 0.0
    # contract: the keys every impact had keep their types
    assert all(isinstance(late["impact"][k], t) for k, t in (("step_ms", float), ("step_share", float),
                                                               ("basis", str)))
    # the summary's order counts the late arrival's saving as what it adds (nothing): after the slow link
    ids = [f["id"] for f in s["findings"]]
    assert ids.index("slow-rank.compute") < ids.index("slow-link.bandwidth") < ids.index("late-arrival.culprit")
    for root, saves, included in ((both_site / "en", "fixing this saves", "saving included in"),
                                  (both_site, "解决后每个迭代约节省", "节省已计入")):
        page = _soup(root / "index.html")
        lines = {li.select_one(".fid").get_text(): li.select_one("p.impact").get_text(" ", strip=True)
                 for li in page.select("li.finding") if li.select_one("p.impact")}
        assert lines["slow-rank.compute"].lower().startswith(saves)
        assert lines["slow-link.bandwidth"].lower().startswith(saves)
        late_line = lines["late-arrival.culprit"]
        assert late_line.lower().startswith(included) and saves not in late_line.lower()
        slow_title = next(li for li in page.select("li.finding")
                          if li.select_one(".fid").get_text() == "slow-rank.compute").select_one(".ftitle").get_text()
        assert slow_title in late_line
        # the verdict's list points at the finding the saving is counted in
        n_slow = ids.index("slow-rank.compute") + 1
        top = page.select(".top-findings li")[ids.index("late-arrival.culprit")]
        assert included in top.get_text() and top.select("a")[-1]["href"] == f"#finding-{n_slow}"
    md = (both_site / "en" / "findings.md").read_text(encoding="utf-8")
    late_md = md[md.index("`late-arrival.culprit`"):]
    assert "- Saving included in `slow-rank.compute`" in late_md.split("\n## ")[0]
    assert md.count("Fixing this saves ~") == sum(1 for f in s["findings"]
                                                  if f.get("impact") and "included_in" not in f["impact"])


def test_zh_evidence_percentages_are_written_the_chinese_way(both_site):
    """The slow link's saving basis names the share of its communication not hidden by computation: "78%" in
    Chinese, "78 %" in English (and in summary.json, which stays English)."""
    s = json.loads((both_site / "summary.json").read_text(encoding="utf-8"))
    link = next(f for f in s["findings"] if f["id"] == "slow-link.bandwidth")
    pct = re.search(r"(\d+) % of their communication time is not hidden", link["impact"]["basis"]).group(1)
    for root, want in ((both_site, f"其通信时间的 {pct}% 未被计算掩盖"),
                       (both_site / "en", f"{pct} % of their communication time is not hidden")):
        li = next(li for li in _soup(root / "index.html").select("li.finding")
                  if li.select_one(".fid").get_text() == "slow-link.bandwidth")
        assert want in li.select_one("p.impact").get_text(" ", strip=True)
    zh_md = (both_site / "findings.md").read_text(encoding="utf-8")
    assert f"{pct}% 未被计算掩盖" in zh_md and f"{pct} % 未被" not in zh_md
