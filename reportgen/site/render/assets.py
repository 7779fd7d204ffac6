"""Static assets: the Vega bundle from vl-convert-python (cached on disk), our CSS and JS."""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from importlib import resources
from pathlib import Path

import altair as alt

from reportgen.errors import ReportError


def _vl_version() -> str:
    major, minor = alt.SCHEMA_VERSION.lstrip("v").split(".")[:2]
    return f"{major}.{minor}"


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "msreport"


@lru_cache(maxsize=1)
def vega_bundle() -> str:
    """vega + vega-lite + vega-embed as one script (no network), cached per vl-convert version."""
    import vl_convert as vlc

    vl = _vl_version()
    if vl not in vlc.get_vegalite_versions():
        raise ReportError(f"vl-convert-python {vlc.__version__} has no Vega-Lite {vl}; upgrade vl-convert-python")
    cache = _cache_dir() / f"vega-bundle-{vlc.__version__}-{vl}.js"
    try:
        if cache.is_file():
            return cache.read_text(encoding="utf-8")
    except OSError:
        pass
    js = vlc.javascript_bundle(vl_version=vl)
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(js, encoding="utf-8")
        os.replace(tmp, cache)
    except OSError:
        pass  # a cache is a nicety
    return js


def static_text(name: str) -> str:
    return resources.files("reportgen").joinpath("templates", "static", name).read_text(encoding="utf-8")


def short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
