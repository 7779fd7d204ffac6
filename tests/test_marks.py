"""Pages that agree with the findings (issue 29): the synthetic example names operators the same way in every
file, its run folder outlives the build, and the marks and captions follow the findings in force."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from bs4 import BeautifulSoup

from reportgen.synth import generate_run
from reportgen.synth.execution import OLD_TYPES, op_share


def _trace_types(path: Path) -> set[str]:
    ev = json.loads(path.read_text())
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    # the compute kernels of the device lanes (torch_npu "aclnnX_Kernel_Type": the type is the last part)
    return {e["name"].rsplit("_", 1)[-1] for e in ev if e.get("ph") == "X" and e.get("name", "").startswith("aclnn")}


def test_synthetic_operator_names_agree_across_files(tmp_path):
    run = generate_run(tmp_path / "run", layout="ascend", ranks=4, steps=2, stages=2, seed=1, trace_view=True)
    for out in sorted(run.glob("*/ASCEND_PROFILER_OUTPUT")):
        with open(out / "op_statistic.csv", newline="") as f:
            stats = {row["OP Type"] for row in csv.DictReader(f)}
        with open(out / "kernel_details.csv", newline="") as f:
            kernels = {row["Type"] for row in csv.DictReader(f)}
        timeline = _trace_types(out / "trace_view.json")
        assert timeline and timeline <= stats, (out, timeline - stats)
        assert kernels <= stats
        # no invented gradient types (MatMulV2Grad): backward kernels keep their type
        assert not {t for t in timeline if t.endswith("Grad")}
        assert not {t for t in timeline | stats if t.startswith("MatMulV2")}


def test_slow_op_takes_the_old_type_names():
    for old, new in OLD_TYPES.items():
        assert op_share(old) == op_share(new) > 0
    assert op_share("NoSuchOp") == 0


def test_mindinsight_timeline_names_follow_the_statistics(tmp_path):
    run = generate_run(tmp_path / "mi", layout="mindinsight", ranks=4, steps=2, stages=2, seed=1)
    names = set()
    for p in run.rglob("ascend_timeline_display_*.json"):
        names |= {e["name"].rsplit("/", 1)[-1].split("-op")[0] for e in json.loads(p.read_text())
                  if e.get("ph") == "X" and "-op" in e.get("name", "") and e.get("pid") != 10000}
    assert {"MatMulV3", "RmsNorm"} <= names
    assert not {n for n in names if n.endswith("Grad") or n in OLD_TYPES}


def test_example_run_folder_is_kept_beside_the_report(example_site):
    kept = example_site.parent / "example-run"
    assert kept.is_dir() and (kept / ".msreport-example").is_file()
    assert len(list(kept.glob("*_ascend_pt"))) == 16
    overview = BeautifulSoup((example_site / "index.html").read_text(), "html.parser")
    assert str(kept) in overview.get_text() or kept.name in overview.get_text()


def test_example_replaces_its_own_run_but_not_a_stranger(tmp_path, capsys):
    from reportgen.cli import example_run_path, main

    out = tmp_path / "rep.html"
    assert example_run_path(out) == tmp_path / "example-run" == example_run_path(tmp_path / "site")
    stranger = tmp_path / "example-run"
    stranger.mkdir()
    (stranger / "mine.txt").write_text("keep")
    assert main(["--example", "-o", str(out), "--single-file", "-q"]) == 2
    assert (stranger / "mine.txt").read_text() == "keep"
    assert "not an example run" in capsys.readouterr().err


# --- marks and captions from the findings (the bundled example: rank 5 computes 35 % longer in stage 0) ----------

def _soup(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def _caption(soup: BeautifulSoup, fig: str) -> str:
    return soup.select_one(f"#fig-{fig}").find_parent("figure").select_one("figcaption").get_text(" ", strip=True) \
        if soup.select_one(f"#fig-{fig}").find_parent("figure") else \
        soup.select_one(f"#fig-{fig}").select_one("figcaption").get_text(" ", strip=True)


def _summary(site: Path) -> dict:
    return json.loads((site / "summary.json").read_text())


def test_step_time_caption_says_what_is_red(example_site):
    soup = _soup(example_site / "cluster" / "step-trace.html")
    cap = _caption(soup, "step-total")
    rows = {int(r["rank"]): r for r in _summary(example_site)["metrics"]["step_trace"]["per_rank"].items()
            for r in [dict(r[1], rank=r[0])]}
    totals = sorted(v["total_ms"] for v in rows.values())
    median = (totals[7] + totals[8]) / 2
    above = rows[5]["total_ms"] / median - 1
    assert above < 0.05  # the slow rank's step is barely longer: its peers wait for it
    assert "far above" not in cap
    assert f"rank 5, slow in Computing: step {above * 100:.1f} % above the median" in cap, cap
    assert "the difference is in the phases" in cap


def test_waiting_badges_on_every_peer_of_the_slow_rank(example_site):
    soup = _soup(example_site / "cluster" / "step-trace.html")
    badges = {int(tr["id"].split("-")[1]): [b.get_text() for b in tr.select(".badge")]
              for tr in soup.select("#step-table tbody tr")}
    stage_of = {int(k): v for k, v in _summary(example_site)["run"]["stage_of_rank"].items()}
    assert badges[5] == ["slow"]
    peers = [r for r, s in stage_of.items() if s == stage_of[5] and r != 5]
    assert len(peers) == 7
    assert all(badges[r] == ["waiting"] for r in peers), badges
    assert all(badges[r] == [] for r, s in stage_of.items() if s != stage_of[5])  # the other stage does not wait


def test_resources_page_paints_the_named_slow_rank_red(example_site):
    from reportgen.charts import column_codec as columnar
    slow = [f for f in _summary(example_site)["findings"] if f["id"] == "slow-rank.compute"]
    assert slow and slow[0]["ranks"] == [5]
    soup = _soup(example_site / "cluster" / "resources.html")
    fig = soup.select_one("#fig-op-spread")
    spread = columnar.rows_of(json.loads(fig.select_one("script.columns").string)["spread"])
    red = {r["rank"] for r in spread if r["slow"]}
    assert red == {5}
    # rank 5 is red in the types where it runs above the median, and those are most of its types
    types = {r["op_type"] for r in spread}
    assert len({r["op_type"] for r in spread if r["slow"]}) >= len(types) // 2
    cap = _caption(soup, "op-spread")
    assert "Red: rank 5" in cap and "slow-rank finding" in cap


def test_culprit_device_only_above_the_slow_operator_threshold(example_site):
    soup = _soup(example_site / "cluster" / "execution.html")
    th = _summary(example_site)["run"]["thresholds"]["operator-spread"]["min_rel"]
    for table in ("marey-types-table", "marey-spread"):
        rows = soup.select(f"#{table} tbody tr")
        assert rows
        for tr in rows:
            td = tr.select("td")
            cls, median, lo, hi, culprit = (td[1].get_text(strip=True), float(td[4]["data-v"]),
                                            float(td[5]["data-v"]), float(td[6]["data-v"]), td[7])
            if cls in ("collective", "receive"):
                stands = lo <= 0 or median / lo - 1 >= th - 1e-6
            else:
                stands = hi / median - 1 >= th - 1e-6
            assert (culprit.select_one("a") is not None) == stands, (table, tr.get_text(" ", strip=True))
    # the example's slow rank is named where it stands out: its MatMul and the all-reduce it arrives last at
    named = {tr.select("td")[7].get_text(" ", strip=True) for tr in soup.select("#marey-types-table tbody tr")}
    assert "rank 5" in named and "rank 5 arrived last" in named


def test_repeated_operators_are_told_apart(example_site):
    soup = _soup(example_site / "cluster" / "execution.html")
    labels = [(tr.select("td")[2].get_text(strip=True), tr.select_one("td").get_text(" ", strip=True))
              for tr in soup.select("#marey-spread tbody tr")]
    assert len(labels) == len(set(labels)), "identical operator rows"
    assert any("#" in name for _, name in labels)
    with open(example_site / "cluster" / "execution-operators.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    keys = [(r["step"], r["stage"], r["operator"], r["occurrence"]) for r in rows]
    assert len(keys) == len(set(keys)) and {r["occurrence"] for r in rows} > {"1"}


def test_every_page_offers_its_tables_as_csv(example_site):
    """report.js adds a CSV button to every table; the page carries its label and the full-precision sort keys."""
    js = "".join(p.read_text() for p in (example_site / "assets").glob("*.js"))
    assert "initCsvButtons" in js and "data-save-csv" in js
    soup = _soup(example_site / "cluster" / "step-trace.html")
    assert soup.body["data-save-csv"] == "CSV"
    # the sort keys behind the rounded cells carry the full value
    summary = _summary(example_site)["metrics"]["step_trace"]["per_rank"]["5"]["total_ms"]
    cell = soup.select_one("#step-table tbody tr#rank-5").select("td")
    assert any(c.get("data-v") and abs(float(c["data-v"]) - summary) < 1e-3 and len(c["data-v"]) > len(c.get_text())
               for c in cell)
