"""The map side of the analysis (issue 33): the figures that are a pure function of ONE rank, computed in the
worker that loads the rank (`layouts.run.load_rank`, right after its loader), carried in `RankData.figures` and so
cached in the rank's cache entry. The main process then only combines small per-rank results (a rebuild reads
them from the cache) instead of concatenating a million rows of every rank and grouping them again.

Each figure has one home, the analysis that reads it (`expert.rank_alltoall`, ...); `rank_figures` calls them
all. An analysis reads `data.figures` and computes the figure from the rank's data with the same function where
there are none (a rank built another way: tests, the cluster_analysis layout, a layout whose run-level pass
changes the ranks' data after loading: `layouts.run.load_run` drops them there), so a number cannot depend on
where it was computed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from reportgen.analysis import expert
from reportgen.analysis.arrival import RankInputs, rank_arrival
from reportgen.analysis.comm_rank import CommFigures, comm_figures, op_codes

if TYPE_CHECKING:
    from reportgen.model import RankData


@dataclass
class RankFigures:
    """One rank's share of the run-wide analyses."""

    # expert balance (`analysis.expert`): per communication group, the rank's all-to-all (ms per step, MB per
    # step: NaN where no size is recorded); its expert computation per step (None: no grouped-GEMM operator) and
    # the first names of those operators
    alltoall: dict[str, tuple[float, float]] = field(default_factory=dict)
    expert_ms: Optional[float] = None
    expert_names: list[str] = field(default_factory=list)
    # communication (`analysis.comm_rank`): the rank's operators per step, per group, its groups
    comm: Optional[CommFigures] = None
    # arrivals (`analysis.arrival`): the rank's collective instances as integers (None: it records none)
    arrival: Optional[RankInputs] = None


def rank_figures(data: "RankData") -> RankFigures:
    """Every per-rank figure of `data` (a pure function of the rank's loaded data)."""
    names: list[str] = []
    c = data.communication
    # the operators' key columns factorised once, for the analyses that group or match them
    k = op_codes(c.ops) if c is not None and c.ops is not None and len(c.ops) else None
    return RankFigures(alltoall=expert.rank_alltoall(data, k), expert_ms=expert.expert_ms(data, names),
                       expert_names=names, comm=comm_figures(c, k) if c is not None else None,
                       arrival=rank_arrival(data))
