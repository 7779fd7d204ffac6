"""Data quality by consequence: a problem that changes or removes a rank's numbers is a warning naming the file and
the rank; a cosmetic one is information.

Every problem also goes to the data-quality table and `summary.json.data_quality`; this rule turns the ones that
change the numbers into findings. What a problem does is data: `DataIssue.consequence` ("numbers" or "cosmetic",
set by the loader that found it); when a loader does not say, an error (a file unreadable) or a file cut off or a row
skipped changes the numbers, anything else is information. A per-rank file that the rank's peers have and it lacks
(its other files present) is found from the loaded run itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reportgen import dataquality, urls
from reportgen.i18n import N_, Joined, Problem, lazy
from reportgen.rules.base import Context, Finding, Rule, ranks_msg
from reportgen.rules.thresholds import th

@dataclass(frozen=True)
class Thresholds:
    max_findings: float = th(20.0, N_('findings listed one per file; beyond this the rest are grouped into one'))
    peers_share: float = th(0.75, N_('a per-rank file is missing on a rank when at least this share of the other ranks '
                                     'have it (and the rank has other files)'))


ADVICE = N_("""\
The numbers from the files named here are partial or missing, so verdicts about these ranks may be incomplete.
Re-collect the profile for them if possible (check the disk was not full and the job was not killed while the
profiler wrote its output), or copy the missing files from the hosts.""")

# A loader's words for a problem that changes a rank's numbers, when it does not set `DataIssue.consequence`.
CHANGES_NUMBERS = re.compile(r"truncat|cut off|cut-off|skipped|dropped|unreadable|could not be read", re.I)

# The per-rank data a rank's peers may have and it may lack: RankData attribute -> what it is called.
PER_RANK = {"step_trace": N_("step trace"), "communication": N_("communication"), "operators": N_("operator statistics"),
            "memory": N_("memory"), "overlap": N_("overlap analysis"), "dataprep": N_("data preparation")}


CONSEQUENCES = (N_("numbers"), N_("cosmetic"))  # the values of `evidence.consequence` (shown translated)


def consequence(issue) -> str:
    """"numbers" or "cosmetic": the loader's own word (`DataIssue.consequence`), else an error or a file cut off /
    a row skipped changes the numbers."""
    said = getattr(issue, "consequence", "")
    if said in ("numbers", "cosmetic"):
        return said
    if issue.severity == "error" or CHANGES_NUMBERS.search(issue.problem or ""):
        return "numbers"
    return "cosmetic"


def missing_per_rank(run, share: float) -> dict[int, list[str]]:
    """Rank -> the per-rank data (PER_RANK keys) its peers have and it lacks, for ranks that have other data."""
    ranks = [r for r in run.rank_ids if r in run.ranks]
    if len(ranks) < 2:
        return {}
    have = {k: {r for r in ranks if run.ranks[r].holds(k)} for k in PER_RANK}  # (a sealed field left sealed)
    out: dict[int, list[str]] = {}
    for r in ranks:
        own = [k for k in PER_RANK if r in have[k]]
        if not own:
            continue  # nothing at all: a missing rank, the loaders' issue says so
        for k in PER_RANK:
            if r not in have[k] and have[k] and len(have[k]) >= share * (len(ranks) - 1):
                out.setdefault(r, []).append(k)
    return out


def _about_ranks(issues) -> list[Finding]:
    """A problem that names ranks (a rank missing altogether): a warning finding with those ranks."""
    return [Finding(
        id="data-quality.ranks", category="data_quality", severity="warning",
        title=dataquality.message(i, 300), advice=lazy(ADVICE),
        why=lazy("The verdict about the rest of the run is weaker: a rank is missing from every comparison."),
        page=urls.DATA_QUALITY, ranks=sorted(i.ranks), files=[i.file] if i.file else [],
        evidence={"problems": [i.problem]}) for i in issues]


def _missing(ctx: Context) -> tuple[list[Finding], set[str]]:
    """One warning per rank that lacks per-rank data its peers have; and the rank folders they cover (the loaders'
    notes about those folders are folded into the finding)."""
    run = ctx.a.run
    out, covered = [], set()
    for r, kinds in sorted(missing_per_rank(run, ctx.t.peers_share).items()):
        d = run.ranks[r].info.source_dir
        have = {k: sum(1 for x in run.rank_ids if x in run.ranks and getattr(run.ranks[x], k, None) is not None)
                for k in kinds}
        notes = [i.problem for i in run.ranks[r].issues if i.file == d]
        covered.add(d)
        out.append(Finding(
            id="data-quality.missing", category="data_quality", severity="warning",
            title=(lambda t: lazy("{title}: {problem}", title=t, problem=Problem(notes[0][:280])) if notes else t)(
                lazy("{rank} lacks the {kinds} files that {n} of the other {of} ranks have ({dir})",
                     rank=ranks_msg([r], capital=True), kinds=Joined([lazy(PER_RANK[k]) for k in kinds], ", "),
                     n=have[kinds[0]], of=len(run.rank_ids) - 1, dir=Problem(d))),
            advice=lazy(ADVICE),
            why=lazy("This rank's numbers are missing from every comparison that uses these files: a slow or "
                     "waiting rank among them cannot be named."),
            page=urls.DATA_QUALITY, ranks=[r], files=[d] if d else [],
            evidence={"rank": r, "missing": kinds, "ranks_with_it": have, "problems": notes[:10]}))
    return out, covered


def check(ctx: Context) -> list[Finding]:
    missing, covered = _missing(ctx)
    by_file: dict[str, list] = {}
    ranked = [i for i in ctx.a.issues if getattr(i, "ranks", ()) and i.severity in ("error", "warning")]
    for i in ctx.a.issues:
        if i.severity in ("error", "warning") and i not in ranked and not (i.file and i.file in covered):
            by_file.setdefault(i.file, []).append(i)
    if not by_file:
        return missing + _about_ranks(ranked)
    # the rank each file belongs to
    rank_of = {i.file: int(r) for r in ctx.a.run.rank_ids for i in ctx.a.run.ranks[r].issues if i.file}

    def serious(issues) -> bool:
        return any(consequence(i) == "numbers" for i in issues)

    order = sorted(by_file, key=lambda f: (0 if serious(by_file[f]) else 1, f))
    limit = int(ctx.t.max_findings)
    out = []
    for f in order[:limit]:
        issues = sorted(by_file[f], key=lambda i: consequence(i) != "numbers")
        err = serious(issues)
        first = dataquality.message(issues[0], 280)
        rank = rank_of.get(f)
        title = lazy("{file}: {problem}", file=f, problem=first) if f else first
        if rank is not None and err:
            title = lazy("{rank}: {title}", rank=ranks_msg([rank], capital=True), title=title)
        if len(issues) > 1:
            title = (lazy("{title} (and {n} more problems)", title=title, n=len(issues) - 1) if len(issues) > 2
                     else lazy("{title} (and 1 more problem)", title=title))
        out.append(Finding(
            id="data-quality.file" if f else "data-quality.run", category="data_quality",
            severity="warning" if err else "info", title=title,
            advice=lazy(ADVICE), why=(lazy("This changes the numbers of the rank the file belongs to: verdicts about "
                                           "it are computed from partial data.") if err else
                                      lazy("Verdicts can only be as complete as the data they are computed from.")),
            page=urls.DATA_QUALITY, files=[f] if f else [], ranks=[rank] if rank is not None else [],
            evidence={"problems": [i.problem for i in issues[:10]], "severities": sorted({i.severity for i in issues}),
                      "consequence": "numbers" if err else "cosmetic"}))
    rest = order[limit:]
    if rest:
        err = any(serious(by_file[f]) for f in rest)
        out.append(Finding(
            id="data-quality.more", category="data_quality", severity="warning" if err else "info",
            title=lazy("{n} more files have problems (listed in the data-quality table)", n=len(rest)),
            advice=lazy(ADVICE), page=urls.DATA_QUALITY, files=[f for f in rest if f],
            evidence={"files": len(rest)}))
    return missing + _about_ranks(ranked) + out


RULE = Rule(
    id="data-quality", category="data_quality", title=N_("Missing or malformed input"),
    description=N_("""\
Data quality is judged by its consequence. A warning, naming the file and its rank, when a problem changes or
removes a rank's numbers: a file that could not be read or was cut off, a damaged row that was skipped (the loader
says so in the problem's `consequence`, or by its severity and words), or a per-rank file that at least
`peers_share` of the other ranks have and this rank lacks while its other files are present. Information when the
problem is cosmetic (nothing shown changes). One finding per file (at most `max_findings`, the rest grouped); notes
of severity info stay in the data-quality table only."""),
    params=Thresholds, check=check, source=N_("developers' guide: bad input never silently drops data"))
