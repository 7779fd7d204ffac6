"""Plain-data views of the performance helper: findings (index and rank pages) and the rules page."""

from __future__ import annotations

from reportgen.i18n import N_, _, text

import json
import math
import re
from typing import Any

from markdown_it import MarkdownIt

from reportgen import urls
from reportgen.rules import RULES, SEVERITY_ORDER, policy
from reportgen.rules.thresholds import threshold_table
from reportgen.fmt import ms as fmt_ms, share as fmt_pct
from reportgen.site.plan.page import Page, PageContext, PageKind, PlanInput, view

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
        "impact": impact_view(f.get("impact"), finding.impact_basis, [text(c.title) for c in finding.included_in]),
        "strip": strip_view(f.get("strip"), f["evidence"].get("pattern")),
        "divergence": divergence_view(f["evidence"]),
    }


def divergence_view(ev: dict) -> dict | None:
    """Where the slow rank falls behind (the slow-rank rule's `divergence_*` evidence): a line and its link."""
    if not ev.get("divergence_first_op") or not ev.get("divergence_page"):
        return None
    return {"page": str(ev["divergence_page"]),
            "text": _("Falls behind rank {fast} from operator {op} ({type}, +{extra} in step {step}); most of the "
                      "{gap} gap: {types}").format(fast=ev.get("divergence_vs_rank"), op=ev["divergence_first_op"],
                                                   type=ev.get("divergence_first_type", ""),
                                                   extra=fmt_ms(ev.get("divergence_first_extra_ms")),
                                                   step=ev.get("divergence_step"),
                                                   gap=fmt_ms(ev.get("divergence_gap_ms")),
                                                   types=ev.get("divergence_types", ""))}


STRIP_CELL, STRIP_GAP, STRIP_LABEL = 12, 2, 64
STRIP_ON, STRIP_OFF, STRIP_SOME = "#c0392b", "#e6e9ef", "#e6a23c"
PATTERN_TEXT = {"chronic": N_("chronic: the same ranks stand out in every step"),
                "intermittent": N_("intermittent: the same rank stands out in some steps"),
                "one-off": N_("one-off: one step only"),
                "rotating": N_("rotating: a different rank from step to step (the job, not a device)")}


def strip_view(strip: dict | None, pattern: str | None) -> dict | None:
    """The rank x step strip of a finding as SVG rectangles (numbers and fixed colours only; labels are escaped
    by the template): one row per subject rank, one for the other ranks (how many stand out in the step)."""
    if not strip or not strip.get("steps"):
        return None
    steps, ranks = strip["steps"], strip["ranks"]
    pitch = STRIP_CELL + STRIP_GAP
    rows, cells = [], []
    for i, (r, flags) in enumerate(zip(ranks, strip["out"])):
        rows.append({"y": i * pitch + STRIP_CELL - 2, "label": _("rank {rank}").format(rank=r)})
        for j, (s, on) in enumerate(zip(steps, flags)):
            cells.append({"x": STRIP_LABEL + j * pitch, "y": i * pitch, "fill": STRIP_ON if on else STRIP_OFF,
                          "title": _("rank {rank}, step {step}: {state}").format(
                              rank=r, step=s, state=_("stands out") if on else _("typical"))})
    if strip.get("n_others"):
        i = len(ranks)
        rows.append({"y": i * pitch + STRIP_CELL - 2, "label": _("{n} others").format(n=strip["n_others"])})
        for j, (s, n) in enumerate(zip(steps, strip.get("others") or [0] * len(steps))):
            cells.append({"x": STRIP_LABEL + j * pitch, "y": i * pitch, "fill": STRIP_SOME if n else STRIP_OFF,
                          "title": _("step {step}: {n} other ranks stand out").format(step=s, n=n)})
    n_rows = len(rows)
    return {"width": STRIP_LABEL + len(steps) * pitch, "height": n_rows * pitch + 14, "cell": STRIP_CELL,
            "rows": rows, "cells": cells, "first_step": steps[0], "last_step": steps[-1],
            "axis_y": n_rows * pitch + 11, "last_x": STRIP_LABEL + (len(steps) - 1) * pitch,
            "label_x": STRIP_LABEL, "pattern": _(PATTERN_TEXT[pattern]) if pattern in PATTERN_TEXT else ""}


SAVES = N_("fixing this saves ~{ms}/step ({pct})")
# a saving that is another finding's (the same time of the same ranks: `rules._shared_savings`), said once
INCLUDED = N_("saving included in “{title}”: the same time of the same ranks, not to be added to it")
BEYOND = N_("fixing this saves ~{ms}/step more than “{title}” (its ~{own}/step in all overlaps that one's)")


def impact_view(impact: dict | None, basis: str | None = None, included_in: list[str] = ()) -> dict | None:
    """The saving line of a finding: one format string (translatable as a whole), and the basis (`basis`: in the
    report's language; summary.json's is English). `included_in`: the titles of the findings whose saving already
    counts this one's (`impact.included_in`): the line names them instead of a saving to add."""
    if not impact or not isinstance(impact.get("step_ms"), (int, float)):
        return None
    ms = fmt_ms(impact["step_ms"]).replace(" ", "\u00a0")
    if included_in:
        title = "”, “".join(included_in)
        extra = impact.get("additional_step_ms")
        saves = (_(BEYOND).format(ms=fmt_ms(extra).replace(" ", "\u00a0"), title=title, own=ms)
                 if isinstance(extra, (int, float)) and extra > 0 else _(INCLUDED).format(title=title))
    else:
        saves = _(SAVES).format(ms=ms, pct=fmt_pct(impact.get("step_share")))
    return {"saves": saves, "line": saves[:1].upper() + saves[1:], "in_findings": [],
            "basis": basis if basis is not None else str(impact.get("basis", ""))}


def findings_context(findings: list) -> dict:
    counts = {s: 0 for s in SEVERITY_ORDER}
    for f in findings:
        counts[f.severity] += 1
    views = [finding_view(f) for f in findings]
    number = {id(f): n for n, f in enumerate(findings, 1)}
    for f, v in zip(findings, views):
        if v["impact"] and f.included_in:  # the verdict's short form: the numbers of the findings it is counted in
            v["impact"]["in_findings"] = [number[id(c)] for c in f.included_in if id(c) in number]
    return {"findings": views, "finding_counts": counts,
            "findings_computed": True, "rules_page": urls.RULES}


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
    used = thresholds.get(policy.POLICY_ID, {})
    pol = {"id": policy.POLICY_ID, "title": _(policy.TITLE), "description_html": markdown(_(policy.DESCRIPTION)),
           "thresholds": [{"name": k, "value": _fmt(used.get(k, t.default)), "default": _fmt(t.default),
                           "changed": used.get(k, t.default) != t.default, "doc": _(t.doc)}
                          for k, t in threshold_table(policy.Policy).items()]}
    return {"rules": rules, "policy": pol}


@view
class RulesContext(PageContext):
    rules: list[dict]
    policy: dict  # the severity policy (`rules.policy`): its description and thresholds


def _plan_rules(inp: PlanInput) -> list[Page]:
    return [Page(urls.RULES, N_("Performance helper rules"), RULES_KIND.partial,
                 RulesContext(**inp.common, **rules_context(inp.findings, inp.thresholds)))]


RULES_KIND = PageKind("rules", urls.RULES, N_("Rules"), "_rules.html", _plan_rules)
