"""Hostile text in profiler files stays text: Markdown/link injection, Content-Security-Policy on every page."""

from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup

from reportgen.rules.base import md_literal
from reportgen.site.pages.findings import markdown

PAYLOADS = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "[x](javascript:alert(1))",
    "![x](http://evil.example/p.png)",
    "</script><script>alert(1)</script>",
    "[a](//evil.example)",
    "<http://evil.example/x>",
    "<javascript:alert(1)>",
    "[r]: http://evil.example\n\n[r]",
    "x\n# heading\n- item",
    "`code` *em* __strong__ &amp; &#x3C;b&#x3E;",
    "[a](data:text/html,<script>alert(1)</script>)",
]


def _text_only(html: str) -> BeautifulSoup:
    soup = BeautifulSoup(html, "html.parser")
    tags = {t.name for t in soup.find_all(True)}
    assert tags <= {"p", "strong", "code"}, (html, tags)
    return soup


@pytest.mark.parametrize("payload", PAYLOADS)
def test_md_literal_renders_as_the_original_text(payload):
    soup = _text_only(markdown("Advice about **" + md_literal(payload) + "** here."))
    flat = re.sub(r"\s+", " ", payload)
    assert flat in soup.get_text(), (payload, soup.get_text())


@pytest.mark.parametrize("payload", PAYLOADS)
def test_markdown_renderer_makes_no_images_and_no_outside_links(payload):
    soup = BeautifulSoup(markdown(payload), "html.parser")
    assert not soup.find_all(["img", "script", "iframe", "object", "embed", "svg", "style"])
    for a in soup.find_all("a"):
        href = a.get("href", "")
        assert ":" not in href and not href.startswith("/"), href
    for tag in soup.find_all(True):
        assert not any(k.startswith("on") for k in tag.attrs), tag


def test_markdown_keeps_links_into_the_report():
    soup = BeautifulSoup(markdown("[ranks](ranks/rank-3.html#data) and [top](#findings)"), "html.parser")
    assert [a["href"] for a in soup.find_all("a")] == ["ranks/rank-3.html#data", "#findings"]


def test_md_literal_bounds_length_and_lines():
    s = md_literal("a\nb\r\nc" + "x" * 500, limit=50)
    assert "\n" not in s and len(s.replace("\\", "")) <= 50


def test_csp_hash_matches_browser_format():
    from reportgen.site.render.csp import csp_hash

    # sha256 of "alert(1)" as browsers report it
    assert csp_hash("alert(1)") == "'sha256-bhHHL3z2vDgxUt0W3dWQOrprscmda2Y5pLsLg4GF+pI='"


def _csp(html: str) -> str:
    meta = BeautifulSoup(html, "html.parser").find("meta", attrs={"http-equiv": "Content-Security-Policy"})
    assert meta is not None, "no Content-Security-Policy meta tag"
    return meta["content"]


def _check_policy(policy: str, single: bool) -> None:
    d = {p.split()[0]: p.split()[1:] for p in (x.strip() for x in policy.split(";")) if p}
    assert d["default-src"] == ["'none'"]
    for key in ("script-src", "style-src"):
        assert "'unsafe-eval'" not in d.get(key, []) and "*" not in d.get(key, [])
        assert not any(s.startswith(("http", "data:", "//")) for s in d.get(key, []))
    if not single:
        assert d["script-src"] == ["'self'"] and d["style-src"] == ["'self'"]
    else:
        assert all(s.startswith("'sha256-") or s == "'unsafe-inline'" for s in d["script-src"])
    assert "connect-src" not in d and "img-src" in d and not any(s.startswith("http") for s in d["img-src"])


def test_every_site_page_carries_the_policy(example_site):
    pages = list(example_site.rglob("*.html"))
    assert len(pages) > 5
    for p in pages:
        html = p.read_text(encoding="utf-8")
        _check_policy(_csp(html), single=False)
        # the policy comes before any script or style
        assert html.index("Content-Security-Policy") < min(i for i in (html.find("<script"), html.find("<style"),
                                                                       html.find("<link"), len(html)) if i >= 0)
        assert not re.search(r"<[^>]+\son[a-z]+\s*=", html), p


def test_single_file_carries_the_policy(tmp_path):
    from reportgen.cli import main
    from reportgen.site.render.jinja_env import make_env

    out = tmp_path / "r.html"
    assert main(["--example", "--single-file", "-o", str(out), "-q"]) == 0
    html = out.read_text(encoding="utf-8")
    policy = _csp(html)
    _check_policy(policy, single=True)
    if "csp_hash" not in make_env().filters:
        pytest.skip("make_env does not register reportgen.site.render.csp.csp_hash yet: single file falls back "
                    "to 'unsafe-inline' (still no network loads)")
    from reportgen.site.render.csp import csp_hash

    soup = BeautifulSoup(html, "html.parser")
    for s in soup.find_all("script"):
        if s.get("type") in (None, "", "text/javascript"):
            assert csp_hash(s.string or "") in policy
    for s in soup.find_all("style"):
        assert csp_hash(s.string or "") in policy
