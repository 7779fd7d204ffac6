"""What a rule is, what a finding is, and what a rule's check gets (`Context`).

A rule is a module that defines one `Rule`: a stable id, a finding category from the closed vocabulary of
`docs/summary-json.md`, a markdown description for the rules page, its thresholds as data (`thresholds.th`: name ->
`Threshold` with default and meaning) and a `check(ctx)` function that returns `Finding`s. A finding's severity takes
the scale of the severity policy (`policy.SEVERITIES`), which sets it. Rules read the `Analysis` only;
they never read files and never write anything.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, is_dataclass
from typing import Any, Callable, Optional

from reportgen import fmt, urls
from reportgen.analysis import Analysis
from reportgen.i18n import N_, Msg, lazy, text
from reportgen.layouts import LAYOUTS
from reportgen.numbers import json_clean as clean
from reportgen.rules.policy import POLICY, SEVERITIES
from reportgen.rules.thresholds import Threshold, threshold_table

CATEGORIES = ("slow_rank", "slow_link", "communication_bound", "stage_imbalance", "pipeline_bubble",
              "data_pipeline", "host_bound", "memory_pressure", "operator_hotspot", "data_quality")
PHASES = ("step_interval", "compute", "communication", "free", "tail")


@dataclass
class Finding:
    id: str
    category: str
    severity: str
    title: Any  # text, or an i18n.Msg (msgid with named placeholders) rendered in the report's language
    advice: Any  # markdown (or an i18n.Msg of markdown)
    page: urls.Target  # the page (and anchor) holding the evidence; `urls` turns it into a link
    why: Any = ""  # one or two sentences: why it matters (markdown, or an i18n.Msg)
    ranks: list[int] = field(default_factory=list)
    links: list[str] = field(default_factory=list)  # "src-dst", global ranks
    transport: Optional[str] = None
    stages: list[int] = field(default_factory=list)
    phase: Optional[str] = None
    files: list[str] = field(default_factory=list)
    evidence: dict[str, Any] = field(default_factory=dict)
    table: Optional[dict] = None  # {"columns": [...], "rows": [[...]], "links": [href per row or None]}
    rule: str = ""  # the id of the rule that made it (set by the registry)
    related: list["Finding"] = field(default_factory=list)  # other readings of the same cause, folded in
    aliases: list[str] = field(default_factory=list)  # ids this finding had in earlier versions
    # What fixing it would save: {"step_ms", "step_share", "basis"} (`reportgen.analysis.impact`), or None
    impact: Optional[dict] = None
    # Which steps the subject stands out in: {"ranks", "steps", "out" (rank x step 0/1), "others" (per step, how
    # many other ranks stand out)} for the rank x step strip; `pattern` in the evidence names it.
    strip: Optional[dict] = None
    # Findings whose saving already counts this one's (the same time of the same ranks, `rules._shared_savings`)
    included_in: list["Finding"] = field(default_factory=list)
    # The fault floor (`rules.policy.fault`): a component far below its peers, at least a warning whatever it saves
    # today; the policy copies it into `impact.fault` (summary.json)
    fault: Optional[dict] = None

    def __post_init__(self) -> None:
        if self.category not in CATEGORIES:
            raise ValueError(f"unknown finding category {self.category!r}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r}")
        if self.phase is not None and self.phase not in PHASES:
            raise ValueError(f"unknown phase {self.phase!r}")

    def to_dict(self) -> dict:
        """The summary.json shape (contract keys first; `why`, `table`, `rule` and `aliases` are extra keys).
        Folded readings of the same cause are listed in `evidence.related`."""
        evidence = clean(self.evidence)
        if self.related:
            evidence["related"] = [{"id": r.id, "title": text(r.title), "title_en": text(r.title, "en"),
                                    "evidence": clean(r.evidence)} for r in self.related]
        return {
            "id": self.id, "category": self.category, "severity": self.severity, "title": text(self.title),
            "title_en": text(self.title, "en"),
            "ranks": [int(r) for r in self.ranks], "links": list(self.links), "transport": self.transport,
            "stages": [int(s) for s in self.stages], "phase": self.phase, "files": list(self.files),
            "evidence": evidence, "advice": text(self.advice), "page": str(self.page), "why": text(self.why),
            **({"table": clean(self.table)} if self.table else {}), "rule": self.rule,
            **({"aliases": list(self.aliases)} if self.aliases else {}),
            # impact.basis is a machine field: English in summary.json (the pages show it translated, `impact_basis`)
            **({"impact": clean({**self.impact, "basis": text(self.impact.get("basis"), "en")}
                                if "basis" in self.impact else self.impact)} if self.impact else {}),
            **({"strip": clean(self.strip)} if self.strip else {}),
        }

    @property
    def impact_basis(self) -> str:
        """The impact's basis in the current language (summary.json keeps the English one)."""
        return text((self.impact or {}).get("basis"))

    @property
    def saving_ms(self) -> float:
        """The estimated saving per step (0 when unknown): findings are ordered by it within a severity. A saving
        included in another finding's counts only what it adds beyond it (`impact.additional_step_ms`)."""
        imp = self.impact or {}
        v = imp.get("additional_step_ms", imp.get("step_ms"))
        return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else 0.0


