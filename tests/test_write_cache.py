"""Issue 33, the write stage: the templates' compiled code kept in the rank cache folder between builds
(site/render/template_cache.py), the communication matrix's group views summed in one pass
(site/views/communication.matrix_views) and the house chart config put in place without Altair's configure_* copies
(charts/theme.finish). Each must leave the output as it was."""

from __future__ import annotations

import json
import os

import altair as alt
import jinja2
import pandas as pd
import pytest

from reportgen.charts import theme
from reportgen.cli import main
from reportgen.site.render import template_cache, template_ship
from reportgen.site.render.template_cache import CACHE, FOLDER
from reportgen.site.views import communication as comm_views
from reportgen.synth import generate_run


def _site(out):
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name != "summary.json"}


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    return generate_run(tmp_path_factory.mktemp("wc") / "run", ranks=2, steps=2)


def test_a_rebuild_loads_the_compiled_templates_and_a_bad_entry_is_compiled_again(small_run, tmp_path, monkeypatch):
    monkeypatch.setattr(template_cache, "_shipped", dict)  # (the folder's tier alone: nothing shipped)
    out = tmp_path / "report"
    args = [str(small_run), "-o", str(out), "-q", "--lang", "en"]
    CACHE.clear()
    assert main(args) == 0
    entries = sorted((tmp_path / ".report.msreport-cache" / FOLDER).glob("*.jinja"))
    assert len(entries) >= 10  # page, base, macros, the pages' partials, the rank sections
    first = _site(out)

    compiled: list[str] = []
    real = jinja2.Environment.compile

    def counting(self, source, name=None, *a, **kw):
        compiled.append(name)
        return real(self, source, name, *a, **kw)
    monkeypatch.setattr(jinja2.Environment, "compile", counting)
    CACHE.clear()  # as a new process: nothing in memory, every template from the folder
    assert main(args) == 0
    assert compiled == [] and _site(out) == first

    # a damaged entry and one that others may write (loading one runs its code): both compiled again, same pages
    entries[0].write_bytes(b"not a template")
    os.chmod(entries[1], 0o666)
    CACHE.clear()
    assert main(args) == 0
    assert len(compiled) == 2 and _site(out) == first
    assert entries[1].stat().st_mode & 0o022 == 0  # written again, private

    # --no-cache: no folder, compiled in memory only (the same pages)
    compiled.clear()
    CACHE.clear()
    out2 = tmp_path / "nocache"
    assert main([str(small_run), "-o", str(out2), "-q", "--lang", "en", "--no-cache"]) == 0
    assert compiled and not (tmp_path / ".nocache.msreport-cache").exists() and _site(out2) == first


def _compiles(monkeypatch) -> list:
    """The names of the templates Jinja compiles from now on (None: `from_string`)."""
    compiled: list = []
    real = jinja2.Environment.compile

    def counting(self, source, name=None, *a, **kw):
        compiled.append(name)
        return real(self, source, name, *a, **kw)
    monkeypatch.setattr(jinja2.Environment, "compile", counting)
    return compiled


def test_the_shipped_compiled_templates_are_those_of_the_templates_as_they_are():
    """`reportgen/templates/compiled.json.gz` is what `scripts/compile_templates.py` writes from the templates and
    catalogs of this checkout: a template changed without it made again fails here (the build would stay right,
    compiling that template, but lose the time the file saves)."""
    import gzip

    import orjson
    shipped = orjson.loads(gzip.decompress(template_cache.SHIPPED.read_bytes()))
    if shipped["jinja"] != jinja2.__version__:
        pytest.skip(f"the templates were compiled with Jinja {shipped['jinja']}, this is {jinja2.__version__}: "
                    "run scripts/compile_templates.py")
    now = template_ship.compile_all()
    assert sorted(now["templates"]) == sorted(shipped["templates"]), "run scripts/compile_templates.py"
    for key, entry in now["templates"].items():
        assert shipped["templates"][key] == entry, f"{key} changed: run scripts/compile_templates.py"
    assert template_ship.shipped_bytes(now) == template_cache.SHIPPED.read_bytes()
    assert {k.split("|")[0].split("-")[0] for k in now["templates"]} == {"en", "zh"}  # (zh: "zh-<catalog digest>")
    assert len(now["templates"]) >= 2 * 25


