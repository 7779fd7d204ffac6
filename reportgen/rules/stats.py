"""The rules' statistics: the robust "stands out" lives in `reportgen.analysis.stats` (one definition for the
rules and, through the findings, for every highlight on the pages); operator tables gathered for the operator rules."""

from __future__ import annotations

import pandas as pd

from reportgen.analysis.stats import (
    MAD_SCALE, Standout, peer_median, robust_outliers, standout_cells, standouts, step_reference,
)

__all__ = ["MAD_SCALE", "Standout", "peer_median", "robust_outliers", "standout_cells", "standouts", "step_reference", "type_totals"]


def type_totals(analysis, sides: tuple[str, ...]) -> pd.DataFrame:
    """Operator time per (rank, side, op_type) in ms, over the ranks with operator statistics."""
    rows = analysis.resources.operator_rows
    rows = rows[rows["side"].isin(sides)]
    return rows.groupby(["rank", "side", "op_type"], as_index=False)["total_ms"].sum()