class Context:
    """What `check` gets: the analysis (`a`), the thresholds in force for this rule (`t`, the rule's frozen
    `Thresholds` dataclass with the overrides applied) and the severity policy in force (`p`, `rules.policy.Policy`:
    its fault floors decide which findings are at least a warning)."""

    def __init__(self, analysis: Analysis, thresholds: Any, policy: Any = None) -> None:
        if not is_dataclass(thresholds) or isinstance(thresholds, type):
            raise TypeError("Context needs an instance of the rule's Thresholds dataclass")
        self.a = analysis
        self.t = thresholds
        self.p = POLICY if policy is None else policy


@dataclass(frozen=True)
class Rule:
    id: str
    category: str
    title: str  # short name on the rules page
    description: str  # markdown: what is checked, how severity is decided, which guide step it follows
    params: type  # the rule's frozen `Thresholds` dataclass (fields made with `th`)
    check: Callable[[Context], list[Finding]]
    source: str = ""  # where the logic and defaults come from
    # A reference tool's verdict reproduced (MindInsight, msprof-analyze): shown beside a finding of ours about
    # the same subject rather than as a finding of its own.
    reference: bool = False

    def __post_init__(self) -> None:
        if self.category not in CATEGORIES:
            raise ValueError(f"rule {self.id}: unknown category {self.category!r}")
        if not (is_dataclass(self.params) and isinstance(self.params, type)
                and self.params.__dataclass_params__.frozen):
            raise TypeError(f"rule {self.id}: params must be a frozen dataclass of thresholds")

    @property
    def thresholds(self) -> dict[str, Threshold]:
        return threshold_table(self.params)

    def context(self, analysis: Analysis, values: Optional[dict[str, float]] = None, policy: Any = None) -> Context:
        """The context `check` runs in: the defaults with `values` (name -> number) applied, and the severity
        policy in force (default `rules.policy.POLICY`)."""
        return Context(analysis, self.params(**(values or {})), policy)


_MD_SPECIAL = re.compile(r"([!-/:-@\[-`{-~])")  # every ASCII punctuation character


def md_literal(value: Any, limit: int = 200) -> str:
    """Text from a profiler file, made inert before it joins advice/why markdown.

    Every character that Markdown or HTML gives a meaning to is backslash-escaped (CommonMark treats a backslash
    before any ASCII punctuation as that literal character), line breaks become spaces (no new blocks: headings,
    lists, link reference definitions) and the text is cut to `limit` characters. The renderer escapes `<`/`&`
    again, so the result renders as exactly the original text.
    """
    s = "" if value is None else str(value)
    s = re.sub(r"[\x00-\x1f\x7f\u2028\u2029]+", " ", s)
    if len(s) > limit:
        s = s[:limit - 1] + "…"
    return _MD_SPECIAL.sub(r"\\\1", s)


