"""What the pages mark, taken from the findings: the site paints exactly what the performance helper names.

A rank is painted slow, a cell hot, a link slow or a rank "waits least" only when a `warning`/`critical` finding
names it, with the thresholds in force (`--set`, `--thresholds`). So a page never paints red what the verdict does
not say, and changing a threshold changes both. Ranks that wait for a culprit are only marked as waiting.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ACTION = ("critical", "warning")


@dataclass(frozen=True)
class Highlights:
    slow_ranks: frozenset[int] = frozenset()  # culprits: a slow_rank finding (not late arrival) names them
    hot: dict[int, frozenset[str]] = field(default_factory=dict)  # rank -> data columns where it stands out
    slow_links: frozenset[tuple[int, int]] = frozenset()  # (src, dst) named by a slow_link finding
    waits_least: frozenset[int] = frozenset()  # named by the late-arrival finding: the others wait for them
    waiting: frozenset[int] = frozenset()  # ranks whose long tail / communication is waiting (information)

    @classmethod
    def from_findings(cls, findings: list) -> "Highlights":
        slow, waits_least, waiting, links = set(), set(), set(), set()
        hot: dict[int, set[str]] = {}
        for f in findings:
            acts = f.severity in ACTION
            if f.category == "slow_rank":
                if f.rule == "late-arrival":
                    if acts:
                        waits_least.update(f.ranks)
                    continue
                if not acts:  # victims and single-step readings: information, shown as waiting
                    if f.phase in ("tail", "communication"):
                        waiting.update(f.ranks)
                    continue
                slow.update(f.ranks)
                col = (f.evidence or {}).get("column")
                if col:
                    for r in f.ranks:
                        hot.setdefault(int(r), set()).add(col)
            elif f.category == "slow_link" and acts:
                for l in f.links:
                    s, _, d = str(l).partition("-")
                    if s.lstrip("-").isdigit() and d.lstrip("-").isdigit():
                        links.add((int(s), int(d)))
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
        inp.shared["highlights"] = Highlights.from_findings(inp.findings)
    return inp.shared["highlights"]
