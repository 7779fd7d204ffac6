"""Issue 17, the size of what is written: compact chart data, compact CSV numbers, top-N rank tables with the
full tables beside the page (gzip-compressed on a large run). Every number must come back exactly."""
from __future__ import annotations

import csv
import gzip
import io
import json
import math
import random
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from reportgen.charts import column_codec as columnar
from reportgen import urls
from reportgen.numbers import extreme_points
from reportgen.site.pages.rank import communication as rank_comm
from reportgen.site.pages.rank import resources as rank_resources
from reportgen.site.pages.rank import sections as rank_sections
from reportgen.site.render.csv_text import csv_value
from reportgen.site.render.jinja_env import compact


# ---- columnar chart data -------------------------------------------------------------------------------------

def test_number_column_is_delta_coded_and_decodes_to_the_same_doubles():
    col = columnar.number_column([43889.51, 43889.68, 43889.74, 43889.5])
    assert col == {"dec": 2, "d": [4388951, 17, 6, -24]}  # hand-computed: cents of MB, then differences
    rows = columnar.decode({"fields": ["mb"], "cols": [col]})
    assert [r["mb"] for r in rows] == [43889.51, 43889.68, 43889.74, 43889.5]


def test_number_column_keeps_the_pages_seven_digits_and_leaves_other_values_plain():
    assert columnar.number_column([0.0, 3.0, 3.5]) == {"dec": 1, "d": [0, 30, 5]}
    assert columnar.number_column([1, 2, 4]) == {"dec": 0, "d": [1, 1, 2]}
    # 7 significant digits, as every chart number on a page (jinja_env.compact)
    assert columnar.decode({"fields": ["v"], "cols": [columnar.number_column([167.83036663599998])]}) == [{"v": 167.8304}]
    for plain in ([1.0, None], ["a", "b"], [float("nan"), 1.0], [True, False], [1e-300, 1.0]):
        assert columnar.number_column(plain) == [compact(v) for v in plain] or columnar.number_column(plain) == plain


def test_number_column_codes_a_regular_step_as_runs_of_deltas():
    """Issue 33: a curve sampled at a regular interval (a rank's memory x: 0, 0.5, 1.0, ... per series) writes its
    deltas as runs; it decodes to the same doubles; an irregular column keeps the plain deltas."""
    xs = [i * 0.5 for i in range(240)] + [i * 0.5 for i in range(239)]  # two series, each from 0
    col = columnar.number_column(xs)
    assert col == {"dec": 1, "dr": [0, 1, 5, 239, -1195, 1, 5, 238]}  # hand-computed: tenths (119.5 -> 0)
    assert [r["x"] for r in columnar.decode({"fields": ["x"], "cols": [col]})] == xs
    irregular = [float(i * i) for i in range(40)]
    assert "z" in columnar.number_column(irregular)  # (16 values or more: the deltas as a `z` string)
    assert [r["x"] for r in columnar.decode({"fields": ["x"], "cols": [columnar.number_column(irregular)]})] == irregular


def test_z_string_hand_cases_and_round_trip():
    """Issue 33: deltas zigzag-coded 5 bits a character (a delta under 16 in size is one character)."""
    import numpy as np

    # hand-computed: 0 -> A; -1, 1, -2 -> zigzag 1, 2, 3 -> B, C, D; 15 -> 30 -> e; -16 -> 31 -> f;
    # 16 -> 32 = 0 + 1 * 32 -> (0 | 32) then 1 -> gB; 511 -> 1022 = 30 + 31 * 32 -> (30 | 32) then 31 -> -f
    assert columnar.z_string(np.array([0, -1, 1, -2, 15, -16, 16, 511])) == "ABCDefgB-f"
    assert columnar.z_values("ABCDefgB-f") == [0, -1, 1, -2, 15, -16, 16, 511]
    rnd = random.Random(5)
    for _ in range(300):
        d = [rnd.choice([rnd.randint(-20, 20), rnd.randint(-10 ** 7, 10 ** 7), rnd.randint(1 - 2 ** 50, 2 ** 50 - 1)])
             for _ in range(rnd.randint(0, 60))]
        assert columnar.z_values(columnar.z_string(np.array(d, dtype=np.int64))) == d
    # a column of 16 values or more takes it, and decodes to the same doubles; a delta of 2**50 or more keeps the list
    vals = [round(rnd.uniform(-5e4, 5e4), 1) for _ in range(50)]
    col = columnar.number_column(vals)
    assert set(col) == {"dec", "z"} and col["dec"] == 1
    assert [r["v"] for r in columnar.decode({"fields": ["v"], "cols": [col]})] == vals
    assert "d" in columnar.number_column([i * i for i in range(20)] + [2 ** 51])
    assert "d" in columnar.number_column([1.5, 2.5, 0.5])  # (a short column keeps its readable list)


