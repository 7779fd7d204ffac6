"""How every page of msreport gets its style, script and the Vega bundle, in one of two modes (the asset context
shared by the site, the single file, compare / trend and the runs index):

* linked (a folder): `PageAssets.write(folder)` writes `assets/{vega,css,js}-<hash>.<ext>` once; pages link them;
* inline (one HTML file): `PageAssets.inline()`; the texts are put in the page.

`template_vars(url)` is what `base.html` reads (`asset_*` links or `inline_*` texts). The texts themselves come
from `assets` (the Vega bundle, `report.css`, `report.js`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from markupsafe import Markup

from reportgen.site.render.assets import short_hash, static_text, vega_bundle

ASSET_DIR = "assets"


def _texts() -> tuple[tuple[str, str, str], ...]:
    """(key, text, extension) of each asset, in the order they are written."""
    return (("vega", vega_bundle(), "js"), ("css", static_text("report.css"), "css"),
            ("js", static_text("report.js"), "js"))


def style() -> Markup:
    """The report's style sheet, for a page that carries it inline (the runs index)."""
    return Markup(static_text("report.css"))


@dataclass(frozen=True)
class PageAssets:
    single: bool  # inline mode: one self-contained HTML file
    files: dict[str, str] = field(default_factory=dict)  # linked mode: "vega" / "css" / "js" -> site path

    @classmethod
    def inline(cls) -> "PageAssets":
        return cls(single=True)

    @classmethod
    def write(cls, folder: Path) -> "PageAssets":
        """Write the assets under `folder/assets/` (content-hashed names) and link them."""
        (folder / ASSET_DIR).mkdir()
        files = {}
        for key, text, ext in _texts():
            name = f"{key}-{short_hash(text)}.{ext}"
            (folder / ASSET_DIR / name).write_text(text, encoding="utf-8")
            files[key] = f"{ASSET_DIR}/{name}"
        return cls(single=False, files=files)

    def template_vars(self, url: Optional[Callable[[str], str]] = None) -> dict:
        """`asset_css` / `asset_js` / `asset_vega` (links, resolved with `url` from the page) or `inline_*`."""
        if self.single:
            return dict(asset_css="", asset_js="", asset_vega="", inline_css=style(),
                        inline_js=Markup(static_text("report.js")), inline_vega=Markup(vega_bundle()))
        link = url or (lambda p: p)
        return dict(asset_css=link(self.files["css"]), asset_js=link(self.files["js"]),
                    asset_vega=link(self.files["vega"]), inline_css="", inline_js="", inline_vega="")
