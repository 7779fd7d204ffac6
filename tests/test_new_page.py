"""Adding a cluster page takes its module (a `PageKind`), its partial and one line in the registry — nothing else
(issue 15). A throwaway page is registered here the same way and must appear in the nav of every page, in the single
file, and have its links resolved in both modes."""

from __future__ import annotations


import pytest
from bs4 import BeautifulSoup
from jinja2 import ChoiceLoader, DictLoader

from reportgen import urls
from reportgen.cli import main
from reportgen.site.render import builder, jinja_env
from reportgen.site.plan import planner as pages
from reportgen.site.plan.page import Page, PageContext, PageKind, PlanInput, view

PARTIAL = """<section id="extra"><h1>Extra page</h1>
<p class="muted">{{ ctx.ranks }} ranks; slowest rank {{ ctx.slowest }}.</p>
<a id="to-rank" href="{{ url(ctx.rank_href) }}">rank page</a>
<a id="to-overview" href="{{ url('index.html') }}">overview</a></section>"""


@view
class ExtraContext(PageContext):  # the module's view model: what its partial reads as `ctx.field`
    ranks: int
    slowest: int
    rank_href: str


def _plan(inp: PlanInput) -> list[Page]:  # the module's plan function: plain data, no I/O
    from reportgen import urls

    a = inp.analysis
    totals = a.steps.average["total"] if a.steps.kind else None
    slowest = int(totals.idxmax()) if totals is not None else a.run.rank_ids[0]
    return [Page("extra.html", "Extra", "_extra.html",
                 ExtraContext(**inp.common, ranks=len(a.run.rank_ids), slowest=slowest,
                              rank_href=urls.rank_page(slowest)))]


EXTRA = PageKind("extra", "extra.html", "Extra", "_extra.html", _plan)


@pytest.fixture
def with_extra_page(monkeypatch):
    monkeypatch.setattr(pages, "PAGES", (*pages.PAGES, EXTRA))  # the registry line
    make_env = jinja_env.make_env

    def env_with_partial():
        env = make_env()
        env.loader = ChoiceLoader([env.loader, DictLoader({"_extra.html": PARTIAL})])  # the partial
        return env

    monkeypatch.setattr(builder, "make_env", env_with_partial)


def test_a_registered_page_is_built_linked_and_single_filed(with_extra_page, synth_8, tmp_path):
    site = tmp_path / "site"
    assert main([str(synth_8), "-o", str(site), "-q"]) == 0
    extra = BeautifulSoup((site / "extra.html").read_text(), "html.parser")
    assert extra.find("h1").get_text() == "Extra page"
    rank_href = extra.find(id="to-rank")["href"]
    assert (site / rank_href.split("#")[0]).is_file()
    assert (site / extra.find(id="to-overview")["href"]).is_file()
    for page in ("index.html", urls.STEP_TRACE, rank_href.split("#")[0]):
        soup = BeautifulSoup((site / page).read_text(), "html.parser")
        hrefs = [a["href"] for a in soup.select("nav a")]
        target = [h for h in hrefs if h.endswith("extra.html")]
        assert target, f"{page}: no nav entry for the new page"
        assert (site / page).parent.joinpath(target[0]).resolve() == (site / "extra.html").resolve()
    single = tmp_path / "one.html"
    assert main([str(synth_8), "-o", str(single), "--single-file", "-q"]) == 0
    soup = BeautifulSoup(single.read_text(), "html.parser")
    sec = soup.find("section", id="extra")
    assert sec is not None, "the new page is not stacked into the single file"
    for a in sec.find_all("a"):
        href = a["href"]
        assert href.startswith("#") and soup.find(id=href[1:]) is not None, href