def test_index_and_label_columns_take_runs_only_where_shorter():
    assert columnar.list_or_runs([0] * 20 + [1] * 20) == {"runs": [0, 20, 1, 20]}
    alternating = ["a", "b"] * 20
    assert columnar.list_or_runs(alternating) == alternating
    # integers that change too often for runs: delta-coded (a z string: zigzag 1, 2 -> B, C), the same values back
    col = columnar.list_or_runs([0, 1] * 20)
    assert col == {"dec": 0, "z": "AC" + "BC" * 19}  # deltas 0, 1, then -1, 1 nineteen times
    assert [r["v"] for r in columnar.decode({"fields": ["v"], "cols": [col]})] == [0, 1] * 20
    assert columnar.list_or_runs([""] * 3) == ["", "", ""]  # (short: as it is)
    rows = [{"lane": "a" if i < 30 else "b", "v": i} for i in range(40)]
    data = columnar.encode(rows, ["lane", "v"], dicts=("lane",))
    assert data["cols"][0] == {"runs": [0, 30, 1, 10]} and data["dicts"] == {"lane": ["a", "b"]}
    assert [{k: r[k] for k in ("lane", "v")} for r in columnar.decode(data)] == rows


def test_extreme_points_keep_every_bucket_extreme_in_order():
    """The memory curve a rank page draws: at most n points, per bucket the first maximum and minimum, in order;
    the peak and the lowest point of the whole curve stay, a uniform subsample would miss the spikes."""
    import numpy as np

    v = np.array([1.0, 5.0, 2.0, 2.0, 9.0, 0.0, 3.0, 3.0])
    assert extreme_points(v, 4).tolist() == [0, 1, 4, 5]  # hand-computed: buckets [1 5 2 2] and [9 0 3 3]
    assert extreme_points(v, 8).tolist() == list(range(8))
    rnd = random.Random(9)
    for _ in range(100):
        n = rnd.randint(601, 5000)
        curve = np.cumsum([rnd.uniform(-1, 1) for _ in range(n)])
        spike = rnd.randrange(n)
        curve[spike] = curve.max() + 50  # one short spike: the peak
        keep = extreme_points(curve, 600)
        assert len(keep) <= 600 and list(keep) == sorted(set(keep.tolist()))
        assert spike in keep and int(np.argmin(curve)) in keep
        assert curve[keep].max() == curve.max() and curve[keep].min() == curve.min()


def test_encode_dicts_fields_hold_indexes_and_decode_to_the_rows():
    """Issue 33: the link scatter's group and transport (a long label repeated on thousands of points) are carried
    as indexes into one list each; decode gives the rows back (with the index as <field>_i, as report.js does)."""
    rows = [{"link": "0→1", "group": "tp (0, 1)", "transport": "HCCS", "bw": 18.5, "slow": False},
            {"link": "1→9", "group": "dp (1, 9)", "transport": "RDMA", "bw": 12.25, "slow": True},
            {"link": "1→0", "group": "tp (0, 1)", "transport": "HCCS", "bw": 18.0, "slow": False}]
    data = columnar.encode(rows, ["link", "group", "transport", "bw", "slow"], dicts=("group", "transport"))
    assert data["dicts"] == {"group": ["tp (0, 1)", "dp (1, 9)"], "transport": ["HCCS", "RDMA"]}
    assert data["cols"][1] == [0, 1, 0] and data["cols"][2] == [0, 1, 0]
    back = columnar.decode(data)
    assert [{k: v for k, v in r.items() if not k.endswith("_i")} for r in back] == rows
    assert [r["group_i"] for r in back] == [0, 1, 0]


def test_runs_column_and_round_trip_of_random_curves():
    assert columnar.runs_column(["a", "a", "b", "b", "b", "a"]) == {"runs": ["a", 2, "b", 3, "a", 1]}
    rnd = random.Random(7)
    for _ in range(50):
        n = rnd.randint(1, 300)
        rows = [{"x": round(rnd.uniform(0, 1e5), rnd.randint(0, 4)), "series": rnd.choice("ab"),
                 "mb": round(rnd.uniform(-1e4, 1e6), rnd.randint(0, 3))} for _ in range(n)]
        back = columnar.decode(columnar.encode(rows, ["x", "series", "mb"], labels=("series",)))
        assert back == [{k: compact(v) for k, v in r.items()} for r in rows]


