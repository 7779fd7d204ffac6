"""Single-device runs get MindSpore Insight's single-device layout; single-step runs get bars and points."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from reportgen.cli import main
from tests.conftest import SAMPLES

SAMPLE = str(SAMPLES / "mindinsight" / "single_device_run2_rank1_full")
pytestmark = pytest.mark.skipif(not Path(SAMPLE).is_dir(), reason=f"sample {SAMPLE} not available")


def _soup(path):
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def _spec(soup, fig_id):
    return json.loads(soup.select_one(f"#{fig_id} script.spec").string)


def _marks(spec) -> set[str]:
    layers = spec.get("layer", [spec])
    return {(l["mark"]["type"] if isinstance(l["mark"], dict) else l["mark"]) for l in layers if "mark" in l}


@pytest.fixture(scope="module")
def device_site(tmp_path_factory):
    out = tmp_path_factory.mktemp("device") / "site"
    assert main([SAMPLE, "-o", str(out), "-q", "--lang", "en"]) == 0
    return out


def test_single_device_overview_is_the_device_dashboard(device_site):
    soup = _soup(device_site / "index.html")
    heads = [h.get_text(strip=True) for h in soup.select("h2")]
    for title in ("Step time", "Operators", "Data preparation", "Memory", "Timeline", "CPU utilisation"):
        assert title in heads, heads
    text = soup.get_text(" ")
    assert "cluster median" not in text.lower() and "Spread" not in heads
    ids = [f["id"] for f in soup.select("figure.chart")]
    # the step phases over steps instead of one bar "per rank" and a breakdown of one bar
    assert "fig-step-phases" in ids and "fig-step-total" not in ids and "fig-breakdown" not in ids
    rows = _spec(soup, "fig-step-phases")["datasets"]["steps"]
    assert {r["phase"] for r in rows} == {"Step interval", "Forward + backward", "Tail", "Step total"}
    # step_trace_raw_1_detail_time.csv, step 1: fp_and_bp 2366808, tail 4097, total 2370905 ticks of 10 ns
    by_phase = {r["phase"]: r["value"] for r in rows if r["step"] == 1}
    assert by_phase["Forward + backward"] == pytest.approx(23.66808, abs=1e-3)
    assert by_phase["Tail"] == pytest.approx(0.04097, abs=1e-3)
    assert by_phase["Step total"] == pytest.approx(23.70905, abs=1e-3)
    assert {"fig-rank-1-optypes", "fig-rank-1-timeline", "fig-rank-1-cpu"} <= set(ids)
    links = {a["href"] for a in soup.select("a")}
    for section in ("operators", "data", "timeline", "cpu"):
        assert f"ranks/rank-1.html#{section}" in links


def test_single_device_step_trace_and_rank_page_have_no_cluster_rows(device_site):
    st = _soup(device_site / "cluster" / "step-trace.html")
    assert st.h1.get_text(strip=True) == "Step trace"
    assert "Spread across ranks" not in [h.get_text(strip=True) for h in st.select("h2")]
    rank = _soup(device_site / "ranks" / "rank-1.html")
    assert not rank.select("#rank-steps tr.median")
    nav = [a.get_text(strip=True) for a in rank.select("header nav a")]
    assert "Communication" not in nav and "Strategy" not in nav


def test_single_step_runs_get_bars_and_points(tmp_path):
    from reportgen.synth import generate_run
    run = generate_run(tmp_path / "run", ranks=1, steps=1)
    out = tmp_path / "site"
    assert main([str(run), "-o", str(out), "-q", "--lang", "en"]) == 0
    index = _soup(out / "index.html")
    assert _marks(_spec(index, "fig-step-phases")) == {"bar"}
    rank = _soup(out / "ranks" / "rank-0.html")
    fig = rank.select_one("#fig-rank-0-steps")
    spec = json.loads(fig.select_one("script.spec").string)
    shared = (out / "assets").glob("rank-specs*.js")
    if fig.get("data-spec"):  # the spec body is shared between rank pages
        text = next(shared).read_text()
        body = json.loads(text[text.index("=") + 1:].rstrip().rstrip(";"))[fig["data-spec"]]
        spec = {**body, **spec}
    assert _marks(spec) == {"bar"}
    ex = _soup(out / "cluster" / "execution.html")
    left = _spec(ex, "fig-time-overview")
    def find_line(s):
        for l in s.get("layer", []):
            m = l.get("mark")
            if isinstance(m, dict) and m.get("type") == "line" and "strokeDash" not in m:
                return m
            r = find_line(l)
            if r:
                return r
    assert find_line(left)["point"]  # one step: a line through one point would draw nothing
    # more than one step: lines, no points forced on the per-device lines
    run3 = generate_run(tmp_path / "run3", ranks=1, steps=3)
    assert main([str(run3), "-o", str(tmp_path / "site3"), "-q", "--lang", "en"]) == 0
    assert _marks(_spec(_soup(tmp_path / "site3" / "index.html"), "fig-step-phases")) == {"line"}