def test_a_first_build_compiles_no_template_it_ships_and_writes_the_same_site(small_run, tmp_path, monkeypatch):
    """No cache folder yet (a first build; `--no-cache` alike): the templates come from the shipped file, none is
    compiled by Jinja, in both languages, and the pages are byte for byte those of templates compiled by Jinja.
    A shipped template whose source changed since (another checksum) is compiled as before."""
    if not template_cache._shipped():
        pytest.skip("no shipped templates for this Jinja (test_the_shipped_compiled_templates_... says why)")
    compiled = _compiles(monkeypatch)
    sites = {}
    for lang in ("en", "zh"):
        CACHE.clear()
        out = tmp_path / f"shipped-{lang}"
        assert main([str(small_run), "-o", str(out), "-q", "--lang", lang, "--no-cache"]) == 0
        assert [n for n in compiled if n is not None] == [], lang  # (None: small `from_string` templates)
        sites[lang] = _site(out)
    # the shipped tier off: Jinja compiles every template, the same pages
    with monkeypatch.context() as m:
        m.setattr(template_cache, "_shipped", dict)
        for lang in ("en", "zh"):
            CACHE.clear()
            out = tmp_path / f"jinja-{lang}"
            assert main([str(small_run), "-o", str(out), "-q", "--lang", lang, "--no-cache"]) == 0
            assert _site(out) == sites[lang], lang
        assert "page.html" in compiled and "_rank.html" in compiled
    # a template whose shipped entry was made from another source: compiled by Jinja, the rest still shipped
    stale = {k: dict(v, checksum="0" * 40) if k.endswith("|_rank.html") else v
             for k, v in template_cache._shipped().items()}
    monkeypatch.setattr(template_cache, "_shipped", lambda: stale)
    compiled.clear()
    CACHE.clear()
    out = tmp_path / "stale"
    assert main([str(small_run), "-o", str(out), "-q", "--lang", "en", "--no-cache"]) == 0
    assert [n for n in compiled if n is not None] == ["_rank.html"] and _site(out) == sites["en"]


def test_shipped_templates_of_another_jinja_or_damaged_are_not_used(tmp_path, monkeypatch):
    import gzip

    import orjson
    template_cache._shipped.cache_clear()
    try:
        good = template_ship.compile_all()
        for data, usable in ((good, True), (dict(good, jinja="2.11.3"), False), (b"not gzip", False),
                             (gzip.compress(b"[1, 2]"), False), (dict(good, templates=[1]), False)):
            path = tmp_path / "compiled.json.gz"
            path.write_bytes(data if isinstance(data, bytes) else gzip.compress(orjson.dumps(data)))
            monkeypatch.setattr(template_cache, "SHIPPED", path)
            template_cache._shipped.cache_clear()
            assert bool(template_cache._shipped()) is usable
            key, entry = next(iter(good["templates"].items()))
            lang, name = key.split("|")
            got = template_cache.shipped_source(name, lang, entry["checksum"])
            assert got == (entry["code"] if usable else None)
            assert template_cache.shipped_source(name, lang, "another checksum") is None
        monkeypatch.setattr(template_cache, "SHIPPED", tmp_path / "absent.json.gz")
        template_cache._shipped.cache_clear()
        assert template_cache._shipped() == {}
    finally:
        monkeypatch.undo()
        template_cache._shipped.cache_clear()


def _links(rows):
    return pd.DataFrame(rows, columns=["src", "dst", "time_ms", "size_mb", "transport", "slow", "mapped", "self",
                                       "group"])


@pytest.mark.parametrize("n_ranks", [8, 130])  # one rank per cell, then blocks of 3 ranks
def test_matrix_group_views_in_one_pass_equal_each_group_alone(n_ranks):
    lt = _links([
        (0, 3, 2.0, 8.0, "HCCS", False, True, False, "g0"),
        (1, 4, 1.0, 8.0, "RDMA", True, True, False, "g0"),
        (0, 5, 1.0, 2.0, "RDMA", True, True, False, "g1"),
        (0, 5, 1.0, 8.0, "HCCS", False, True, False, "g0"),
        (0, 5, 0.5, 1.0, "HCCS", False, True, False, "g1"),
        (2, 4, 4.0, 4.0, "SIO", False, True, False, "g1"),
        (7, 6, 1.0, 1.0, "RDMA", False, True, False, "g0"),
        (6, 6, 9.0, 9.0, "LOCAL", False, True, True, "g1"),  # on-chip: left out
        (5, 2, 3.0, 3.0, "HCCS", False, False, False, "g2"),  # not mapped: no cells for g2
    ])
    ranks = list(range(n_ranks))
    views = comm_views.matrix_views(lt, ranks, ["g0", "g1", "g2", "absent"])
    for g in ("g0", "g1"):
        alone = comm_views.matrix_views(lt[lt["group"] == g], ranks)[None]  # the all-groups view of its links only
        assert views[g] == alone and views[g]["cells"]
    assert views["g2"]["cells"] == views["absent"]["cells"] == []
    assert views[None] == comm_views.matrix_cells(lt, ranks)
    # hand-computed: g1's 0→5 sums its two links (1.5 ms, 3 MB), over RDMA and HCCS
    if n_ranks == 8:
        c = next(c for c in views["g1"]["cells"] if (c["so"], c["do"]) == (0, 5))
        assert c["time_ms"] == 1.5 and c["size_mb"] == 3.0 and c["transport"] == "HCCS/RDMA" and c["slow"] is True
    else:
        c = next(c for c in views["g1"]["cells"] if (c["so"], c["do"]) == (0, 1))  # 0→5 and 2→4: ranks 0-2 → 3-5
        assert c["time_ms"] == 5.5 and c["size_mb"] == 7.0 and c["slow_links"] == "0→5"


