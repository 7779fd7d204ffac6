"""`msreport compare` / `msreport trend`: synthetic before/after pairs in both layouts, the gate, noise, inputs."""

from __future__ import annotations

import json

import pytest

from reportgen.cli import main
from reportgen.compare import load_side
from reportgen.compare.model import SCHEMA, compare
from reportgen.analysis.operator_totals import op_key
from reportgen.site.views.summary import collective_type
from reportgen.synth import generate_run

LAYOUTS = ("ascend", "mindinsight")
PAIRS = {
    "base": dict(seed=3),
    "noise": dict(seed=4),  # a healthy run with other noise
    "slow-rank": dict(seed=3, inject=["slow-rank:5:compute:1.35"]),
    "slow-link": dict(seed=3, inject=["slow-link:2-3"]),
    "op-mix": dict(seed=3, inject=["op-mix:MatMulV3:1.6", "op-mix:Transpose:0.05"]),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """{(layout, name): (run folder, summary)}, 8 ranks, 6 steps each."""
    root = tmp_path_factory.mktemp("compare-runs")
    out = {}
    for layout in LAYOUTS:
        for name, kw in PAIRS.items():
            path = generate_run(root / f"{layout}-{name}", layout=layout, ranks=8, steps=6, **kw)
            out[(layout, name)] = (path, load_side(path)[0])
    return out


def _cmp(runs, layout, name, pct=5.0):
    return compare(runs[(layout, "base")][1], runs[(layout, name)][1], threshold_pct=pct)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_healthy_pair_with_other_noise_passes(runs, layout):
    c = _cmp(runs, layout, "noise")
    assert not c.gate.failed, c.gate.reasons
    assert c.step.status in ("within noise", "unchanged", "faster"), c.step
    assert not [p for p in c.phases if p.status == "slower" and p.extra["share"] >= 0.05 and abs(p.delta_pct) > 5]
    assert not [f for f in c.findings_by("new") if f.severity != "info"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_slow_rank_fails_and_names_the_rank(runs, layout):
    c = _cmp(runs, layout, "slow-rank")
    assert c.gate.failed
    # one cause, leading: the rank that computes longer; the step time, its peers' waiting and the findings on
    # rank 5 are what it did (issue 29: one slow rank gave nine reasons)
    assert len(c.gate.reasons) == 1, c.gate.reasons
    assert c.gate.reasons[0].startswith("rank 5 computes +"), c.gate.reasons
    cause = c.gate.causes[0]
    assert cause["kind"] == "rank" and cause["ranks"] == [5]
    effects = [str(e) for e in cause["effects"]]
    assert effects[0].startswith("step time +")
    assert any(e.startswith("new critical slow-rank.compute [rank 5]") for e in effects), effects
    # the rank's own extra computing is about the step time's growth (a synchronous cluster waits for it)
    grew = float(str(cause["cause"]).split("+")[1].split(" ms")[0])
    assert grew == pytest.approx(c.step.delta, rel=0.35)
    assert {i["cause"] for i in c.gate.items} == {0} and len(c.gate.items) >= 3
    zh = c.gate.reasons[0].render("zh")  # the same sentence in Chinese on a zh page
    assert zh.startswith("卡 5") and "计算时间" in zh and "slow-rank.compute" in zh, zh
    assert c.step.status == "slower" and c.step.delta_pct > 20
    assert c.ranks[0].extra["rank"] == 5  # the rank whose own phases moved is listed first
    assert c.ranks[0].extra["top_phase"]["key"] in ("computing_ms", "fp_and_bp_ms")
    assert {f.id for f in c.findings_by("new")} >= {"slow-rank.compute"}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_slow_link_fails_on_the_new_finding_and_lists_the_link(runs, layout):
    c = _cmp(runs, layout, "slow-link")
    assert c.gate.failed
    assert any("slow-link" in r and "2-3" in r for r in c.gate.reasons), c.gate.reasons
    assert [l.label for l in c.links] == ["2-3"] and c.links[0].delta_pct < -50
    assert c.links[0].status == "slower"  # lower bandwidth is worse
    assert any(f.id.startswith("slow-link") and f.links == ["2-3"] for f in c.findings_by("new"))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_changed_operator_mix_names_the_operators(runs, layout):
    c = _cmp(runs, layout, "op-mix")
    assert c.gate.failed
    # every rank computes longer: no rank stands out, the phase that grew is the cause, the step time its effect
    assert c.gate.reasons[0].startswith(("Computing +", "Forward + backward +")), c.gate.reasons
    assert "step time +" in c.gate.reasons[0] and c.gate.causes[0]["kind"] == "phase"
    top = c.operators[0]
    assert (top.extra["kind"], top.label, top.status) == ("type", "MatMulV3", "slower") and top.delta_pct > 40
    new_types = [o.label for o in c.operators if o.status == "new" and o.extra["kind"] == "type"]
    assert new_types == ["Transpose"]
    assert any(o.status == "new" and o.extra["kind"] == "operator" and "Transpose" in o.label for o in c.operators)
    # other operator types did not change beyond the noise
    assert all(o.status != "slower" for o in c.operators if o.extra["kind"] == "type" and o.label != "MatMulV3")


def test_unbalanced_stage_is_named_per_stage(tmp_path):
    kw = dict(layout="ascend", ranks=8, steps=6, stages=2, seed=2)
    base = load_side(generate_run(tmp_path / "b", **kw))[0]
    new = load_side(generate_run(tmp_path / "n", inject=["unbalanced-stage:1:1.3"], **kw))[0]
    c = compare(base, new, threshold_pct=5)
    assert [s.extra["stage"] for s in c.stages] == [0, 1]
    s0, s1 = c.stages
    assert s1.extra["top_phase"]["key"] == "computing_ms" and s1.extra["top_phase"]["delta"] > 30
    assert s0.extra["phases"]["computing_ms"]["status"] in ("within noise", "unchanged")
    assert any("new warning stage-imbalance" in r for r in c.gate.reasons), c.gate.reasons
    assert c.ranks[0].extra["stage"] == 1


def test_self_comparison_has_no_delta_and_exits_0(runs, tmp_path, capsys):
    """A summary against itself (the run folder's summary: comparing run folders is test_summaries_compare_like_run_
    folders; issue 31: analysing the run twice more decided nothing new)."""
    (tmp_path / "s.json").write_text(json.dumps(runs[("ascend", "base")][1]))
    out = tmp_path / "self"
    assert main(["compare", str(tmp_path / "s.json"), str(tmp_path / "s.json"), "-o", str(out),
                 "--fail-on-regression", "5", "-q"]) == 0
    data = json.loads((out / "compare.json").read_text())
    assert data["schema"] == SCHEMA
    assert data["step_ms"]["delta_ms"] == 0 and data["step_ms"]["status"] == "unchanged"
    assert all(p["delta"] == 0 for p in data["phases"])
    assert all(r["delta"] == 0 for r in data["ranks"])
    assert all(o["status"] == "unchanged" for o in data["operators"])
    assert data["findings"]["new"] == [] and data["findings"]["resolved"] == []
    assert data["gate"] == {"threshold_pct": 5.0, "failed": False, "reasons": [], "items": [], "causes": [],
                            "comparable": True, "noise_known": True}
    assert data["comparability"]["comparable"] and all(c["same"] in (True, None) for c in data["comparability"]["checks"])
    assert data["noise"] == {"known": True, "note": None} and data["findings"]["changed"] == []
    assert data["warnings"] == []
    assert (out / "index.html").is_file() and (out / ".msreport").is_file()


def _strip_sources(d: dict) -> dict:
    d = dict(d)
    for side in ("base", "new"):
        d[side] = {k: v for k, v in d[side].items() if k not in ("source", "kind", "generated_at")}
    return d


def test_summaries_compare_like_run_folders(runs, tmp_path):
    base, new = runs[("mindinsight", "base")][0], runs[("mindinsight", "slow-rank")][0]
    rb, rn = tmp_path / "rep-base", tmp_path / "rep-new"
    assert main([str(base), "-o", str(rb), "-q"]) == 0
    assert main([str(new), "-o", str(rn), "-q"]) == 0
    assert main(["compare", str(base), str(new), "-o", str(tmp_path / "a"), "--fail-on-regression", "5", "-q"]) == 3
    # report folder for BASE, summary.json file for NEW (what CI keeps)
    assert main(["compare", str(rb), str(rn / "summary.json"), "-o", str(tmp_path / "b"),
                 "--fail-on-regression", "5", "-q"]) == 3
    a = json.loads((tmp_path / "a" / "compare.json").read_text())
    b = json.loads((tmp_path / "b" / "compare.json").read_text())
    assert (a["base"]["kind"], b["base"]["kind"], b["new"]["kind"]) == ("run", "report", "summary")
    assert _strip_sources(a) == _strip_sources(b)
    assert a["gate"]["failed"] and a["gate"]["reasons"] == b["gate"]["reasons"]


def test_single_file_and_bad_command_lines(runs, tmp_path, capsys):
    base, new = runs[("ascend", "base")][1], runs[("ascend", "op-mix")][1]
    (tmp_path / "b.json").write_text(json.dumps(base))
    (tmp_path / "n.json").write_text(json.dumps(new))
    out = tmp_path / "cmp.html"
    assert main(["compare", str(tmp_path / "b.json"), str(tmp_path / "n.json"), "-o", str(out), "--single-file",
                 "-q"]) == 0  # no gate asked: exit 0 whatever changed
    assert out.is_file() and (tmp_path / "cmp.compare.json").is_file()
    html = out.read_text()
    assert "vega-embed" in html.lower() or "vegaEmbed" in html
    assert "MatMulV3" in html and "No gate set" in html
    for bad in (["compare", str(tmp_path / "b.json"), "-o", str(tmp_path / "x")],
                ["compare", str(tmp_path / "b.json"), str(tmp_path / "n.json"), "-o", str(tmp_path / "x"),
                 "--fail-on-regression", "-1"],
                ["trend", "-o", str(tmp_path / "x")]):
        with pytest.raises(SystemExit) as e:
            main(bad)
        assert e.value.code == 2
    assert main(["compare", str(tmp_path / "b.json"), str(tmp_path / "missing"), "-o", str(tmp_path / "x")]) == 2
    (tmp_path / "junk.json").write_text("{}")
    assert main(["compare", str(tmp_path / "b.json"), str(tmp_path / "junk.json"), "-o", str(tmp_path / "x")]) == 2
    assert "not an msreport summary.json" in capsys.readouterr().err


def test_summaries_without_the_comparison_keys_still_compare(runs):
    """Summaries written before msreport added the comparison keys: fewer sections, no noise, no crash."""
    old = []
    for name in ("base", "slow-rank"):
        s = json.loads(json.dumps(runs[("ascend", name)][1]))
        for key in ("generated_at",):
            s.pop(key)
        s["metrics"]["step_trace"].pop("spread")
        s["metrics"].pop("operators")
        s["metrics"]["communication"].pop("groups")
        s["metrics"]["communication"].pop("collectives")
        old.append(s)
    c = compare(*old, threshold_pct=5)
    assert c.gate.failed and c.step.noise is None and c.step.status == "slower"
    assert c.operators == [] and [d for d in c.communication] == []
    c.to_dict()


def test_run_fact_warnings(runs):
    a = runs[("ascend", "base")][1]
    b = json.loads(json.dumps(a))
    b["run"]["ranks"] = b["run"]["ranks"][:4]
    b["run"]["profiler_level"] = "Level0"
    b["run"]["parallel_mode"] = "pipeline-parallel"
    warnings = compare(a, b).warnings
    assert any("rank count" in w for w in warnings)
    assert any("parallel layout" in w for w in warnings)
    assert any("profiler level" in w for w in warnings)


def test_trend_orders_by_date_and_tracks_findings(runs, tmp_path):
    paths = []
    for n, (name, when) in enumerate((("slow-rank", "2026-11-03T10:00:00+00:00"), ("base", "2026-11-01T10:00:00+00:00"),
                                      ("noise", "2026-11-02T10:00:00+00:00"))):
        s = dict(runs[("ascend", name)][1], generated_at=when)
        p = tmp_path / f"{name}.summary.json"
        p.write_text(json.dumps(s))
        paths.append(str(p))
    out = tmp_path / "trend"
    assert main(["trend", *paths, "-o", str(out), "-q"]) == 0
    t = json.loads((out / "trend.json").read_text())
    assert [r["label"] for r in t["runs"]] == ["base", "noise", "slow-rank"]
    assert t["runs"][2]["step_ms"] > t["runs"][0]["step_ms"] * 1.2
    slow = [f for f in t["findings"] if f["id"] == "slow-rank.compute"]
    assert slow and slow[0]["present"] == [False, False, True] and slow[0]["first"] == 2
    assert (out / "index.html").is_file()


def test_summary_keys_for_comparison(runs):
    s = runs[("ascend", "base")][1]
    assert s["generated_at"].endswith("+00:00")
    assert s["run"]["profiler_level"] == "Level1" and s["run"]["framework"] == "torch_npu"
    spread = s["metrics"]["step_trace"]["spread"]
    assert spread["cluster"]["total_ms"] > 0 and set(spread["per_rank"]) == {str(r) for r in range(8)}
    ops = s["metrics"]["operators"]
    assert ops["basis"] == "per step" and ops["types"][0]["op_type"] == "MatMulV3"
    assert ops["top"] and all("-op" not in o["name"] for o in ops["top"])
    comm = s["metrics"]["communication"]
    assert comm["groups"][0]["group"] == "dp" and comm["collectives"][0]["collective"] == "AllReduce"


def test_operator_names_and_collectives():
    assert op_key("Default/network/layer0/MatMulV3-op08") == "Default/network/layer0/MatMulV3"
    assert op_key("aclnnMatMulV3_3") == "aclnnMatMulV3"
    assert op_key("Gather-op3_1a2b3c4d5e6f7a8b") == "Gather"
    assert collective_type("hcom_allReduce__1_4_1") == "AllReduce"
    assert collective_type("Default/AllGather-op12") == "AllGather"
    assert collective_type("hcom_batchSendRecv__3_0") == "BatchSendRecv"


@pytest.mark.browser
def test_comparison_page_renders_offline(runs, tmp_path):
    from test_browser import assert_charts_drawn, render

    base, new = runs[("ascend", "base")][0], runs[("ascend", "slow-rank")][0]
    out = tmp_path / "cmp"
    assert main(["compare", str(base), str(new), "-o", str(out), "--fail-on-regression", "5", "-q"]) == 3
    page = out / "index.html"
    dom = render(page)
    assert_charts_drawn(dom, page, 4)
    gate = dom.select_one("#gate")
    assert "failed" in gate.get("class") and "slow-rank.compute" in gate.get_text()


def test_compare_takes_the_rule_thresholds_of_the_main_command(runs, tmp_path, capsys):
    """`--set` / `--thresholds` reach the analysis of run folders: raising slow-link's drop to 0.99 removes the
    slow-link finding of the NEW run; a mistyped key is a usage error (exit 2)."""
    base, new = runs[("ascend", "base")][0], runs[("ascend", "slow-link")][0]
    out = tmp_path / "cmp"
    # the default thresholds (the fixture's summaries of the same folders): a new slow-link finding fails the gate
    by_default = _cmp(runs, "ascend", "slow-link", pct=50)
    assert by_default.gate.failed and any(f.id.startswith("slow-link") for f in by_default.findings_by("new"))
    toml = tmp_path / "t.toml"
    toml.write_text("[slow-link]\nmin_drop = 0.99\n")
    assert main(["compare", str(base), str(new), "-o", str(out), "-q", "--thresholds", str(toml)]) == 0
    report = json.loads((out / "compare.json").read_text())
    assert not any(f["id"].startswith("slow-link") for f in report["findings"]["new"])
    with pytest.raises(SystemExit) as e:
        main(["compare", str(base), str(new), "-o", str(out), "--set", "slow-link.min_dorp=0.9"])
    assert e.value.code == 2 and "min_dorp" in capsys.readouterr().err


def test_main_help_lists_the_sub_commands(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    assert "msreport compare BASE NEW" in text and "msreport trend SUMMARY" in text


# --- the gate's rules, each on a summary changed by hand (issue 29) ---------------------------------------------

def _copy(s: dict) -> dict:
    return json.loads(json.dumps(s))


def _add(s: dict, key: str, ms: float, ranks=None, total: bool = True) -> dict:
    """`s` with `ms` added to phase `key` (and to the step time when `total`) on `ranks` (default: all)."""
    s = _copy(s)
    for r, row in s["metrics"]["step_trace"]["per_rank"].items():
        if ranks is None or int(r) in ranks:
            row[key] = (row.get(key) or 0.0) + ms
            if total:
                row["total_ms"] += ms
    return s


def test_more_overlapped_communication_is_no_regression(runs):
    base = runs[("ascend", "base")][1]
    over = base["metrics"]["step_trace"]["per_rank"]["0"]["overlapped_ms"]
    new = _add(_add(base, "overlapped_ms", over * 1.04, total=False), "communication_ms", over * 1.04, total=False)
    c = compare(base, new, threshold_pct=0)
    ph = {p.key: p for p in c.phases}
    assert ph["overlapped_ms"].delta_pct > 100 and ph["overlapped_ms"].status == "faster"  # more hidden: better
    assert not c.gate.failed and c.gate.reasons == [], c.gate.reasons


def test_a_phase_on_a_near_zero_base_is_judged_in_ms(runs):
    base = _add(runs[("ascend", "base")][1], "bubble_ms", 0.01, total=False)
    step = compare(base, base).step.base
    # +4500 % of a near-zero bubble, 0.3 % of the step: no regression at 5 %
    small = compare(base, _add(base, "bubble_ms", 0.45), threshold_pct=5)
    bubble = next(p for p in small.phases if p.key == "bubble_ms")
    assert bubble.delta_pct > 4000 and not small.gate.failed, small.gate.reasons
    # the same phase growing by 10 % of the step trips, stated in ms against the step, not in percent of itself
    big = compare(base, _add(base, "bubble_ms", 0.10 * step), threshold_pct=5)
    assert big.gate.failed
    text = " ".join(str(r) for r in big.gate.reasons)
    assert "Bubble +" in text and "ms per step (10.0 % of the base step" in text and "%  (" not in text


def test_a_faster_run_never_fails(runs):
    c = compare(runs[("ascend", "slow-rank")][1], runs[("ascend", "base")][1], threshold_pct=0)
    assert c.step.status == "faster" and not c.gate.failed and c.gate.reasons == []


def test_severity_change_is_changed_and_only_a_rise_gates(runs):
    s = runs[("ascend", "slow-rank")][1]
    target = next(f for f in s["findings"] if f["severity"] == "warning")
    up, down = _copy(s), _copy(s)
    next(f for f in up["findings"] if f["id"] == target["id"] and f["ranks"] == target["ranks"])["severity"] = "critical"
    crit = next(f for f in s["findings"] if f["severity"] == "critical")
    next(f for f in down["findings"] if f["id"] == crit["id"] and f["ranks"] == crit["ranks"])["severity"] = "warning"
    c = compare(s, up, threshold_pct=5)
    changed = c.findings_by("changed")
    assert [(f.id, f.base_severity, f.severity) for f in changed] == [(target["id"], "warning", "critical")]
    assert target["id"] not in {f.id for f in c.findings_by("unchanged") if f.ranks == target["ranks"]}
    assert c.gate.failed and any("escalated from warning to critical" in r for r in c.gate.reasons)
    c = compare(s, down, threshold_pct=5)
    assert [(f.id, f.severity) for f in c.findings_by("changed")] == [(crit["id"], "warning")]
    assert not c.gate.failed, c.gate.reasons
    assert c.to_dict()["findings"]["changed"][0]["base_severity"] == "critical"


def test_slow_link_is_its_own_cause(runs):
    c = _cmp(runs, "ascend", "slow-link")
    link = [x for x in c.gate.causes if x["kind"] == "finding" and "2-3" in str(x["cause"])]
    assert len(link) == 1 and str(link[0]["cause"]).startswith("new ")


def test_runs_that_cannot_be_compared_exit_4(runs, tmp_path, capsys):
    a = runs[("ascend", "base")][1]
    for change, key in ((lambda s: s["run"].update(ranks=s["run"]["ranks"][:4]), "world_size"),
                        (lambda s: s["run"].update(profiler_level="Level0"), "profiler_level"),
                        (lambda s: s["run"].update(parallel_mode="pipeline-parallel", stages=2), "parallel_layout"),
                        (lambda s: [row.update(capacity_mb=32768.0) for row in
                                    s["metrics"]["memory"]["per_rank"].values()], None)):
        b = _copy(a)
        change(b)
        c = compare(a, b, threshold_pct=5)
        blocking = [x["key"] for x in c.comparability if x["blocking"]]
        if key is None:  # one side records no capacity: not known, not blocking
            assert blocking == [] and c.gate.comparable
            continue
        assert blocking == [key] and not c.gate.comparable and not c.gate.failed
    # the device: both sides record a memory capacity, and they differ
    a2, b2 = _copy(a), _copy(a)
    for s, cap in ((a2, 65536.0), (b2, 32768.0)):
        for row in s["metrics"]["memory"]["per_rank"].values():
            row["capacity_mb"] = cap
    c = compare(a2, b2)
    dev = next(x for x in c.comparability if x["key"] == "device")
    assert (dev["base"], dev["new"], dev["blocking"]) == ("64 GB", "32 GB", True)
    # the step count differs: listed, never blocking
    b3 = _copy(a)
    b3["run"]["steps"] = 4
    steps = next(x for x in compare(a, b3).comparability if x["key"] == "steps")
    assert (steps["same"], steps["blocking"]) == (False, False)
    # the command: exit 4 with a gate, 0 without; the page says why
    (tmp_path / "a.json").write_text(json.dumps(a2))
    (tmp_path / "b.json").write_text(json.dumps(b2))
    out = tmp_path / "cmp"
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "-o", str(out),
                 "--fail-on-regression", "5"]) == 4
    assert "cannot compare" in capsys.readouterr().err
    data = json.loads((out / "compare.json").read_text())
    assert data["comparability"]["comparable"] is False and data["gate"]["failed"] is False
    from bs4 import BeautifulSoup
    gate = BeautifulSoup((out / "index.html").read_text(), "html.parser").select_one("#gate")
    assert "incomparable" in gate["class"] and "64 GB" in gate.get_text() and "exits 4" in gate.get_text()
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "-o", str(out), "-q"]) == 0


