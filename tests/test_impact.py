"""Impact estimates against the truth: the same synthetic run (same seed, so the same noise) generated with and
without the injected problem; the finding's estimated saving must be within 20 % of the measured difference of
mean step times (the median over ranks of each step's total, averaged over steps)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen.analysis import analyze
from reportgen.analysis.impact import _wide, replace_excess
from reportgen.discover import discover
from reportgen.loaders import load_run
from reportgen.rules import run_rules
from reportgen.synth import generate_run


def _analysis(path: Path):
    return analyze(load_run(discover(path)[0], jobs=1))


def _mean_step(a) -> float:
    return float(_wide(a.steps.per_step, "total").median(axis=0).mean())


CASES = [
    ("slow rank, compute", "ascend", ["slow-rank:5:compute:1.3"], "slow-rank.compute", dict(ranks=16)),
    ("slow rank, free", "ascend", ["slow-rank:5:host:1.2"], "slow-rank.free", dict(ranks=16)),
    ("slow rank, step interval", "mindinsight", ["slow-rank:5:data:1.2"], "slow-rank.step-interval",
     dict(ranks=16)),
    ("unbalanced stage", "ascend", ["unbalanced-stage:1:1.4"], "stage-imbalance.compute", dict(ranks=32, stages=4)),
    ("slow rank in a pipeline", "ascend", ["slow-rank:9:compute:1.3"], "slow-rank.compute",
     dict(ranks=32, stages=4)),
]


@pytest.mark.parametrize("name,layout,inject,fid,kw", CASES, ids=[c[0] for c in CASES])
def test_impact_within_20_percent_of_measured(tmp_path, name, layout, inject, fid, kw):
    ok = _analysis(generate_run(tmp_path / "ok", layout=layout, steps=10, seed=3, **kw))
    bad = _analysis(generate_run(tmp_path / "bad", layout=layout, steps=10, seed=3, inject=inject, **kw))
    measured = _mean_step(bad) - _mean_step(ok)
    assert measured > 0
    f = next(f for f in run_rules(bad)[0] if f.id == fid)
    assert f.impact and f.impact["basis"]
    assert abs(f.impact["step_ms"] - measured) <= 0.2 * measured, (f.impact, measured)
    assert f.impact["step_share"] == pytest.approx(f.impact["step_ms"] / _mean_step(bad), rel=1e-3)
    assert f.to_dict()["impact"]["step_ms"] == f.impact["step_ms"]


class _Steps:
    def __init__(self, rows, kind="modern"):
        import pandas as pd

        self.kind = kind
        self.per_step = pd.DataFrame(rows, columns=["rank", "step", "computing", "free", "total"])


def test_replace_excess_hand_computed():
    # 3 ranks, 2 steps. Rank 2 computes 130 / 150 against 100 / 100: arrivals (computing + free) are
    # [101, 101, 131] and [102, 101, 152]; with rank 2 at the others' median (100) the latest arrivals are 101 and
    # 102, so the steps save 30 and 50 ms: 40 ms per step. Step totals' medians 140 and 140 -> share 40 / 140.
    rows = [(0, 1, 100, 1, 140), (1, 1, 100, 1, 140), (2, 1, 130, 1, 140),
            (0, 2, 100, 2, 140), (1, 2, 100, 1, 140), (2, 2, 150, 2, 160)]
    imp = replace_excess(_Steps(rows), "computing", [2], basis="x")
    assert imp.step_ms == pytest.approx(40.0) and imp.step_share == pytest.approx(40 / 140)
    # A rank that is slow but still arrives before another one saves nothing: the other sets the pace.
    rows = [(0, 1, 100, 1, 140), (1, 1, 100, 60, 140), (2, 1, 130, 1, 140)]
    assert replace_excess(_Steps(rows), "computing", [2], basis="x").step_ms == pytest.approx(0.0)
    # Unknown column or step-trace kind: no estimate rather than a wrong one.
    assert replace_excess(_Steps(rows), "tail", [2]) is None
    assert replace_excess(_Steps(rows, kind=None), "computing", [2]) is None
