"""Issue 17, the writing side: charts at hundreds of ranks name the culprits, rank pages are written in parallel
identically, the single file keeps the flagged ranks' pages, numeric cells stay escaped and sortable."""

from __future__ import annotations

import json

import pytest
from bs4 import BeautifulSoup

from reportgen.charts import column_codec as columnar
from reportgen.layouts import discover
from reportgen.progress import Progress
from reportgen.report import BuildOptions, analyse_phase, load_phase
from reportgen.site.render import builder
from reportgen.site.render import html_rows
from reportgen.site.render import jinja_env
from reportgen.site.plan.planner import plan_pages
from reportgen.site.views.summary import build_summary
from reportgen.synth import generate_run

SLOW_RANK, SLOW_STAGE, LINK = 171, 2, (8, 9)


@pytest.fixture(scope="module")
def plan_512(tmp_path_factory):
    """A 512-rank run (tp8 pp4, 64 hosts) with a slow rank, a slow stage and a slow link, planned (not written)."""
    run = generate_run(tmp_path_factory.mktemp("r512") / "run", ranks=512, steps=2, stages=4, tp=8,
                       inject=[f"slow-rank:{SLOW_RANK}:compute:1.3", f"unbalanced-stage:{SLOW_STAGE}:1.3",
                               f"slow-link:{LINK[0]}-{LINK[1]}"])
    opts = BuildOptions(jobs=2)
    r = load_phase(discover(run)[0], opts, Progress(False))
    analysis, findings, thresholds = analyse_phase(r, opts)
    return plan_pages(analysis, findings, thresholds=thresholds), analysis


def _chart(plan, path: str, chart_id: str) -> dict:
    """The chart's spec with its datasets as rows of objects (a columnar one decoded as report.js does, without
    the `<field>_i` indexes it adds)."""
    page = next(p for p in plan.pages if p.path == path)
    chart = next(c for c in page.charts if c.id == chart_id)
    if not chart.columns:
        return chart.spec
    rows = {name: [{k: v for k, v in r.items() if not (k.endswith("_i") and k[:-2] in data.get("dicts", {}))}
                   for r in columnar.decode(data)] for name, data in chart.columns.items()}
    return {**chart.spec, "datasets": {**chart.spec["datasets"], **rows}}


def _marks(spec: dict) -> list[str]:
    out = []

    def walk(v):
        if isinstance(v, dict):
            if "mark" in v:
                m = v["mark"]
                out.append(m if isinstance(m, str) else m.get("type"))
            for k, x in v.items():
                if k != "datasets":
                    walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
    walk(spec)
    return out