@pytest.fixture(scope="module")
def one_step(tmp_path_factory) -> dict:
    return load_side(generate_run(tmp_path_factory.mktemp("one") / "run", ranks=8, steps=1, seed=3))[0]


def test_a_single_step_run_has_no_noise_estimate_and_no_gate_on_jitter(one_step, tmp_path):
    base = one_step
    assert base["run"]["steps"] == 1
    jitter = _add(base, "free_ms", 0.3)  # +0.3 ms of free time on every rank
    c = compare(base, jitter, threshold_pct=0)
    assert not c.gate.noise_known and c.noise_note is not None
    assert str(c.noise_note).startswith("No noise estimate: the base run has 1 step(s); the new run has 1 step(s)")
    assert not c.gate.failed, c.gate.reasons
    assert c.step.status == "within noise"
    # a real regression still fails without a noise estimate
    step = c.step.base
    c = compare(base, _add(base, "computing_ms", 0.2 * step), threshold_pct=5)
    assert c.gate.failed and c.gate.reasons[0].startswith("Computing +")
    d = c.to_dict()
    assert d["noise"]["known"] is False and d["noise"]["note"].startswith("No noise estimate")
    (tmp_path / "a.json").write_text(json.dumps(base))
    (tmp_path / "b.json").write_text(json.dumps(jitter))
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "-o", str(tmp_path / "c"),
                 "--fail-on-regression", "0", "-q"]) == 0
    from bs4 import BeautifulSoup
    dom = BeautifulSoup((tmp_path / "c" / "index.html").read_text(), "html.parser")
    assert "No noise estimate" in dom.select_one("#noise-note").get_text()
    assert "passed" in dom.select_one("#gate")["class"]


