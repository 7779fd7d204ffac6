"""`findings.md` beside `summary.json`: the verdict in a few lines, then every finding by severity and estimated
saving, with its id, subject, numbers, evidence pointer and advice, in plain Markdown (a CI comment, a chat
message or an agent can use it without parsing HTML). Made from the summary's findings only, or, for a second
language's site tree, from the typed findings rendered in that language."""

from __future__ import annotations

import re
from typing import Optional, Sequence

from reportgen.fmt import ms as fmt_ms, share as fmt_pct
from reportgen.i18n import N_, _

# The file's own words, in the language of the site tree it is written in (summary.json stays language-neutral)
HEADER = N_("# msreport findings: {path}")
VERDICT = N_("{critical} critical, {warning} warning, {info} information finding(s) over {ranks} rank(s) and "
             "{steps} step(s).")
SAVES = N_("Fixing this saves ~{ms}/step ({pct}): {basis}.")
INCLUDED = N_("Saving included in `{ids}`: the same time of the same ranks, not to be added ({basis}).")
BEYOND = N_("Fixing this saves ~{ms}/step more than `{ids}` (~{own}/step in all, overlapping that saving): {basis}.")
INCLUDED_SHORT = N_("saving included in `{ids}`")
NONE = N_("No warning or critical finding: nothing in this run calls for action by the helper's rules.")
MAX_NUMBERS = 12


# What could turn plain text into markup: code spans, emphasis, link and image brackets, raw HTML and entities,
# and the backslash itself. Other punctuation stays as it is, so the text reads as written.
_MARKUP = re.compile(r"([\\`*\[\]<>&])")
_AUTOLINK = re.compile(r"(?i)(?<=[a-z0-9]):(?=//)|(?<=\bwww)\.")


def md_text(value, limit: int = 200) -> str:
    """Text (from a finding, which may quote a profiler file) as inert Markdown that still reads cleanly: line
    breaks become spaces (no new blocks), it is cut to `limit` characters, the characters that start code, emphasis,
    links, images, raw HTML or entities are backslash-escaped, and bare addresses (`x://`, `www.`) are broken so no
    renderer turns them into links."""
    s = "" if value is None else str(value)
    s = re.sub(r"[\x00-\x1f\x7f\u2028\u2029]+", " ", s)
    if len(s) > limit:
        s = s[:limit - 1] + "…"
    s = _MARKUP.sub(r"\\\1", s)
    return _AUTOLINK.sub(lambda m: "\\" + m.group(0), s)


def _subject(f: dict) -> str:
    parts = []
    if f.get("ranks"):
        rs = [str(r) for r in f["ranks"][:16]]
        parts.append(_("ranks {ranks}").format(
            ranks=", ".join(rs) + (f" (+{len(f['ranks']) - 16})" if len(f["ranks"]) > 16 else "")))
    if f.get("links"):
        parts.append(_("links {links}").format(
            links=", ".join(f["links"][:8]) + (f" ({f['transport']})" if f.get("transport") else "")))
    if f.get("stages"):
        parts.append(_("stages {stages}").format(stages=", ".join(str(s) for s in f["stages"])))
    if f.get("phase"):
        parts.append(_("phase {phase}").format(phase=f["phase"]))
    return _("; ").join(parts) or _("the whole run")


def _number(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, (dict, list)):
        return "…"
    return md_text(v, 80)


def finding_dicts(findings: Sequence) -> list[dict]:
    """The typed findings (`rules.run_rules`) as summary.json writes them, in the current language, with the
    impact's basis in that language too (summary.json keeps it English)."""
    out = []
    for f in findings:
        d = f.to_dict()
        if d.get("impact") and "basis" in d["impact"]:
            d["impact"] = {**d["impact"], "basis": f.impact_basis}
        out.append(d)
    return out


def _saving(imp: dict, short: bool = False) -> str:
    """The saving of a finding: its own, or where it is already counted (`impact.included_in`)."""
    basis = md_text(imp.get("basis", ""), 300)
    ids = "`, `".join(md_text(i, 80) for i in imp.get("included_in") or [])
    extra = imp.get("additional_step_ms")
    if ids and not (isinstance(extra, (int, float)) and extra > 0):
        return _(INCLUDED_SHORT).format(ids=ids) if short else _(INCLUDED).format(ids=ids, basis=basis)
    if ids:
        return (_("~{ms}/step beyond `{ids}`").format(ms=fmt_ms(extra), ids=ids) if short else
                _(BEYOND).format(ms=fmt_ms(extra), ids=ids, own=fmt_ms(imp["step_ms"]), basis=basis))
    if short:
        return _("~{ms}/step, {pct}").format(ms=fmt_ms(imp["step_ms"]), pct=fmt_pct(imp["step_share"]))
    return _(SAVES).format(ms=fmt_ms(imp["step_ms"]), pct=fmt_pct(imp["step_share"]), basis=basis)


def findings_markdown(summary: dict, findings: Optional[Sequence] = None) -> str:
    """The Markdown of a summary's findings, its fixed words in the current language. `findings`: the typed
    findings, written in the current language (a second language's site tree); without them, the summary's own
    (in the summary's language)."""
    run = summary.get("run", {})
    fs = finding_dicts(findings) if findings is not None else summary.get("findings", [])
    counts = {s: sum(1 for f in fs if f.get("severity") == s) for s in ("critical", "warning", "info")}
    out = [_(HEADER).format(path=md_text(run.get("path", ""), 120)), "",
           _(VERDICT).format(**counts, ranks=len(run.get("ranks", [])), steps=run.get("steps", 0))]
    actionable = [f for f in fs if f.get("severity") in ("critical", "warning")]
    if not actionable:
        out.append(_(NONE))
    for f in actionable[:3]:
        imp = f.get("impact")
        out.append(f"- **{_(f['severity'])}** {md_text(f['title'], 300)}"
                   + (f" ({_saving(imp, short=True)})" if imp else ""))
    out.append("")
    for n, f in enumerate(fs, 1):
        out += ["", f"## {n}. [{_(f['severity'])}] {md_text(f['title'], 300)}", "",
                f"- id: `{f['id']}`", "- " + _("subject: {subject}").format(subject=_subject(f)),
                "- " + _("evidence: {page}").format(page=f"`{f.get('page', '')}`")]
        imp = f.get("impact")
        if imp:
            out.append("- " + _saving(imp))
        nums = [(k, v) for k, v in (f.get("evidence") or {}).items() if k != "related"
                and isinstance(v, (int, float, str)) and not isinstance(v, bool)][:MAX_NUMBERS]
        if nums:
            out.append("- " + _("numbers: {items}").format(
                items=", ".join(f"{md_text(k, 60)} = {_number(v)}" for k, v in nums)))
        if f.get("why"):
            out += ["", f["why"]]
        out += ["", f"**{_('What to try.')}**", "", f.get("advice", "")]
    return "\n".join(out).rstrip() + "\n"
