"""The vendored Vega files (reportgen/vendor/vega, issue 31): unmodified (checksums of VERSIONS), the versions they
declare, what altair's specs need, and a bundle that fetches nothing (no source maps) and can be inlined."""

from __future__ import annotations

import hashlib
import re
from importlib import resources

import altair as alt

from reportgen.site.render.assets import VEGA_FILES, vega_bundle, vendored_vega


def test_the_vendored_files_are_the_published_ones():
    meta = vendored_vega()
    assert set(meta) == set(VEGA_FILES)
    base = resources.files("reportgen").joinpath("vendor", "vega")
    for name, m in meta.items():
        data = base.joinpath(name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == m["sha256"], name
        assert base.joinpath(f"LICENSE-{m['package']}").read_text(encoding="utf-8").count("Redistribution and use in source and binary forms") == 1


def test_each_file_declares_the_version_VERSIONS_names():
    meta = vendored_vega()
    base = resources.files("reportgen").joinpath("vendor", "vega")
    vega = base.joinpath("vega.min.js").read_text(encoding="utf-8")
    lite = base.joinpath("vega-lite.min.js").read_text(encoding="utf-8")
    embed = base.joinpath("vega-embed.min.js").read_text(encoding="utf-8")
    assert f'.version="{meta["vega.min.js"]["version"]}"' in vega
    assert re.search(r'var \w="' + re.escape(meta["vega-lite.min.js"]["version"]) + '"', lite)
    assert f'"{meta["vega-embed.min.js"]["version"]}"' in embed
    # altair writes specs for its Vega-Lite schema; the vendored Vega-Lite has the same major version
    assert alt.SCHEMA_VERSION.lstrip("v").split(".")[0] == meta["vega-lite.min.js"]["version"].split(".")[0]


def test_the_bundle_fetches_nothing_and_can_be_inlined():
    js = vega_bundle()
    assert "sourceMappingURL" not in js
    low = js.lower()
    assert "</script" not in low and "<!--" not in low and "<script" not in low
    # the three UMD builds set the globals report.js calls, in load order
    pos = [js.index(s) for s in (".vega=", ".vegaLite=", ".vegaEmbed=")]
    assert pos == sorted(pos)
