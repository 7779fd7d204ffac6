"""Operator tables gathered for the operator rules. (The robust "stands out" the rules use lives in
`reportgen.analysis.stats`: one definition for the rules and, through the findings, for every highlight on the
pages.)"""

from __future__ import annotations

import pandas as pd


def type_totals(analysis, sides: tuple[str, ...]) -> pd.DataFrame:
    """Operator time per (rank, side, op_type) in ms, over the ranks with operator statistics."""
    rows = analysis.resources.operator_rows
    rows = rows[rows["side"].isin(sides)]
    return rows.groupby(["rank", "side", "op_type"], as_index=False)["total_ms"].sum()
