"""Impact estimates against the truth: the same synthetic run (same seed, so the same noise) generated with and
without the injected problem; the finding's estimated saving must be within 20 % of the measured difference of
mean step times (the median over ranks of each step's total, averaged over steps)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen.analysis import analyze
from reportgen.analysis.impact import _wide, replace_excess
from reportgen.layouts import discover, load_run
from reportgen.rules import run_rules
from reportgen.synth import generate_run


def _analysis(path: Path):
    return analyze(load_run(discover(path)[0], jobs=1))


def _mean_step(a) -> float:
    return float(_wide(a.steps.per_step, "total").median(axis=0).mean())


CASES = [
    ("slow rank, compute", "ascend", ["slow-rank:5:compute:1.3"], "slow-rank.compute", dict(ranks=16)),
    ("slow rank, free", "ascend", ["slow-rank:5:host:1.2"], "slow-rank.free", dict(ranks=16)),
    ("slow rank, step interval", "mindinsight", ["slow-rank:5:data:1.2"], "slow-rank.step-interval",
     dict(ranks=16)),
    # an unbalanced stage is checked against the same work split evenly (tests/test_severity.py): its saving is the
    # excess over the balanced stage time, which removing the extra work altogether exceeds
    ("slow rank in a pipeline", "ascend", ["slow-rank:9:compute:1.3"], "slow-rank.compute",
     dict(ranks=32, stages=4)),
    ("slow link", "ascend", ["slow-link:3-4:0.3"], "slow-link.bandwidth", dict(ranks=16)),
    ("late arrival", "ascend", ["slow-rank:5:host:1.2"], "late-arrival.culprit", dict(ranks=16)),
    ("throttled host", "ascend", ["throttled-host:1:1.3"], "slow-rank.compute-host", dict(ranks=32)),
    ("slow NIC", "ascend", ["slow-nic:8:0.3"], "slow-link.bandwidth", dict(ranks=32, tp=8)),
    ("one-off stall", "ascend", ["stall:5:4:200"], "stall.one-off", dict(ranks=16)),
    ("rotating stall", "ascend", ["rotating-stall:120"], "stall.rotating", dict(ranks=16)),
]


@pytest.mark.parametrize("name,layout,inject,fid,kw", CASES, ids=[c[0] for c in CASES])
def test_impact_within_20_percent_of_measured(tmp_path, name, layout, inject, fid, kw):
    ok = _analysis(generate_run(tmp_path / "ok", layout=layout, steps=10, seed=3, **kw))
    bad = _analysis(generate_run(tmp_path / "bad", layout=layout, steps=10, seed=3, inject=inject, **kw))
    _check_estimate(ok, bad, fid)


def _check_estimate(ok, bad, fid):
    measured = _mean_step(bad) - _mean_step(ok)
    assert measured > 0
    f = next(f for f in run_rules(bad)[0] if f.id == fid)
    assert f.impact and f.impact["basis"]
    assert abs(f.impact["step_ms"] - measured) <= 0.2 * measured, (f.impact, measured)
    assert f.impact["step_share"] == pytest.approx(f.impact["step_ms"] / _mean_step(bad), rel=1e-3)
    assert f.to_dict()["impact"]["step_ms"] == f.impact["step_ms"]
    return f


def test_communication_bound_impact_is_what_full_overlap_saves(tmp_path):
    # The problem is communication that computation does not hide: "without it" is the same run with every
    # transfer hidden (overlap:1.0); the default synthetic run hides 35 % of its transfers.
    ok = _analysis(generate_run(tmp_path / "ok", layout="ascend", ranks=16, steps=10, seed=3, inject=["overlap:1.0"]))
    bad = _analysis(generate_run(tmp_path / "bad", layout="ascend", ranks=16, steps=10, seed=3,
                                 inject=["overlap:0.0"]))
    f = _check_estimate(ok, bad, "communication-bound.rate")
    assert "upper bound" in f.impact["basis"]


def test_stalls_are_information_with_their_cost_and_a_strip(tmp_path):
    a = _analysis(generate_run(tmp_path / "one", layout="ascend", ranks=16, steps=10, seed=3,
                               inject=["stall:5:4:200"]))
    fs = run_rules(a)[0]
    one = next(f for f in fs if f.id == "stall.one-off")
    assert one.severity == "info" and one.ranks == [5] and one.evidence["pattern"] == "one-off"
    assert one.evidence["steps_standing_out"] == [5]  # the 5th recorded step (0-based 4; steps start at 1)
    assert one.strip["ranks"] == [5] and one.strip["out"][0] == [0, 0, 0, 0, 1, 0, 0, 0, 0, 0]
    assert not [f for f in fs if f.severity != "info" and 5 in f.ranks]  # never a warning on the rank
    b = _analysis(generate_run(tmp_path / "rot", layout="ascend", ranks=16, steps=10, seed=3,
                               inject=["rotating-stall:120"]))
    fs = run_rules(b)[0]
    rot = next(f for f in fs if f.id == "stall.rotating")
    assert rot.severity == "info" and len(rot.ranks) == 10 and rot.evidence["pattern"] == "rotating"
    assert [sum(col) for col in zip(*rot.strip["out"])] == [1] * 10  # one rank per step
    # every rank waits in some step: the communication rule must not call that communication-bound
    assert all(f.severity == "info" for f in fs), [(f.id, f.severity) for f in fs if f.severity != "info"]


def test_chronic_slow_rank_has_its_pattern_and_strip(tmp_path):
    a = _analysis(generate_run(tmp_path / "r", layout="ascend", ranks=16, steps=6, seed=3,
                               inject=["slow-rank:5:compute:1.3"]))
    f = next(f for f in run_rules(a)[0] if f.id == "slow-rank.compute")
    assert f.evidence["pattern"] == "chronic" and f.strip["out"] == [[1] * 6]
    assert f.strip["others"] == [0] * 6 and f.strip["n_others"] == 15


def test_throttled_host_and_slow_nic_are_one_finding_each(tmp_path):
    a = _analysis(generate_run(tmp_path / "h", layout="ascend", ranks=32, steps=6, seed=3,
                               inject=["throttled-host:1:1.3"]))
    fs = [f for f in run_rules(a)[0] if f.id.startswith("slow-rank.compute")]
    assert [f.id for f in fs] == ["slow-rank.compute-host"]
    assert fs[0].ranks == list(range(8, 16)) and fs[0].evidence["hosts"] == ["node001"]
    assert "Host node001" in str(fs[0].title)
    b = _analysis(generate_run(tmp_path / "n", layout="ascend", ranks=32, steps=6, seed=3, tp=8,
                               inject=["slow-nic:8:0.3"]))
    fs = [f for f in run_rules(b)[0] if f.category == "slow_link"]
    assert len(fs) == 1 and fs[0].evidence["nic_rank"] == 8 and fs[0].transport == "RDMA"
    assert sorted(fs[0].links) == ["0-8", "8-16"]
    c = _analysis(generate_run(tmp_path / "hn", layout="ascend", ranks=32, steps=6, seed=3, tp=8,
                               inject=["slow-nic:node001:0.3"]))
    fs = [f for f in run_rules(c)[0] if f.category == "slow_link"]
    # half the RDMA links are slow, so their median is too: the reference bandwidth finds them, one finding
    assert len(fs) == 1 and fs[0].evidence["host"] == "node001" and len(fs[0].links) == 16
    assert fs[0].evidence["compared_with"] == "reference"
    assert all(8 <= int(x) < 16 for l in fs[0].links for x in l.split("-") if 8 <= int(x) < 16)
    assert all(any(8 <= int(x) < 16 for x in l.split("-")) for l in fs[0].links)


class _Steps:
    def __init__(self, rows, kind="modern"):
        import pandas as pd

        self.kind = kind
        self.per_step = pd.DataFrame(rows, columns=["rank", "step", "computing", "free", "total"])


def test_replace_excess_hand_computed():
    # 3 ranks, 2 steps. Rank 2 computes 130 / 150 against 100 / 100: arrivals (computing + free) are
    # [101, 101, 131] and [102, 101, 152]; with rank 2 at the others' median (100) the latest arrivals are 101 and
    # 102, so the steps save 30 and 50 ms: 40 ms per step. Step totals' medians 140 and 140 -> share 40 / 140.
    rows = [(0, 1, 100, 1, 140), (1, 1, 100, 1, 140), (2, 1, 130, 1, 140),
            (0, 2, 100, 2, 140), (1, 2, 100, 1, 140), (2, 2, 150, 2, 160)]
    imp = replace_excess(_Steps(rows), "computing", [2], basis="x")
    assert imp.step_ms == pytest.approx(40.0) and imp.step_share == pytest.approx(40 / 140)
    # A rank that is slow but still arrives before another one saves nothing: the other sets the pace.
    rows = [(0, 1, 100, 1, 140), (1, 1, 100, 60, 140), (2, 1, 130, 1, 140)]
    assert replace_excess(_Steps(rows), "computing", [2], basis="x").step_ms == pytest.approx(0.0)
    # The rank x step tables are made once per frame (`_wide`): the same frame asked again gives the same table, a
    # frame changed since (another object) its own.
    st = _Steps(rows)
    assert _wide(st.per_step, "computing") is _wide(st.per_step, "computing")
    st2 = _Steps([(r, s, c + 10, f, t) for r, s, c, f, t in rows])
    assert _wide(st2.per_step, "computing").loc[2, 1] == pytest.approx(140.0)
    # Unknown column or step-trace kind: no estimate rather than a wrong one.
    assert replace_excess(_Steps(rows), "tail", [2]) is None
    assert replace_excess(_Steps(rows, kind=None), "computing", [2]) is None


def test_severity_follows_the_policy():
    from reportgen.rules.base import Finding
    from reportgen.rules.policy import Policy, decide, fault

    def f(sev, share, flt=None, category="slow_rank"):
        return Finding(id="slow-rank.compute", category=category, severity=sev, title="t", advice="a", page="x",
                       impact=None if share is None else {"step_ms": 100 * share, "step_share": share, "basis": "b"},
                       fault=flt)

    assert decide(f("critical", 0.25)) == "critical"
    assert decide(f("warning", 0.25)) == "warning"  # the rule's proposal is a ceiling (an upper-bound saving)
    assert decide(f("critical", 0.05)) == "warning"
    assert decide(f("warning", 0.019)) == "info" and decide(f("warning", 0.02)) == "warning"
    assert decide(f("info", 0.5)) == "info"  # the rule's information is a ceiling (a reading, one step)
    assert decide(f("warning", None)) == "info"  # no estimate: cannot warn
    assert decide(f("warning", 0.001, fault("link", 0.3, 0.5, 6.1))) == "warning"  # the fault floor
    assert decide(f("warning", None, fault("link", 0.3, 0.5, 6.1))) == "info"  # a floor needs an estimate too
    assert decide(f("critical", 0.3, fault("link", 0.3, 0.5, 6.1))) == "critical"  # a floor, not a ceiling
    assert decide(f("warning", None, category="data_quality")) == "warning"  # judged by consequence
    assert decide(f("warning", None, category="memory_pressure")) == "warning"
    assert decide(f("critical", 0.05), Policy(critical_share=0.04)) == "critical"


def test_fault_floor_states_both_savings():
    from reportgen.i18n import text
    from reportgen.rules.base import Finding
    from reportgen.rules.policy import apply, fault

    g = Finding(id="slow-link.bandwidth", category="slow_link", severity="warning", title="t", advice="a", page="x",
                why="A slow link slows every collective.", fault=fault("link", 0.3, 0.5, 6.1),
                impact={"step_ms": 1.5, "step_share": 0.01, "basis": "b"})
    apply(g)
    assert g.severity == "warning" and g.impact["fault"]["once_rest_fixed_ms"] == 6.1
    assert g.to_dict()["impact"]["fault"] == {"kind": "link", "ratio": 0.3, "limit": 0.5, "once_rest_fixed_ms": 6.1}
    why = text(g.why, "en")
    assert why.startswith("A slow link slows every collective.") and "1.50 ms" in why and "6.10 ms" in why


@pytest.fixture(scope="module")
def slow_rank_3(tmp_path_factory) -> Path:
    return generate_run(tmp_path_factory.mktemp("md") / "run", layout="ascend", ranks=8, steps=6, seed=4,
                        inject=["slow-rank:3:compute:1.3"])


@pytest.mark.parametrize("single", [False, True])
def test_findings_md_beside_summary_in_both_modes(tmp_path, slow_rank_3, single):
    import json

    from reportgen.cli import main

    out = tmp_path / ("r.html" if single else "r")
    assert main([str(slow_rank_3), "-o", str(out), "-q", *(["--single-file"] if single else [])]) == 0
    summary = json.loads((out.with_name("r.summary.json") if single else out / "summary.json").read_text())
    md = (out.with_name("r.findings.md") if single else out / "findings.md").read_text()
    fs = summary["findings"]
    slow = next(f for f in fs if f["id"] == "slow-rank.compute")
    assert slow["ranks"] == [3] and slow["impact"]["step_ms"] > 0
    # every finding, in the summary's order (severity, then saving), with its id and evidence pointer
    pos = [md.index(f"`{f['id']}`") for f in fs]
    assert pos == sorted(pos)
    assert f"evidence: `{slow['page']}`" in md and "Fixing this saves ~" in md
    assert md.splitlines()[2].startswith(f"{sum(f['severity'] == 'critical' for f in fs)} critical")


PAYLOADS = ["[x](javascript:alert(1))", "![x](http://evil.example/p.png)", "<img src=x onerror=alert(1)>",
            "<http://evil.example/x>", "see http://evil.example or www.evil.example", "`code` *em* &amp;",
            "a\n# heading\n- item", "node-01 (rank 3): 5.7 GB/s, 30 % of it"]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_findings_md_text_is_inert_and_reads_as_written(payload):
    import re

    from bs4 import BeautifulSoup
    from markdown_it import MarkdownIt

    from reportgen.site.render.findings_md import md_text

    s = md_text(payload)
    # the most permissive renderer: raw HTML and images on
    html = MarkdownIt("commonmark", {"html": True}).render("- " + s)
    soup = BeautifulSoup(html, "html.parser")
    assert {t.name for t in soup.find_all(True)} <= {"ul", "li"}, html
    assert soup.get_text().strip() == re.sub(r"\s+", " ", payload)
    # plain text stays plain: no escapes where nothing needs them
    assert md_text("node-01 (rank 3): 5.7 GB/s, 30 % of it") == "node-01 (rank 3): 5.7 GB/s, 30 % of it"


HEALTHY = [
    pytest.param(dict(ranks=16), id="16 ranks"),
    # the same shape runs by default in tests/test_rules.py::test_healthy_runs_give_no_warning[ascend-64-4-2]
    pytest.param(dict(ranks=64, stages=4, tp=2), id="64 ranks, 4 stages, tp 2", marks=pytest.mark.slow),
    pytest.param(dict(ranks=64, layout="mindinsight"), id="64 ranks, MindInsight"),
    pytest.param(dict(ranks=256, stages=4, tp=4, steps=6), id="256 ranks, 4 stages, tp 4", marks=pytest.mark.slow),
    pytest.param(dict(ranks=1024, stages=8, tp=8, steps=4), id="1024 ranks", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("kw", HEALTHY)
def test_healthy_runs_give_no_warning(tmp_path, kw):
    # the generator's realistic noise: 1 % per step and rank, 0.4 % steady per device, gamma host and data times,
    # about 1 % per link; no injection. A warning here is a bug in the rule, not in the test.
    kw = {"layout": "ascend", "steps": 8, "seed": 11, **kw}
    a = _analysis(generate_run(tmp_path / "run", **kw))
    loud = [(f.id, f.severity, str(f.title)) for f in run_rules(a)[0] if f.severity != "info"]
    assert not loud, loud


def test_divergence_point_names_the_slow_operator_and_links_the_timeline(tmp_path):
    from reportgen.analysis.execution import select
    from reportgen.layouts import load_execution, timeline_ranks
    from reportgen.site.pages.findings import finding_view

    path = generate_run(tmp_path / "run", layout="ascend", ranks=8, steps=4, seed=3, trace_view=True,
                        inject=["slow-op-rank:5:MatMul:3"])
    layout = discover(path)[0]
    run = load_run(layout, jobs=1)
    sel = select(run, timeline_ranks(layout), [])
    run.execution = load_execution(layout, run, sel.steps, sel.reasons, sel.ranks, sel.skipped)
    f = next(f for f in run_rules(analyze(run))[0] if f.id == "slow-rank.compute")
    ev = f.evidence
    assert f.ranks == [5] and ev["divergence_vs_rank"] != 5
    # the program starts with a forward MatMul: the first operator that parts is the first MatMul (MatMulV3, the
    # type the operator statistics name too)
    assert ev["divergence_first_type"] == "aclnnMm_MatMulV3_MatMulV3" and ev["divergence_first_extra_ms"] > 0
    # MatMul (forward and backward: one kernel type) accounts for the gap; nothing else is slower on rank 5
    types = [t.split(" (")[0] for t in ev["divergence_types"].split("; ")]
    assert types[0] == "aclnnMm_MatMulV3_MatMulV3", types
    assert ev["divergence_page"] == "cluster/execution.html#marey-rank-5"
    view = finding_view(f)
    assert view["divergence"]["page"] == "cluster/execution.html#marey-rank-5"
    assert "aclnnMm_MatMulV3_MatMulV3" in view["divergence"]["text"]