def test_finish_puts_the_same_config_as_altairs_configure_calls():
    chart = alt.Chart(alt.NamedData("rows")).mark_bar().encode(x="a:Q", y=alt.Y("b:N", title="B"))
    layered = alt.layer(chart, chart.mark_tick()).resolve_scale(y="independent")
    own = chart.configure_scale(bandPaddingInner=0.1)  # a chart with its own config: Altair's calls, as before
    for c in (chart, layered, own):
        got = theme.finish(c, 200, {"rows": [{"a": 1, "b": "x"}]})
        want = theme._configured(c.properties(width="container", height=200))
        want["datasets"] = {"rows": [{"a": 1, "b": "x"}]}
        assert json.dumps(got) == json.dumps(want)  # (key order included: the page's bytes)
    assert got["config"]["font"] == theme.FONT and got["config"]["legend"]["orient"] == "bottom"
    a, b = theme.finish(chart), theme.finish(chart)
    assert a["config"] == b["config"] and a["config"] is not b["config"]  # each spec its own dict


def test_no_template_is_written_through_a_link_planted_where_the_cache_goes(tmp_path):
    """A symbolic link in the cache folder's place is followed by nothing that writes there: the compiled
    templates neither (as the rank entries, the whole-run entries and the CSV store)."""
    from reportgen import rankcache
    from reportgen.site.render.template_cache import TemplateCache

    real = tmp_path / "elsewhere"
    real.mkdir()
    link = tmp_path / ".site.msreport-cache"
    link.symlink_to(real, target_is_directory=True)
    with rankcache.use(link):
        assert rankcache.active() is None
        assert TemplateCache._path("k") is None
    with rankcache.use(real):
        assert rankcache.active() == real and TemplateCache._path("k") is not None
    assert list(real.rglob("*")) == []


def test_the_house_chart_gives_altairs_channels_without_altairs_conversion(monkeypatch):
    """`theme.Chart.encode` hands Altair channel objects (a shorthand text, a value, a condition, a list of
    tooltips): the spec is Altair's own, key order included, and Altair converts no text or dict itself (its
    conversion builds a converter over the whole schema, ~6 ms a channel). Every chart module draws with it."""
    import pathlib

    from altair.utils import core

    wrapped: list = []
    real = core._ChannelCache._wrap_in_channel

    def spy(self, obj, encoding):
        if not isinstance(obj, (alt.SchemaBase, list, tuple)):
            wrapped.append((encoding, obj))
        return real(self, obj, encoding)
    monkeypatch.setattr(core._ChannelCache, "_wrap_in_channel", spy)
    cond = alt.condition("datum.x > 1", alt.value(1.0), alt.value(0.18))
    for enc in (dict(x="a:Q", y="b:N", href="h:N", text="t:N"),
                dict(opacity=cond, stroke=alt.condition("datum.s", alt.value("#111"), alt.value(None)),
                     strokeWidth=alt.value(2)),
                dict(x="a:Q", x2="b:Q", y="c:O", y2="d:O", detail="e:N", size=alt.value(3), color=alt.value("#333")),
                dict(tooltip=["a:Q", alt.Tooltip("b:N", title="B")],
                     color=alt.condition(alt.datum.k == 1, alt.value("red"), alt.value("blue")))):
        wrapped.clear()
        ours = theme.Chart(alt.NamedData("r")).mark_point().encode(**enc)
        assert wrapped == [] and type(ours) is theme.Chart
        want = alt.Chart(alt.NamedData("r")).mark_point().encode(**enc).to_dict(validate=True)
        assert json.dumps(ours.to_dict(validate=True)) == json.dumps(want)
    charts = pathlib.Path(theme.__file__).parent
    for f in [*charts.glob("*.py"), charts.parent / "compare" / "charts.py"]:
        text = f.read_text(encoding="utf-8")
        assert "alt.Chart(" not in text or f.name == "theme.py", f"{f.name}: draw with theme.Chart"