PATTERNS = (N_("chronic"), N_("intermittent"), N_("one-off"), N_("rotating"))  # evidence values, shown through |t
STRIP_ROWS = 24


def step_pattern(cells, subjects: list[int]) -> tuple[str, dict]:
    """How the subject stands out over the steps, from `analysis.stats.standout_cells` rows (rank, step, out):
    chronic (the same ranks in every step), intermittent (the same rank, in some steps), one-off (one step only: a
    GC pause, a checkpoint) or rotating (a different rank from step to step: points at the job, not a device).
    Returns the pattern and the strip (`Finding.strip`)."""
    out = cells[cells["out"]]
    sub = out[out["rank"].isin(set(subjects))]
    steps_hit = sorted(sub["step"].unique().tolist())
    n_steps = int(cells["step"].nunique())
    if len(steps_hit) <= 1 and n_steps > 1:
        pattern = "one-off"
    elif sub["rank"].nunique() > 1 and sub.groupby("rank")["step"].nunique().max() < max(2, 0.5 * n_steps):
        pattern = "rotating"
    elif len(steps_hit) >= n_steps:
        pattern = "chronic"
    else:
        pattern = "intermittent"
    return pattern, strip(cells, subjects)


def strip(cells, subjects: list[int]) -> dict:
    steps = sorted(cells["step"].unique().tolist())
    rows = [int(r) for r in subjects[:STRIP_ROWS]]
    flag = cells.pivot_table(index="rank", columns="step", values="out", aggfunc="max").reindex(columns=steps)
    out = [[int(bool(flag.loc[r, s])) if r in flag.index and s == s and not _isnan(flag.loc[r, s]) else 0
            for s in steps] for r in rows]
    others = cells[~cells["rank"].isin(set(rows)) & cells["out"]].groupby("step")["rank"].nunique()
    return {"ranks": rows, "steps": [int(s) for s in steps], "out": out,
            "others": [int(others.get(s, 0)) for s in steps],
            "n_others": int(cells.loc[~cells["rank"].isin(set(rows)), "rank"].nunique())}


def _isnan(v) -> bool:
    try:
        return math.isnan(float(v))
    except (TypeError, ValueError):
        return True


# Number and rank-list texts come from `reportgen.fmt` (one formatter for the report); the rules' names for them:
fmt_ms = fmt.ms
fmt_pct = fmt.share_text  # a message: each language formats the percentage its own way
fmt_ranks = fmt.ranks


def ranks_msg(ranks: list[int], limit: int = 8, capital: bool = False) -> Msg:
    """`fmt_ranks` as a lazy message (the finding's language is chosen when it is rendered)."""
    ranks = [int(r) for r in ranks]
    if len(ranks) == 1:
        return lazy(N_("Rank {rank}") if capital else N_("rank {rank}"), rank=ranks[0])
    listed = ", ".join(str(r) for r in ranks[:limit])
    if len(ranks) > limit:
        return lazy(N_("Ranks {ranks} and {more} more") if capital else N_("ranks {ranks} and {more} more"), ranks=listed,
                    more=len(ranks) - limit)
    return lazy(N_("Ranks {ranks}") if capital else N_("ranks {ranks}"), ranks=listed)


def gpu_run(a: Analysis) -> bool:
    """A PyTorch profiler (Kineto) run: CUDA / ROCm GPUs, or the CPU with gloo. Advice for it names PyTorch's and the
    GPU's levers, never Ascend's (AI Core, msprof-analyze, MindSpore settings)."""
    return a.run.info.layout in LAYOUTS and LAYOUTS[a.run.info.layout].gpu