# ---- CSV numbers ------------------------------------------------------------------------------------------------

def test_csv_value_hand_cases():
    assert csv_value(208.0) == 208  # counts are integers
    assert csv_value(8.552121000000003) == "8.552121"  # summation noise dropped
    assert csv_value(0.04111596634615386) == "0.0411159663"  # 9 significant digits
    assert csv_value(123456.789123) == "123456.789123"  # every nanosecond of a large ms total
    assert csv_value(1700000000000000.5) == "1700000000000000.5"  # a timestamp keeps every digit
    assert csv_value(3) == 3 and csv_value("x") == "x" and csv_value(True) is True
    assert math.isnan(csv_value(float("nan")))


def test_csv_value_round_trip_keeps_what_the_data_carries():
    rnd = random.Random(3)
    for _ in range(20000):
        v = rnd.choice([rnd.uniform(0, 1), rnd.uniform(0, 1e3), rnd.uniform(0, 1e7), rnd.expovariate(1e4),
                        rnd.randint(0, 10 ** 9) / 1e6, rnd.randint(0, 10 ** 12) / 1e3 + 0.1 ** 12])
        back = float(csv_value(v))
        # 9 significant digits, or 6 decimals (a nanosecond in ms) where that is more
        assert abs(back - v) <= max(5e-9 * abs(v), 5e-7), (v, back)
        # what the data carries comes back exactly: microsecond durations summed in ms
    for _ in range(5000):
        us = [rnd.randint(1, 10 ** 7) / 1e3 for _ in range(rnd.randint(1, 50))]  # durations in µs, ns resolution
        total_ms = sum(u / 1e3 for u in us)
        assert round(float(csv_value(total_ms)), 6) == round(sum(us) / 1e3, 6)


# ---- rank pages ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def big_site(tmp_path_factory) -> tuple[Path, Path]:
    """8 ranks with a dense memory curve, 300 kernels and 20 communication operators per step, rank 5 slow; the
    per-rank CSVs gzip-compressed as on a large run."""
    from reportgen.cli import main
    from reportgen.synth import generate_run

    root = tmp_path_factory.mktemp("size")
    run = generate_run(root / "run", ranks=8, steps=2, stages=2, tp=2, kernels_per_step=300, comm_ops_per_step=20,
                       inject=["slow-rank:5:compute:1.4"])
    mp = pytest.MonkeyPatch()
    mp.setattr(urls, "LARGE_RUN_RANKS", 8)
    mp.setattr(rank_resources, "RANK_TOP_OPS", 12)  # the run has 17 distinct operators per rank
    mp.setattr(rank_comm, "MAX_RANK_LINKS", 2)  # (a rank reports a few links here; a large run's pages list 10)
    try:
        assert main([str(run), "-o", str(root / "out"), "-q", "-j", "1"]) == 0
    finally:
        mp.undo()
    return run, root / "out"


