"""Plain-data views of the performance helper: findings (index and rank pages) and the rules page."""

from __future__ import annotations

from reportgen.i18n import N_, _, text

import json
import math
import re
from typing import Any

from markdown_it import MarkdownIt

from reportgen.rules import RULES, SEVERITY_ORDER
from reportgen.fmt import ms as fmt_ms, share as fmt_pct
from reportgen.site.page import Page, PageContext, PageKind, PlanInput, view

RULES_PAGE = "rules.html"
MAX_RANK_LINKS = 24
MAX_RANK_FINDINGS = 30

_LOCAL_HREF = re.compile(r"[A-Za-z0-9._~/#?%=&+-]*")


def _local_link(url: str) -> bool:
    """Only links into the report: a relative path or an anchor. No scheme (`javascript:`, `data:`, `http:`...),
    no absolute or protocol-relative path (`/x`, `//host`), no backslashes or whitespace a browser would reinterpret."""
    return bool(_LOCAL_HREF.fullmatch(url)) and not url.startswith("/") and ":" not in url


_md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).disable("image")
_md.validateLink = _local_link  # a link that fails stays text


def markdown(text: str) -> str:
    """Markdown to HTML with raw HTML disabled (escaped), no images, and links only into the report, so text that
    quotes file content stays inert (rules also escape file data with `rules.base.md_literal`)."""
    return _md.render(text or "")


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if not math.isfinite(v):
            return "—"
        return f"{v:,.4f}".rstrip("0").rstrip(".") if abs(v) < 1e6 else f"{v:,.0f}"
    if isinstance(v, (dict, list)):
        s = json.dumps(v, ensure_ascii=False, default=str)
        return s if len(s) <= 240 else s[:237] + "…"
    return str(v)


def _evidence_rows(ev: dict) -> list[tuple[str, str]]:
    return [(k.replace("_", " "), _fmt(v)) for k, v in ev.items() if k != "related"]


def finding_view(finding) -> dict:
    """What the templates need for one finding (all strings escaped by the template, markdown pre-rendered)."""
    f = finding.to_dict()
    table = f.get("table")
    rows = []
    if table:
        links = table.get("links") or [None] * len(table["rows"])
        rows = [{"cells": [_fmt(c) for c in row], "href": href} for row, href in zip(table["rows"], links)]
    return {
        "id": f["id"], "rule": f.get("rule", ""), "severity": f["severity"], "category": f["category"],
        "title": f["title"], "why_html": markdown(f.get("why", "")), "advice_html": markdown(f["advice"]),
        "page": f["page"], "ranks": f["ranks"][:MAX_RANK_LINKS], "n_ranks": len(f["ranks"]),
        "links": f["links"][:MAX_RANK_LINKS], "n_links": len(f["links"]), "transport": f["transport"],
        "stages": f["stages"], "phase": f["phase"], "files": f["files"][:20], "n_files": len(f["files"]),
        "evidence": _evidence_rows(f["evidence"]),
        "related": [{"id": r["id"], "title": r["title"]} for r in f["evidence"].get("related", [])],
        "table": {"columns": table["columns"], "rows": rows} if table else None,
        "impact": impact_view(f.get("impact")),
    }


SAVES = "fixing this saves ~{ms}/step ({pct})"


def impact_view(impact: dict | None) -> dict | None:
    """The saving line of a finding: one format string (translatable as a whole), and the basis."""
    if not impact or not isinstance(impact.get("step_ms"), (int, float)):
        return None
    return {"saves": SAVES.format(ms=fmt_ms(impact["step_ms"]).replace(" ", "\u00a0"),
                                  pct=fmt_pct(impact.get("step_share"))),
            "basis": str(impact.get("basis", ""))}


def findings_context(findings: list) -> dict:
    counts = {s: 0 for s in SEVERITY_ORDER}
    for f in findings:
        counts[f.severity] += 1
    return {"findings": [finding_view(f) for f in findings], "finding_counts": counts,
            "findings_computed": True, "rules_page": RULES_PAGE}


def rank_findings(findings: list, n_ranks: int) -> dict[int, list[dict]]:
    """rank -> compact views of the findings that name it (in severity order); findings about every rank of a
    cluster are left to the overview."""
    out: dict[int, list[dict]] = {}
    for f in findings:
        if n_ranks > 1 and len(f.ranks) >= n_ranks:
            continue
        for r in f.ranks:
            lst = out.setdefault(int(r), [])
            if len(lst) < MAX_RANK_FINDINGS:
                lst.append({"id": f.id, "severity": f.severity, "title": text(f.title), "page": str(f.page),
                            "advice_html": markdown(text(f.advice))})
    return out


def rules_context(findings: list, thresholds: dict[str, dict[str, float]]) -> dict:
    fired: dict[str, dict[str, int]] = {}
    for f in findings:
        c = fired.setdefault(f.rule, {s: 0 for s in SEVERITY_ORDER})
        c[f.severity] += 1
    rules = []
    for r in RULES:
        used = thresholds.get(r.id, {})
        rules.append({
            "id": r.id, "title": _(r.title), "category": r.category, "source": r.source,
            "description_html": markdown(_(r.description)),
            "thresholds": [{"name": k, "value": _fmt(used.get(k, t.default)), "default": _fmt(t.default),
                            "changed": used.get(k, t.default) != t.default, "doc": _(t.doc)}
                           for k, t in r.thresholds.items()],
            "fired": fired.get(r.id, {s: 0 for s in SEVERITY_ORDER}),
        })
    return {"rules": rules}


@view
class RulesContext(PageContext):
    rules: list[dict]


def _plan_rules(inp: PlanInput) -> list[Page]:
    return [Page(RULES_PAGE, N_("Performance helper rules"), RULES_KIND.partial,
                 RulesContext(**inp.common, **rules_context(inp.findings, inp.thresholds)))]


RULES_KIND = PageKind("rules", RULES_PAGE, N_("Rules"), "_rules.html", _plan_rules)
