"""Data quality: missing, truncated or malformed inputs, with the files named.

Every problem also goes to the data-quality table and `summary.json.data_quality`; this rule turns the ones that
change the numbers into findings: errors (a file could not be read, or only partly) and warnings (data missing or
inconsistent). Informational notes stay in the table.
"""

from __future__ import annotations

from dataclasses import dataclass

from reportgen import urls
from reportgen.i18n import N_, Problem, lazy
from reportgen.rules.base import Context, Finding, Rule, th

@dataclass(frozen=True)
class Thresholds:
    max_findings: float = th(20.0, N_('findings listed one per file; beyond this the rest are grouped into one'))


ADVICE = N_("""\
The numbers from the files named here are partial or missing, so verdicts about these ranks may be incomplete.
Re-collect the profile for them if possible (check the disk was not full and the job was not killed while the
profiler wrote its output), or copy the missing files from the hosts.""")


def _about_ranks(issues) -> list[Finding]:
    """A problem that names ranks (a rank missing altogether): a warning finding with those ranks."""
    return [Finding(
        id="data-quality.ranks", category="data_quality", severity="warning",
        title=Problem(i.problem if len(i.problem) < 300 else i.problem[:297] + "…"), advice=lazy(ADVICE),
        why=lazy("The verdict about the rest of the run is weaker: a rank is missing from every comparison."),
        page=urls.DATA_QUALITY, ranks=sorted(i.ranks), files=[i.file] if i.file else [],
        evidence={"problems": [i.problem]}) for i in issues]


def check(ctx: Context) -> list[Finding]:
    by_file: dict[str, list] = {}
    ranked = [i for i in ctx.a.issues if getattr(i, "ranks", ()) and i.severity in ("error", "warning")]
    for i in ctx.a.issues:
        if i.severity in ("error", "warning") and i not in ranked:
            by_file.setdefault(i.file, []).append(i)
    if not by_file:
        return _about_ranks(ranked)
    # the rank each file belongs to, and whether a file was cut off: both make a file's problem a warning
    rank_of = {i.file: int(r) for r in ctx.a.run.rank_ids for i in ctx.a.run.ranks[r].issues if i.file}

    def serious(issues) -> bool:
        return any(i.severity == "error" or "truncat" in i.problem.lower() or "cut off" in i.problem.lower()
                   for i in issues)

    order = sorted(by_file, key=lambda f: (0 if serious(by_file[f]) else 1, f))
    limit = int(ctx.t.max_findings)
    out = []
    for f in order[:limit]:
        issues = by_file[f]
        err = serious(issues)
        first = issues[0].problem
        first = first if len(first) < 280 else first[:277] + "…"
        title = lazy("{file}: {problem}", file=f, problem=Problem(first)) if f else Problem(first)
        if len(issues) > 1:
            title = (lazy("{title} (and {n} more problems)", title=title, n=len(issues) - 1) if len(issues) > 2
                     else lazy("{title} (and 1 more problem)", title=title))
        out.append(Finding(
            id="data-quality.file" if f else "data-quality.run", category="data_quality",
            severity="warning" if err else "info", title=title,
            advice=lazy(ADVICE), why=lazy("Verdicts can only be as complete as the data they are computed from."),
            page=urls.DATA_QUALITY, files=[f] if f else [], ranks=[rank_of[f]] if f in rank_of else [],
            evidence={"problems": [i.problem for i in issues[:10]], "severities": sorted({i.severity for i in issues})}))
    rest = order[limit:]
    if rest:
        err = any(serious(by_file[f]) for f in rest)
        out.append(Finding(
            id="data-quality.more", category="data_quality", severity="warning" if err else "info",
            title=lazy("{n} more files have problems (listed in the data-quality table)", n=len(rest)),
            advice=lazy(ADVICE), page=urls.DATA_QUALITY, files=[f for f in rest if f],
            evidence={"files": len(rest)}))
    return _about_ranks(ranked) + out


RULE = Rule(
    id="data-quality", category="data_quality", title=N_("Missing or malformed input"),
    description=N_("""\
One finding per input file with a problem of severity error or warning (at most `max_findings`, the rest grouped).
Warning, naming the file and its rank, when a file could not be read or was cut off (truncated: the verdict about
that rank is weaker); information when data is missing or inconsistent. Notes of severity info stay in the data-quality table only."""),
    params=Thresholds, check=check, source=N_("developers' guide: bad input never silently drops data"))