def _soup(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def _csv(path: Path) -> list[dict]:
    raw = path.read_bytes()
    text = gzip.decompress(raw).decode("utf-8") if path.suffix == ".gz" else raw.decode("utf-8")
    return list(csv.DictReader(io.StringIO(text)))


def test_memory_curve_is_carried_columnar_and_expands_to_the_curve(big_site):
    _, out = big_site
    fig = _soup(out / "ranks" / "rank-0.html").select_one("#fig-rank-0-mem")
    # a large run (the threshold patched): no spec data on the page, the columns carry all of it (the spec itself
    # is the shared one, assets/rank-specs.js, under the figure's data-spec key)
    assert fig.select_one("script.spec") is None and fig["data-spec"]
    assert f'"{fig["data-spec"]}":' in (out / "assets" / "rank-specs.js").read_text()
    data = json.loads(fig.select_one("script.columns").string)["mem"]
    rows = columnar.decode(data)
    series = {r["series"] for r in rows}
    assert series == {"in use / reserved", "allocated"}
    assert data["cols"][1] == {"runs": ["in use / reserved", len([r for r in rows if r["series"] == "in use / reserved"]),
                                        "allocated", len([r for r in rows if r["series"] == "allocated"])]}
    assert len(rows) > 100
    peak = max(r["mb"] for r in rows if r["series"] == "in use / reserved")
    summary = json.loads((out / "summary.json").read_text())
    # (the curve carries MB to the 0.1 its tooltip prints)
    assert peak == pytest.approx(summary["metrics"]["memory"]["per_rank"]["0"]["peak_mb"], abs=0.05)


def test_comm_ops_top_n_on_the_page_and_every_operator_in_the_csv(big_site):
    _, out = big_site
    soup = _soup(out / "ranks" / "rank-0.html")
    body = soup.select("#rank-comm-ops tbody tr")
    # a large run (the threshold patched): RANK_ROWS_LARGE rows, not the usual RANK_TOP_COMM_OPS
    assert len(body) == rank_sections.RANK_ROWS_LARGE < rank_comm.RANK_TOP_COMM_OPS
    link = soup.select_one("#communication ~ .table-tools a.csv-download, a.csv-download[href$='comm-ops.csv.gz']")
    assert link is not None and link["href"] == "rank-0-comm-ops.csv.gz" and link.has_attr("download")
    rows = _csv(out / "ranks" / link["href"])
    assert f"({len(rows)} rows" in link.get_text() and "gzip" in link.get_text()
    assert len(rows) > len(body)
    assert list(rows[0]) == [c["label"] for c in rank_comm.RANK_COMM_OP_COLUMNS]
    # the page's rows are the longest of the CSV, in order
    longest = sorted(rows, key=lambda r: -float(r["Time (ms)"]))[:len(body)]
    assert [tr.find("code").get_text() for tr in body] == [r["Operator"] for r in longest]
    heading = soup.find("h3", string=lambda t: t and t.startswith("Operators"))
    assert f"the {len(body)} longest of {len(rows)}" in heading.get_text()


def test_a_large_runs_rank_page_lists_the_slow_then_the_longest_links_and_links_the_csv(big_site):
    _, out = big_site
    soup = _soup(out / "ranks" / "rank-0.html")
    body = soup.select("#rank-links tbody tr")
    every = _csv(out / "cluster" / "communication-links.csv.gz")
    mine = [r for r in every if "0" in r["Reported by"].split(",")]
    assert len(mine) > len(body) == 2
    heading = soup.find("h3", string=lambda t: t and t.startswith("Links reported"))
    assert f"the 2 slowest or longest of {len(mine)}" in heading.get_text()
    link = soup.select_one("a.csv-download[data-csv-for='rank-links']")
    assert link["href"] == "../cluster/communication-links.csv.gz" and "gzip" in link.get_text()
    want = sorted(mine, key=lambda r: (r["Slow"] != "True", -float(r["Time (ms)"] or "-inf")))[:2]
    got = {(tr.select("td")[0].get_text(), tr.select("td")[1].get_text(), tr.select("td")[4].get_text()) for tr in body}
    assert got == {(r["Source"], r["Destination"], f"{float(r['Time (ms)']):,.3f}") for r in want}


def test_the_flagged_rank_page_keeps_its_tables_in_full(big_site):
    _, out = big_site
    summary = json.loads((out / "summary.json").read_text())
    assert any(f["category"] == "slow_rank" and 5 in f["ranks"] and f["severity"] in ("warning", "critical")
               for f in summary["findings"])
    soup = _soup(out / "ranks" / "rank-5.html")
    lean = _soup(out / "ranks" / "rank-0.html")
    assert len(soup.select("#rank-comm-ops tbody tr")) > rank_comm.RANK_TOP_COMM_OPS
    # everything is on the page, and in its CSV as on every other rank's page (before: the only rank without one)
    assert soup.select_one("a.csv-download[href*='rank-5-comm-ops']") is not None
    assert len(soup.select("#rank-op-detail tbody tr")) == 12  # RANK_TOP_OPS, patched
    # the other pages of a large run: RANK_ROWS_LARGE (not RANK_TOP_OPS_LEAN), named in the heading, all in the CSV
    assert len(lean.select("#rank-op-detail tbody tr")) == rank_sections.RANK_ROWS_LARGE < rank_resources.RANK_TOP_OPS_LEAN
    heading = lean.find("h3", string=lambda t: t and t.startswith("By operator"))
    n_ops = len(_csv(out / "ranks" / "rank-0-operators.csv.gz"))
    assert f"the {rank_sections.RANK_ROWS_LARGE} longest of {n_ops}" in heading.get_text() and n_ops == 17
    link = lean.select_one("a.csv-download[href='rank-0-operators.csv.gz']")
    assert link is not None and f"({n_ops} rows" in link.get_text() and "gzip" in link.get_text()


def test_gzip_csvs_hold_the_same_rows_as_plain_ones(big_site, tmp_path):
    """Below the threshold the same tables are plain CSV; decompressed, the bytes are identical."""
    from reportgen.cli import main

    run, out = big_site
    plain = tmp_path / "plain"
    with pytest.MonkeyPatch.context() as mp:  # (fewer operators listed: the small run writes their CSV too)
        mp.setattr(rank_resources, "RANK_TOP_OPS", 10)
        mp.setattr(rank_resources, "RANK_TOP_OPS_LEAN", 5)
        assert main([str(run), "-o", str(plain), "-q", "-j", "1"]) == 0
    gz = sorted(p.name for p in (out / "ranks").glob("*.csv.gz"))
    assert len(gz) >= 8 and not list((out / "ranks").glob("*.csv"))
    for name in gz:
        assert gzip.decompress((out / "ranks" / name).read_bytes()) == (plain / "ranks" / name[:-3]).read_bytes()
    # the cluster pages' CSVs too: gzip-compressed on the large run, the same bytes as the small run's plain ones
    cluster_gz = sorted(p.name for p in (out / "cluster").glob("*.csv.gz"))
    assert len(cluster_gz) >= 3 and not list((out / "cluster").glob("*.csv"))
    assert sorted(p.name + ".gz" for p in (plain / "cluster").glob("*.csv")) == cluster_gz
    assert not list((plain / "cluster").glob("*.gz"))
    for name in cluster_gz:
        assert gzip.decompress((out / "cluster" / name).read_bytes()) == (plain / "cluster" / name[:-3]).read_bytes()
    # every cluster page's CSV link names the file written, and says it is gzip-compressed; the small run's do not
    for site, gz_link in ((out, True), (plain, False)):
        links = [a for page in (site / "cluster").glob("*.html") for a in _soup(page).select("a.csv-download")]
        assert len(links) >= len(cluster_gz)
        for a in links:
            assert a["href"].endswith(".csv.gz") == gz_link and ("gzip" in a.get_text()) == gz_link
            assert (site / "cluster" / a["href"]).is_file()
    # the small run's rank page keeps the usual rows: RANK_TOP_COMM_OPS communication operators, the heading and
    # the CSV link naming them all
    small = _soup(plain / "ranks" / "rank-0.html")
    body = small.select("#rank-comm-ops tbody tr")
    assert len(body) == rank_comm.RANK_TOP_COMM_OPS > rank_sections.RANK_ROWS_LARGE
    n_ops = len(_csv(plain / "ranks" / "rank-0-comm-ops.csv"))
    heading = small.find("h3", string=lambda t: t and t.startswith("Operators"))
    assert f"the {len(body)} longest of {n_ops}" in heading.get_text()
    link = small.select_one("a.csv-download[href='rank-0-comm-ops.csv']")
    assert link is not None and f"({n_ops} rows" in link.get_text() and "gzip" not in link.get_text()


def test_rank_csv_numbers_are_compact_and_equal_to_the_analysis(big_site):
    _, out = big_site
    rows = _csv(out / "ranks" / "rank-1-operators.csv.gz")
    for r in rows:
        assert "." not in r["Count"]  # counts as integers
        for k in ("Total (ms)", "Average (ms)", "Share"):
            v = r[k]
            assert len(v.replace("-", "").replace(".", "").lstrip("0")) <= 12, v
        assert float(r["Average (ms)"]) == pytest.approx(float(r["Total (ms)"]) / float(r["Count"]), rel=1e-8)
    assert sum(float(r["Share"]) for r in rows) == pytest.approx(1.0, rel=1e-7)


@pytest.mark.browser
def test_browser_expands_the_memory_curve_into_the_drawn_view(big_site):
    """report.js turns the columnar curve back into rows: the drawn view holds exactly the decoded rows."""
    from test_browser import assert_charts_drawn, run_probe

    _, out = big_site
    page = out / "ranks" / "rank-0.html"
    dom = run_probe(page, """
      var fig = document.getElementById('fig-rank-0-mem');
      var t0 = Date.now();
      (function wait() {
        if (fig._msrView) { document.body.setAttribute('data-mem', JSON.stringify(fig._msrView.data('mem').map(
            function (r) { return [r.x, r.series, r.mb]; }))); return; }
        if (Date.now() - t0 < 10000) { setTimeout(wait, 50); }
      })();""")
    assert_charts_drawn(dom, page, 3)
    fig = _soup(page).select_one("#fig-rank-0-mem")
    want = [[r["x"], r["series"], r["mb"]] for r in columnar.decode(json.loads(fig.select_one("script.columns").string)["mem"])]
    assert json.loads(dom.body["data-mem"]) == want


# ---- cluster data: rank hrefs from one template, the step selector's rows columnar -------------------------------

def test_rank_href_column_is_one_template_and_only_when_every_row_matches():
    from reportgen import urls

    rows = [{"rank": r, "href": urls.rank_page(r)} for r in (0, 7, 341)]
    enc = columnar.encode(rows, ["rank", "href"], href_of="rank")
    assert enc["cols"][1] == {"rank_href": f"ranks/rank-{urls.RANK_SLOT}.html", "of": "rank"}
    assert columnar.decode(enc) == rows
    rows[1]["href"] = "ranks/rank-7.html#memory"  # not the plain rank page: kept as it is
    assert columnar.encode(rows, ["rank", "href"], href_of="rank")["cols"][1] == [r["href"] for r in rows]


def test_runs_do_not_merge_true_with_one():
    assert columnar.runs_column([True, 1, 1, False, 0])["runs"] == [True, 1, 1, 2, False, 1, 0, 1]


def test_step_selector_and_op_spread_data_are_columnar_with_resolved_hrefs(big_site):
    from reportgen import urls

    _, out = big_site
    soup = _soup(out / "cluster" / "step-trace.html")
    data = json.loads(soup.select_one("#step-table-data").string)
    for step, enc in data["steps"].items():
        assert "cols" in enc
        rows = columnar.rows_of(enc)
        assert sorted(r["rank"] for r in rows) == list(range(8))
        assert all(r["href"] == f"../ranks/rank-{r['rank']}.html" for r in rows)
        assert {r["rank"] for r in rows if r["slow"]} == {5}
    res = _soup(out / "cluster" / "resources.html").select_one("#fig-op-spread")
    spread = columnar.rows_of(json.loads(res.select_one("script.columns").string)["spread"])
    assert {r["rank"] for r in spread} == set(range(8))
    assert all(r["href"] == f"../ranks/rank-{r['rank']}.html" for r in spread)
    assert str(urls.RANK_SLOT) not in json.dumps(spread)


@pytest.mark.browser
def test_browser_step_selector_draws_the_columnar_rows(big_site):
    """Picking a step fills the table from the columnar data: one row per rank, links to the rank pages."""
    from test_browser import run_probe

    _, out = big_site
    page = out / "cluster" / "step-trace.html"
    data = json.loads(_soup(page).select_one("#step-table-data").string)
    step = sorted(data["steps"])[-1]
    dom = run_probe(page, f"""
      var sel = document.getElementById('step-select');
      sel.value = '{step}'; sel.dispatchEvent(new Event('change'));""")
    rows = dom.select("#step-table tbody tr")
    want = columnar.rows_of(data["steps"][step])
    assert [tr["id"] for tr in rows] == [f"rank-{r['rank']}" for r in want]
    assert [tr.select_one("a")["href"] for tr in rows] == [f"../ranks/rank-{r['rank']}.html" for r in want]
    assert "slow" in dom.select_one("#rank-5").get("class", [])


def test_decimal_column_equals_number_column_for_rounded_values_and_falls_back_otherwise():
    rnd = random.Random(11)
    for d in (0, 2, 4):
        vals = [round(rnd.uniform(-5e4, 5e4), d) for _ in range(300)]
        assert json.dumps(columnar.decimal_column(vals, d)) == json.dumps(columnar.number_column(vals))
    raw = [1.23456789, 2.0, 3.5]  # not rounded to 4 decimals: the plain path (7 significant digits)
    assert columnar.decimal_column(raw, 4) == columnar.number_column(raw) == {"dec": 6, "d": [1234568, 765432, 1500000]}
    assert columnar.decimal_column([1.5, None], 4) == columnar.number_column([1.5, None])


# ---- a large run's rank pages (issue 33): files relative to the rank folder, 16 trace copies, the drawn curve ------

@pytest.fixture(scope="module")
def large_site(tmp_path_factory) -> tuple[Path, Path]:
    """8 ranks with trace_view.json, rank 5 slow, built as a large run (the threshold patched to 8) that copies at
    most 3 traces, draws the timelines of 4 devices and at most 40 points per memory series (patched: the real run
    has 16, 32 and 600)."""
    from reportgen.cli import main
    from reportgen.synth import generate_run

    root = tmp_path_factory.mktemp("large")
    run = generate_run(root / "run", ranks=8, steps=2, stages=2, tp=2, trace_view=True,
                       inject=["slow-rank:5:compute:1.4"])
    mp = pytest.MonkeyPatch()
    mp.setattr(urls, "LARGE_RUN_RANKS", 8)
    mp.setattr(rank_resources, "MAX_TRACE_COPIES_LARGE", 3)
    mp.setattr(rank_resources, "MAX_CURVE_POINTS_DRAWN", 40)
    from reportgen.analysis import execution

    mp.setattr(execution.select, "__defaults__", (None, 4))  # 4 devices drawn (of 32): the others are not
    try:
        assert main([str(run), "-o", str(root / "out"), "-q", "-j", "1", "--lang", "en"]) == 0
    finally:
        mp.undo()
    return run, root / "out"


def _facts(soup: BeautifulSoup) -> dict:
    return {tr.th.get_text(): tr.td.get_text() for tr in soup.select_one("table.facts").select("tr")}


def test_a_large_runs_rank_page_names_its_files_relative_to_its_folder(large_site):
    run, out = large_site
    for r in range(8):
        soup = _soup(out / "ranks" / f"rank-{r}.html")
        folder = _facts(soup)["Source folder"]
        assert folder and folder != "." and (run / folder).is_dir()
        files = [c.get_text() for c in soup.select("ul.files code")]
        sources = [c.get_text() for p in soup.select("p.muted") if p.get_text().startswith(("Source:", "Sources:"))
                   for c in p.select("code")]
        assert len(files) >= 5 and len(sources) >= 5
        for name in files + sources:  # each one is a file of the rank's folder, named without the folder
            assert not name.startswith(folder + "/") and (run / folder / name).is_file(), name
        assert folder not in soup.select_one("section").get_text().replace(f"Source folder{folder}", "")


def test_a_large_run_copies_16_traces_the_findings_ranks_first(large_site):
    run, out = large_site
    summary = json.loads((out / "summary.json").read_text())
    named = {r for f in summary["findings"] if f["severity"] in ("warning", "critical") for r in f.get("ranks") or []}
    assert 5 in named
    copied = sorted(int(p.name.split("-")[1].split(".")[0]) for p in (out / "traces").glob("rank-*.trace.json.gz"))
    assert len(copied) == 3 and 5 in copied
    seen_brief = False
    for r in range(8):
        soup = _soup(out / "ranks" / f"rank-{r}.html")
        tl = soup.find("h2", id="timeline").find_all_next("p", limit=4)
        text = " ".join(p.get_text() for p in tl)
        link = soup.select_one(f"a[href='../traces/rank-{r}.trace.json.gz']")
        assert (link is not None) == (r in copied)
        drawn = soup.select_one(f"#fig-rank-{r}-timeline") is not None
        if r not in copied and drawn:  # the longer note, naming the large run's limit
            assert "copies at most 3 traces" in text and "neither drawn nor copied" not in text
        elif r not in copied:  # one sentence, naming the file to open (relative to the rank's folder)
            assert "neither drawn nor copied" in text and "copies at most" not in text and "is drawn for" not in text
            assert "trace_view.json" in text
            seen_brief = True
    assert seen_brief  # (4 drawn, 3 copied: at least one rank is neither)
    drawn = {r for r in range(8) if _soup(out / "ranks" / f"rank-{r}.html").select_one(f"#fig-rank-{r}-timeline")}
    assert len(drawn) == 4 and set(copied) <= named | drawn  # the findings' ranks, then the drawn devices
    # the unit: the priority comes first, then the run's order, within the count
    import types

    ranks = {r: types.SimpleNamespace(timeline=types.SimpleNamespace(trace_bytes=10, source=f"r{r}/t.json",
                                                                      trace_needs_numbers=False)) for r in range(100)}
    a = types.SimpleNamespace(run=types.SimpleNamespace(rank_ids=list(range(100)), ranks=ranks, root=run))
    detail = rank_resources.RankDetail(a, priority=[70, 3, 70, 99])
    first = [70, 3, 99]
    assert [e.dest for e in detail.exports] == [urls.trace_copy(r) for r in first + [r for r in range(100)
                                                                                     if r not in first][:13]]
    assert len(detail.exports) == rank_resources.MAX_TRACE_COPIES_LARGE == 16  # (100 ranks: a large run)


def test_the_drawn_memory_curve_keeps_the_extremes_of_the_curve(large_site):
    import numpy as np

    from reportgen.loaders.issuelog import IssueLog
    from reportgen.loaders.memory import load_modern_memory

    run, out = large_site
    summary = json.loads((out / "summary.json").read_text())
    for r in (0, 5):
        soup = _soup(out / "ranks" / f"rank-{r}.html")
        folder = _facts(soup)["Source folder"]
        record = next((run / folder).rglob("memory_record.csv"))
        curve = load_modern_memory(record, None, None, IssueLog(run)).curve  # what the page is given
        rows = columnar.decode(json.loads(soup.select_one(f"#fig-rank-{r}-mem script.columns").string)["mem"])
        for label, col in (("in use / reserved", "used_mb"), ("allocated", "allocated_mb")):
            full = curve[["x", col]].dropna()
            assert len(full) > 40  # (the loader's curve is longer than the patched limit)
            drawn = [(row["x"], row["mb"]) for row in rows if row["series"] == label]
            assert 2 <= len(drawn) <= 40
            xs = np.round(full["x"].to_numpy(), 3).tolist()
            mbs = np.round(full[col].to_numpy(), 1).tolist()
            pos = [xs.index(x) for x, _ in drawn]
            assert pos == sorted(pos) and all(mbs[p] == mb for p, (_, mb) in zip(pos, drawn))  # exact, in order
            assert max(mb for _, mb in drawn) == max(mbs) and min(mb for _, mb in drawn) == min(mbs)
        peak = max(row["mb"] for row in rows if row["series"] == "in use / reserved")
        assert peak == pytest.approx(summary["metrics"]["memory"]["per_rank"][str(r)]["peak_mb"], abs=0.05)


@pytest.mark.browser
def test_browser_draws_a_large_runs_rank_page_its_memory_peak_the_tables(large_site):
    """The rank page of a large run draws every chart (the z-coded memory curve, the run-coded timeline lanes);
    the drawn curve's highest point is the peak its table prints, and the timeline holds the decoded rows."""
    from test_browser import assert_charts_drawn, run_probe

    _, out = large_site
    page = out / "ranks" / "rank-5.html"
    dom = run_probe(page, """
      var t0 = Date.now();
      (function wait() {
        var mem = document.getElementById('fig-rank-5-mem'), tl = document.getElementById('fig-rank-5-timeline');
        if (mem._msrView && tl && tl._msrView && document.getElementById('fig-rank-5-steps')._msrView) {
          var rows = mem._msrView.data('mem').filter(function (r) { return r.series === 'in use / reserved'; });
          document.body.setAttribute('data-peak', String(Math.max.apply(null, rows.map(function (r) { return r.mb; }))));
          document.body.setAttribute('data-tl', JSON.stringify(tl._msrView.data('ops').map(
              function (r) { return [r.lane, r.cat, r.start, r.dur, r.launch]; })));
          var st = document.getElementById('fig-rank-5-steps');
          document.body.setAttribute('data-steps', JSON.stringify(st._msrView.data('steps').map(
              function (r) { return [r.step, r.phase, r.value]; })));
          return;
        }
        if (Date.now() - t0 < 10000) { setTimeout(wait, 50); }
      })();""")
    assert_charts_drawn(dom, page, 4)
    soup = _soup(page)
    table_peak = soup.select_one("#rank-memory-summary tr td b").get_text()
    # (the curve carries MB to the 0.1 its tooltip prints, the table to 0.01)
    assert float(dom.body["data-peak"]) == pytest.approx(float(table_peak.replace(",", "").split()[0]), abs=0.055)
    cols = json.loads(soup.select_one("#fig-rank-5-timeline script.columns").string)["ops"]
    assert any(isinstance(c, dict) and "runs" in c for c in cols["cols"][1:3])  # (lane or kind as runs)
    want = [[r["lane"], r["cat"], r["start"], r["dur"], r["launch"]] for r in columnar.decode(cols)]
    assert json.loads(dom.body["data-tl"]) == want and len(want) > 100
    # the step lines: read from the step table, every (step, phase) of the chart's labels with the table's number
    fig = soup.select_one("#fig-rank-5-steps")
    assert fig.select_one("script.columns") is None and fig["data-table"] == "rank-steps"
    heads = [th.get_text() for th in soup.select("#rank-steps thead th")]
    cols = [int(c) for c in fig["data-table-cols"].split(",")]
    shown = {heads[c].removesuffix(" (ms)") for c in cols if c >= 0}
    assert {"Computing", "Step total"} <= shown
    table = [(int(tr.td.get_text()), heads[c].removesuffix(" (ms)"), float(tr.select("td")[c].get_text().replace(",", "")))
             for tr in soup.select("#rank-steps tbody tr") for c in cols if c >= 0]
    got = json.loads(dom.body["data-steps"])
    assert sorted(map(tuple, got)) == sorted(table) and len(got) == 2 * len(shown)