def test_gate_box_leads_with_the_cause(runs, tmp_path):
    from bs4 import BeautifulSoup

    base, new = runs[("ascend", "base")][1], runs[("ascend", "slow-rank")][1]
    (tmp_path / "a.json").write_text(json.dumps(base))
    (tmp_path / "b.json").write_text(json.dumps(new))
    out = tmp_path / "cmp"
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "-o", str(out),
                 "--fail-on-regression", "5", "-q", "--lang", "en"]) == 3
    gate = BeautifulSoup((out / "index.html").read_text(), "html.parser").select_one("#gate")
    causes = gate.select("ul.causes > li")
    assert len(causes) == 1
    assert causes[0].strong.get_text().startswith("rank 5 computes +")
    effects = [li.get_text() for li in causes[0].select("ul > li")]
    assert effects[0].startswith("step time +") and any("slow-rank.compute" in e for e in effects)


def test_compare_and_trend_json_do_not_depend_on_the_hash_seed(runs, tmp_path):
    """compare.json and trend.json list operators, links and phases in one order whatever PYTHONHASHSEED is (the
    items came out in set order before: two builds of the same comparison differed)."""
    import os
    import subprocess
    import sys

    paths = []
    for name in ("base", "op-mix"):
        p = tmp_path / f"{name}.summary.json"
        p.write_text(json.dumps(runs[("ascend", name)][1]))
        paths.append(str(p))
    code = ("import json, sys; from reportgen.compare import read_summary; from reportgen.compare.model import compare;"
            "from reportgen.compare.trend import build_trend; from pathlib import Path;"
            "b, n = (read_summary(Path(p)) for p in sys.argv[1:3]);"
            "print(json.dumps([compare(b, n).to_dict(), build_trend([Path(p) for p in sys.argv[1:3]]).to_dict()],"
            " default=str))")
    outs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        res = subprocess.run([sys.executable, "-c", code, *paths], env=env, capture_output=True, text=True, check=True)
        outs.append(res.stdout)
    assert [o["key"] for o in json.loads(outs[0])[0]["operators"]]  # there are operators to order (op-mix changes two)
    assert outs[0] == outs[1]  # the text: the order of keys and items too
