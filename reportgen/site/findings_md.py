"""`findings.md` beside `summary.json`: the verdict in a few lines, then every finding by severity and estimated
saving, with its id, subject, numbers, evidence pointer and advice, in plain Markdown (a CI comment, a chat
message or an agent can use it without parsing HTML). Made from the summary's findings only."""

from __future__ import annotations

import re

from reportgen.fmt import ms as fmt_ms, share as fmt_pct

HEADER = "# msreport findings: {path}"
VERDICT = "{critical} critical, {warning} warning, {info} information finding(s) over {ranks} rank(s) and {steps} step(s)."
SAVES = "Fixing this saves ~{ms}/step ({pct}): {basis}."
NONE = "No warning or critical finding: nothing in this run calls for action by the helper's rules."
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
        parts.append("ranks " + ", ".join(rs) + (f" (+{len(f['ranks']) - 16})" if len(f["ranks"]) > 16 else ""))
    if f.get("links"):
        parts.append("links " + ", ".join(f["links"][:8]) + (f" ({f['transport']})" if f.get("transport") else ""))
    if f.get("stages"):
        parts.append("stages " + ", ".join(str(s) for s in f["stages"]))
    if f.get("phase"):
        parts.append(f"phase {f['phase']}")
    return "; ".join(parts) or "the whole run"


def _number(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, (dict, list)):
        return "…"
    return md_text(v, 80)


def findings_markdown(summary: dict) -> str:
    run = summary.get("run", {})
    fs = summary.get("findings", [])
    counts = {s: sum(1 for f in fs if f.get("severity") == s) for s in ("critical", "warning", "info")}
    out = [HEADER.format(path=md_text(run.get("path", ""), 120)), "",
           VERDICT.format(**counts, ranks=len(run.get("ranks", [])), steps=run.get("steps", 0))]
    actionable = [f for f in fs if f.get("severity") in ("critical", "warning")]
    if not actionable:
        out.append(NONE)
    for f in actionable[:3]:
        imp = f.get("impact")
        out.append(f"- **{f['severity']}** {md_text(f['title'], 300)}"
                   + (f" (~{fmt_ms(imp['step_ms'])}/step, {fmt_pct(imp['step_share'])})" if imp else ""))
    out.append("")
    for n, f in enumerate(fs, 1):
        out += ["", f"## {n}. [{f['severity']}] {md_text(f['title'], 300)}", "",
                f"- id: `{f['id']}`", f"- subject: {_subject(f)}",
                f"- evidence: `{f.get('page', '')}`"]
        imp = f.get("impact")
        if imp:
            out.append("- " + SAVES.format(ms=fmt_ms(imp["step_ms"]), pct=fmt_pct(imp["step_share"]),
                                          basis=md_text(imp.get("basis", ""), 300)))
        nums = [(k, v) for k, v in (f.get("evidence") or {}).items() if k != "related"
                and isinstance(v, (int, float, str)) and not isinstance(v, bool)][:MAX_NUMBERS]
        if nums:
            out.append("- numbers: " + ", ".join(f"{md_text(k, 60)} = {_number(v)}" for k, v in nums))
        if f.get("why"):
            out += ["", f["why"]]
        out += ["", "**What to try.**", "", f.get("advice", "")]
    return "\n".join(out).rstrip() + "\n"
