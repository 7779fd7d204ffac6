"""Static assets: the vendored Vega bundle (`reportgen/vendor/vega`), our CSS and JS."""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from importlib import resources

VEGA_FILES = ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js")  # in load order: each UMD build sets a global
_SOURCE_MAP = re.compile(r"\n?//# sourceMappingURL=\S*\s*$")


def vendored_vega() -> dict:
    """The vendored files' package, version and sha256 (reportgen/vendor/vega/VERSIONS), by file name."""
    text = resources.files("reportgen").joinpath("vendor", "vega", "VERSIONS").read_text(encoding="utf-8")
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4 and not line.startswith("#"):
            out[parts[0]] = {"package": parts[1], "version": parts[2], "sha256": parts[3]}
    return out


@lru_cache(maxsize=1)
def vega_bundle() -> str:
    """vega + vega-lite + vega-embed as one classic script (no network, no cache outside the output): the three
    vendored UMD builds in load order, their source-map comments dropped (a browser's tools would fetch them)."""
    base = resources.files("reportgen").joinpath("vendor", "vega")
    parts = [_SOURCE_MAP.sub("", base.joinpath(name).read_text(encoding="utf-8")) for name in VEGA_FILES]
    return ";\n".join(parts) + ";\n"


def static_text(name: str) -> str:
    return resources.files("reportgen").joinpath("templates", "static", name).read_text(encoding="utf-8")


def short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