@pytest.mark.slow  # loads a 512-rank run once for the module (~30 s on an idle 2-core machine)
def test_step_distribution_names_the_slow_rank_and_compares_within_stages(plan_512):
    plan, a = plan_512
    spec = _chart(plan, "cluster/step-trace.html", "step-total")
    rows = spec["datasets"]["ranks"]
    assert len(rows) == 512  # every rank a tick: a distribution, nothing averaged
    assert [r["rank"] for r in rows if r["status"] == "slow"] == [SLOW_RANK]
    assert len({r["stage"] for r in rows}) == 4  # one line per pipeline stage
    assert "text" in _marks(spec)  # the slow rank is labelled with its number
    by_stage: dict[str, list[float]] = {}
    for r in rows:
        by_stage.setdefault(r["stage"], []).append(r["value"])
    # the unbalanced stage stands out as a whole stage, not as one rank
    med = {s: sorted(v)[len(v) // 2] for s, v in by_stage.items()}
    assert max(med, key=med.get) == f"stage {SLOW_STAGE}"


@pytest.mark.slow  # loads a 512-rank run once for the module (~30 s on an idle 2-core machine)
def test_breakdown_and_heatmap_keep_the_slow_rank_by_number(plan_512):
    plan, _ = plan_512
    bars = _chart(plan, "cluster/step-trace.html", "breakdown")["datasets"]["breakdown"]
    assert f"{SLOW_RANK} ⚑" in {b["label"] for b in bars}  # its own bar, never a group mean
    heat = _chart(plan, "cluster/step-trace.html", "heatmap")
    cells = heat["datasets"]["cells"]
    flagged = [c for c in cells if c.get("flag")]
    assert flagged and all(str(SLOW_RANK) in c["flag"] for c in flagged)
    # the flagged rank's band holds the largest excess: the slow rank is the visible band
    top = max(cells, key=lambda c: c["value"])
    lo, _, hi = top["ranks"].partition("–")
    assert int(lo) <= SLOW_RANK <= int(hi or lo)


@pytest.mark.slow  # loads a 512-rank run once for the module (~30 s on an idle 2-core machine)
def test_communication_charts_name_the_culprits(plan_512):
    plan, a = plan_512
    page = "cluster/communication.html"
    wait = _chart(plan, page, "comm-wait")["datasets"]["ranks"]
    assert len(wait) == 512 and SLOW_RANK in {r["rank"] for r in wait if r["status"] == "slow"}
    slow_wait = next(r["value"] for r in wait if r["rank"] == SLOW_RANK)
    same_stage = [r["value"] for r in wait if r["stage"] == next(x["stage"] for x in wait if x["rank"] == SLOW_RANK)]
    assert slow_wait == min(same_stage)  # the rank the others wait for waits least in its stage
    links = _chart(plan, page, "comm-links")
    named = [p for p in links["datasets"]["links"] if p["slow"]]
    assert [p["link"] for p in named] == [f"{LINK[0]}→{LINK[1]}"] and "text" in _marks(links)
    assert set(links["datasets"]["links"][0]) == {"link", "group", "transport", "bandwidth_gbps", "size_mb",
                                                  "time_ms", "slow"}  # only what the chart reads
    graph = _chart(plan, page, "comm-graph")
    nodes = graph["datasets"]["nodes"]
    assert len(nodes) == 64  # hosts, not 512 ranks
    host = a.run.ranks[LINK[0]].info.host
    marked = [n for n in nodes if n["slow"]]
    assert [n["id"] for n in marked] == [host] and f"{LINK[0]}→{LINK[1]}" in marked[0]["note"]
    # the drill-down table under the host graph starts with the slow link, even one inside a host
    pairs = next(p for p in plan.pages if p.path == page).context.host_pairs
    assert pairs[0]["slow"] and pairs[0]["slow_links"] == [f"{LINK[0]}-{LINK[1]}"] and pairs[0]["src"] == host
    matrix = _chart(plan, page, "comm-matrix")
    slow_cells = [c for c in matrix["datasets"]["cells"] if c["slow"]]
    assert slow_cells and all(f"{LINK[0]}→{LINK[1]}" in c["slow_links"] for c in slow_cells)
    # binned blocks are coloured by their slowest link by default: the slow link darkens its block
    params = [p for p in matrix.get("params", []) if p["name"] == "metric"]
    assert params and params[0]["value"] == "min_bandwidth_gbps"
    block = next(c for c in slow_cells if c["group"] == "All groups")
    assert block["min_bandwidth_gbps"] < block["bandwidth_gbps"]


@pytest.fixture()
def planned_8(synth_8, tmp_path):
    """synth_8's analysis, its planned site and summary, and that site written by one process (`tmp_path/one`)."""
    opts = BuildOptions()
    run = load_phase(discover(synth_8)[0], opts, Progress(False))
    analysis, findings, thresholds = analyse_phase(run, opts)
    plan = plan_pages(analysis, findings, thresholds=thresholds)
    summary = build_summary(analysis, findings, thresholds)
    builder.write_site(plan, summary, tmp_path / "one", synth_8, jobs=1)
    return analysis, plan, summary


def _assert_same_site(one, two) -> None:
    """The same files, byte for byte (rank pages among them)."""
    files = sorted(p.relative_to(one) for p in one.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(two) for p in two.rglob("*") if p.is_file())
    assert any(str(f).startswith("ranks/") for f in files)
    for f in files:
        assert (one / f).read_bytes() == (two / f).read_bytes(), f


def test_rank_pages_written_in_parallel_are_identical(planned_8, synth_8, tmp_path, monkeypatch):
    _, plan, summary = planned_8
    monkeypatch.setattr(builder, "PARALLEL_MIN_PAGES", 1)
    seen = []
    builder.write_site(plan, summary, tmp_path / "two", synth_8, jobs=2, progress=lambda n, t: seen.append((n, t)))
    _assert_same_site(tmp_path / "one", tmp_path / "two")
    assert seen[-1] == (len(plan.pages), len(plan.pages))


def test_the_main_process_writes_the_rank_pages_no_writer_started(planned_8, synth_8, tmp_path, monkeypatch):
    """With -j 2 one page writer is forked (not two beside this process: each forked copy's page tables hold this
    process's memory, counted once more in the tree's RSS); once its own pages are written this process claims
    chunks of rank pages from the counter it shares with the writer. The site is byte for byte the one a single
    process writes, whichever process wrote a page (the shared chart specs by key), every rank page is written
    once, and the progress counts each page once."""
    import os

    analysis, plan, summary = planned_8
    monkeypatch.setattr(builder, "PARALLEL_MIN_PAGES", 1)
    monkeypatch.setattr(builder, "MIN_CHUNK", 1)  # a page a claim: 8 claims
    log = tmp_path / "writers"
    log.mkdir()
    real_write, me = builder.write_page, os.getpid()

    def write_page(env, tree, page, *a, **kw):  # which process wrote which rank page (a file each: forks too)
        if page.nav == "ranks":
            (log / f"{os.getpid()}-{page.path.replace('/', '_')}").touch()
            if os.getpid() != me:  # the forked writer slowed down: this process is done with its own pages first
                import time
                time.sleep(0.3)
        return real_write(env, tree, page, *a, **kw)

    monkeypatch.setattr(builder, "write_page", write_page)
    pools = []
    real_pool = builder.ProcessPoolExecutor

    def pool(*a, **kw):
        pools.append(kw.get("max_workers"))
        return real_pool(*a, **kw)
    monkeypatch.setattr(builder, "ProcessPoolExecutor", pool)
    seen = []
    builder.write_site(plan, summary, tmp_path / "two", synth_8, jobs=2, progress=lambda n, t: seen.append((n, t)))

    assert pools == [1]
    by_pid: dict = {}
    for f in log.iterdir():
        pid, page = f.name.split("-", 1)
        by_pid.setdefault(pid, []).append(page)
    assert str(os.getpid()) in by_pid and len(by_pid) == 2  # this process and the one writer
    pages = [p for ps in by_pid.values() for p in ps]
    assert len(pages) == len(set(pages)) == len(analysis.run.ranks)  # every rank page, once
    _assert_same_site(tmp_path / "one", tmp_path / "two")
    assert seen[-1] == (len(plan.pages), len(plan.pages)) and all(n <= t for n, t in seen)


@pytest.mark.slow  # a large single file: CI's slow stage (issue 31: the default suite within 8 min)
def test_single_file_keeps_the_flagged_ranks_pages(tmp_path):
    from reportgen.cli import main

    out = tmp_path / "one.html"
    assert main(["--example", "-o", str(out), "--single-file", "-q", "--lang", "en"]) == 0
    soup = BeautifulSoup(out.read_text(encoding="utf-8"), "html.parser")
    ids = [t["id"] for t in soup.find_all(id=True)]
    assert len(ids) == len(set(ids)), "ids must stay unique with whole rank pages inside the single file"
    summary = json.loads(out.with_name("one.summary.json").read_text())
    named = {r for f in summary["findings"] if f["severity"] in ("warning", "critical")
             and f["category"] == "slow_rank" for r in f["ranks"]}
    named |= {r for f in summary["findings"] if f["category"] == "slow_link" and f["severity"] in ("warning", "critical")
              for r in f["ranks"]}
    assert {5, 8, 9} <= named  # the example's slow rank and slow link
    for r in named:
        sec = soup.find(id=f"r{r}-rank-page-{r}")
        assert sec is not None and sec.select_one(f"#r{r}-operators, #r{r}-step-trace")
        # the section's own links and table tools point at its scoped ids
        for a in sec.select('a[href^="#"]'):
            target = a["href"][1:]
            assert soup.find(id=target) is not None, target
    data = json.loads(soup.select_one("#rank-data").string)
    meta = json.loads(soup.select_one("#rank-meta").string)
    assert meta["phases"] and all("lines" not in d for d in data.values())  # lines are drawn from the rows


def test_num_cell_escapes_and_keeps_sort_keys_only_where_the_text_is_not_a_number():
    cell = html_rows.num_cell(12345.6789)
    assert str(cell) == '<td class="num">12,345.679</td>'
    assert str(html_rows.num_cell(0.256, "ratio")) == '<td class="num">25.6 %</td>'
    badge = str(html_rows.num_cell(5.729, cls="hot", badge="<slow>"))
    assert 'data-v="5.729"' in badge and "&lt;slow&gt;" in badge and 'class="num hot"' in badge
    assert "<b>" not in str(html_rows.num_cell("<b>x</b>"))
    assert html_rows.sort_key(167.83036663599998) == "167.8304" and html_rows.sort_key(None) == ""
    assert jinja_env.compact({"a": [1.0000001234, 2, "x", True]}) == {"a": [1.0, 2, "x", True]}


def test_scope_ids_prefixes_own_ids_and_their_references_only():
    html = ('<h2 id="overlap">x</h2><a href="#overlap">o</a><a href="#findings">f</a>'
            '<input data-filter="t1"><table id="t1"></table><a href="../x.html#overlap">e</a>')
    out = builder.scope_ids(html, "r5-")
    assert 'id="r5-overlap"' in out and 'href="#r5-overlap"' in out and 'href="#findings"' in out
    assert 'data-filter="r5-t1"' in out and 'id="r5-t1"' in out and 'href="../x.html#overlap"' in out
