"""Discovery: every layout, rank ids, duplicates, several runs, nothing recognisable."""

from __future__ import annotations

import shutil

import pytest

from reportgen.discover import discover
from reportgen.errors import NoProfilingData
from reportgen.synth import generate_run
from tests.conftest import sample


@pytest.mark.parametrize("rel,layout,ranks", [
    ("mindinsight/cluster_pipeline_parallel_4rank", "mindinsight", [0, 1, 2, 3]),
    ("mindinsight/msprof_raw_2rank_10iter", "msprof", [0, 1]),
    ("mindinsight/parallel_strategy_2rank", "mindinsight", [0, 1]),
    ("ascend/msinsight_st_qwen3_4rank_tp1pp2dp2_level2_text", "ascend", [0, 1, 2, 3]),
    ("ascend/msinsight_server_2rank_level1_text_older", "ascend", [0, 1]),
    ("ascend/msinsight_pytorch_2rank_level1_db", "ascend", [0, 1]),
    ("ascend/msinsight_cluster_outputs_16rank_and_metadata", "cluster_analysis", list(range(16))),
    ("real/mindspore_cpu_dist4_new_graph_skew", "ascend", [0, 1, 2, 3]),
    ("real/torch_gloo_4rank", "kineto", [0, 1, 2, 3]),
])
def test_layouts(rel, layout, ranks):
    (run,) = discover(sample(rel))
    assert run.layout == layout
    assert sorted(run.ranks) == ranks


def test_duplicate_rank_keeps_newest_and_says_so():
    (run,) = discover(sample("real/mindspore_cpu_new_graph_full"))
    assert list(run.ranks) == [0]
    dirs = sorted(p.name for p in run.root.glob("*_ascend_ms"))
    assert run.ranks[0].dir.name == dirs[-1]  # the larger timestamp
    assert any("newer folder" in i.problem for i in run.issues)


def test_two_runs_in_one_folder_are_kept_apart():
    runs = discover(sample("mindinsight/cluster_analyse_variants_single_rank"))
    assert [r.rel(r.base) for r in runs] == ["run_3/profiler", "run_4/profiler"]


def test_nothing_recognisable(tmp_path):
    (tmp_path / "a.csv").write_text("x,y\n1,2\n")
    with pytest.raises(NoProfilingData, match="looked for"):
        discover(tmp_path)


def test_rank_folder_at_any_depth(tmp_path):
    run = generate_run(tmp_path / "gen", ranks=4, steps=2)
    deep = tmp_path / "job" / "host-a" / "profiling" / "out"
    deep.mkdir(parents=True)
    for d in run.iterdir():
        shutil.move(str(d), deep / d.name)
    (layout,) = discover(tmp_path / "job")
    assert sorted(layout.ranks) == [0, 1, 2, 3] and layout.layout == "ascend"


def test_missing_rank_is_not_invented(tmp_path):
    run = generate_run(tmp_path / "r", ranks=8, steps=2, inject=["missing-rank:3"])
    (layout,) = discover(run)
    assert sorted(layout.ranks) == [0, 1, 2, 4, 5, 6, 7]
