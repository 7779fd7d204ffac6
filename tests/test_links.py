"""Every link of the report lands: anchors, page links and the links inside chart data, on every page of the site
and of the single file, for both input layouts."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from bs4 import BeautifulSoup

from reportgen.charts import column_codec as columnar
from reportgen.cli import main


def _json_hrefs(value, out: list[str]) -> None:
    if isinstance(value, dict) and "fields" in value and "cols" in value:  # columnar data: every row's href
        _json_hrefs(columnar.decode(value), out)
    elif isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, str) and (k == "href" or k.endswith("_href")):
                out.append(v)
            else:
                _json_hrefs(v, out)
    elif isinstance(value, list):
        for v in value:
            _json_hrefs(v, out)


def _links(soup: BeautifulSoup) -> list[tuple[str, str]]:
    """(where, href) of every link a reader can follow: anchors, and hrefs inside embedded JSON (chart data,
    the step table's per-step rows, the single file's rank data)."""
    out = []
    for a in soup.find_all("a", href=True):
        out.append(("a", a["href"]))
    for s in soup.find_all("script", type="application/json"):
        hrefs: list[str] = []
        _json_hrefs(json.loads(s.string or "null"), hrefs)
        out += [("json", h) for h in hrefs if h != ""]
    return out


def _ids(soup: BeautifulSoup) -> set[str]:
    return {t["id"] for t in soup.find_all(id=True)} | {t["name"] for t in soup.find_all("a", attrs={"name": True})}


def check_site(root: Path) -> int:
    pages = sorted(root.rglob("*.html"))
    soups = {p: BeautifulSoup(p.read_text(encoding="utf-8"), "html.parser") for p in pages}
    ids = {p.resolve(): _ids(s) for p, s in soups.items()}
    bad, n = [], 0
    for page, soup in soups.items():
        for where, href in _links(soup):
            n += 1
            parts = urlsplit(href)
            if parts.scheme or parts.netloc:
                bad.append((page.relative_to(root), where, href, "leaves the report"))
                continue
            target = page if not parts.path else (page.parent / unquote(parts.path)).resolve()
            if root.resolve() not in target.parents and target != root.resolve():
                bad.append((page.relative_to(root), where, href, "outside the report"))
                continue
            if not target.exists():
                bad.append((page.relative_to(root), where, href, "missing file"))
                continue
            if parts.fragment and target.suffix == ".html" and parts.fragment not in ids[target]:
                bad.append((page.relative_to(root), where, href, "missing anchor"))
    assert not bad, f"{len(bad)} broken link(s) of {n}: {bad[:20]}"
    return n


def check_single(path: Path) -> int:
    soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    ids = _ids(soup)
    dup = [i for i in ids if len(soup.find_all(id=i)) > 1]
    assert not dup, f"duplicate ids in the single file: {dup[:20]}"
    bad, n = [], 0
    for where, href in _links(soup):
        n += 1
        if not href.startswith("#") or href[1:] not in ids:
            bad.append((where, href))
    assert not bad, f"{len(bad)} broken link(s) of {n} in the single file: {bad[:20]}"
    return n


@pytest.fixture(scope="module")
def mindinsight_run(tmp_path_factory) -> Path:
    from reportgen.synth import generate_run

    return generate_run(tmp_path_factory.mktemp("mi") / "run", ranks=8, steps=4, layout="mindinsight", stages=2,
                        seed=3, inject=["slow-rank:5:compute:1.4"])


def test_every_link_of_the_example_site_lands(example_site):
    n = check_site(example_site)
    assert n > 500  # chart data links included


@pytest.mark.slow  # builds the example again as a single file: CI's slow stage (issue 31: the default suite within 8 min)
def test_every_link_of_the_example_single_file_lands(tmp_path):
    out = tmp_path / "one.html"
    assert main(["--example", "--single-file", "-o", str(out), "-q"]) == 0
    assert check_single(out) > 100


def test_chart_links_are_resolved_from_the_page_that_embeds_them(example_site):
    """The overview (root) links to ranks/..., the cluster pages to ../ranks/...; never cluster/cluster/..."""
    soup = BeautifulSoup((example_site / "index.html").read_text(encoding="utf-8"), "html.parser")
    hrefs: list[str] = []
    for s in soup.find_all("script", type="application/json"):
        _json_hrefs(json.loads(s.string), hrefs)
    assert hrefs and all(h.startswith("ranks/rank-") for h in hrefs), hrefs[:5]
    soup = BeautifulSoup((example_site / "cluster" / "execution.html").read_text(encoding="utf-8"), "html.parser")
    hrefs = []
    for s in soup.find_all("script", type="application/json"):
        _json_hrefs(json.loads(s.string), hrefs)
    assert hrefs and not any("cluster/cluster" in h or h.startswith("cluster/") for h in hrefs), hrefs[:5]


@pytest.mark.slow  # a 32-rank pipeline build and every link: CI's slow stage (issue 31: the default suite within 8 min)
def test_every_link_lands_on_a_mindinsight_pipeline_run(mindinsight_run, tmp_path):
    assert main([str(mindinsight_run), "-o", str(tmp_path / "site"), "-q"]) == 0
    check_site(tmp_path / "site")
    assert main([str(mindinsight_run), "--single-file", "-o", str(tmp_path / "one.html"), "-q"]) == 0
    check_single(tmp_path / "one.html")


def test_single_device_run_has_no_cluster_only_pages_and_every_link_lands(tmp_path):
    from reportgen.synth import generate_run
    run = generate_run(tmp_path / "run", ranks=1, steps=3)
    out = tmp_path / "site"
    assert main([str(run), "-o", str(out)]) == 0
    assert not (out / "cluster" / "communication.html").exists()
    assert not (out / "cluster" / "strategy.html").exists()
    nav = BeautifulSoup((out / "index.html").read_text(encoding="utf-8"), "html.parser").select("nav a")
    labels = {a.get_text(strip=True) for a in nav}
    assert "Step trace" in labels or any("Step" in t for t in labels)
    assert not {"Communication", "Strategy"} & labels
    check_site(out)
    single = tmp_path / "one.html"
    assert main([str(run), "-o", str(single), "--single-file"]) == 0
    check_single(single)
