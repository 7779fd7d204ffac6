"""The layouts the report knows, in one table: `LAYOUTS[name]` is the object that loads a run of that layout."""

from __future__ import annotations

from reportgen.layouts.ascend import Ascend
from reportgen.layouts.base import Layout
from reportgen.layouts.cluster_analysis import ClusterAnalysis
from reportgen.layouts.kineto import Kineto
from reportgen.layouts.mindinsight import MindInsight
from reportgen.layouts.msprof import Msprof

LAYOUTS: dict[str, Layout] = {lay.name: lay for lay in (MindInsight(), Ascend(), Msprof(), Kineto(),
                                                        ClusterAnalysis())}


def get(name: str) -> Layout:
    """The layout called `name` (KeyError for a name no layout has)."""
    return LAYOUTS[name]
