"""What the pages mark, taken from the findings: the site paints exactly what the performance helper names.

A rank is painted slow, a cell hot, a link slow or a rank "waits least" only when a `warning`/`critical` finding
names it, with the thresholds in force (`--set`, `--thresholds`). So a page never paints red what the verdict does
not say, and changing a threshold changes both. Ranks that wait for a culprit are only marked as waiting: every
peer of a culprit (the ranks of its pipeline stage, which the rules compare it with and which wait for it at each
collective), not only the one an information finding happens to name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

ACTION = ("critical", "warning")
# the phases in which a slow rank holds its peers back (they wait for it at the next collective); a rank slow in
# its communication or tail is more likely a victim
HOLDS_BACK = ("compute", "free", "step_interval")


@dataclass(frozen=True)
class Highlights:
    slow_ranks: frozenset[int] = frozenset()  # culprits: a slow_rank finding (not late arrival) names them
    hot: dict[int, frozenset[str]] = field(default_factory=dict)  # rank -> data columns where it stands out
    slow_links: frozenset[tuple[int, int]] = frozenset()  # (src, dst) named by a slow_link finding
    waits_least: frozenset[int] = frozenset()  # named by the late-arrival finding: the others wait for them
    waiting: frozenset[int] = frozenset()  # ranks whose long tail / communication is waiting (information)

    @classmethod
    def from_findings(cls, findings: list, stage_of: Optional[dict] = None,
                      ranks: Optional[list] = None) -> "Highlights":
        """`stage_of` (rank -> pipeline stage) and `ranks` (every rank of the run): with them, the peers of a
        culprit that holds the others back (a slow rank in its work phases, or the rank that arrives last) are
        marked waiting."""
        slow, waits_least, waiting, links = set(), set(), set(), set()
        holds_back: set[int] = set()
        hot: dict[int, set[str]] = {}
        for f in findings:
            acts = f.severity in ACTION
            if f.category == "slow_rank":
                if f.rule == "late-arrival":
                    if acts:
                        waits_least.update(f.ranks)
                        holds_back.update(int(r) for r in f.ranks)
                    continue
                if not acts:  # victims and single-step readings: information, shown as waiting
                    if f.phase in ("tail", "communication"):
                        waiting.update(f.ranks)
                    continue
                slow.update(f.ranks)
                if f.phase in HOLDS_BACK:
                    holds_back.update(int(r) for r in f.ranks)
                col = (f.evidence or {}).get("column")
                if col:
                    for r in f.ranks:
                        hot.setdefault(int(r), set()).add(col)
            elif f.category == "slow_link" and acts:
                for l in f.links:
                    s, _, d = str(l).partition("-")
                    if s.lstrip("-").isdigit() and d.lstrip("-").isdigit():
                        links.add((int(s), int(d)))
        if holds_back and ranks is not None:
            stage_of = stage_of or {}
            stages = {stage_of.get(r, 0) for r in holds_back}
            waiting.update(int(r) for r in ranks if stage_of.get(int(r), 0) in stages)
        return cls(slow_ranks=frozenset(int(r) for r in slow), hot={r: frozenset(c) for r, c in hot.items()},
                   slow_links=frozenset(links), waits_least=frozenset(int(r) for r in waits_least),
                   waiting=frozenset(int(r) for r in waiting - slow - waits_least))

    @property
    def flagged(self) -> frozenset[int]:
        """The ranks the findings name: slow, waiting least, either end of a slow link (their pages show in full)."""
        return self.slow_ranks | self.waits_least | frozenset(r for link in self.slow_links for r in link)

    def is_hot(self, rank: int, column: str) -> bool:
        return column in self.hot.get(int(rank), ())


def of(inp) -> Highlights:
    """The highlights of a report being planned (computed once per `PlanInput`)."""
    if "highlights" not in inp.shared:
        run = inp.analysis.run
        inp.shared["highlights"] = Highlights.from_findings(inp.findings, run.info.stage_of_rank, run.rank_ids)
    return inp.shared["highlights"]
