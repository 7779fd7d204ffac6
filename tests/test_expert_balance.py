"""Expert-parallel balance (issue 32, item 3): a synthetic MoE run written here, one expert rank receiving twice
the tokens, against the what-if run where every rank computes the group's mean."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reportgen.analysis import analyze
from reportgen.analysis.expert import analyze_expert_balance
from reportgen.layouts import discover, load_run
from reportgen.rules import run_rules

A2A_US = 300.0  # the all-to-all's own transfer time
GAP_US = 200.0  # host gap between steps
OTHER_US = 1000.0  # the rest of the step's computation (attention etc.), equal on every rank
STEPS = 4


def write_moe(folder: Path, expert_us: list[float]) -> Path:
    """4 ranks, one expert-parallel group (pg "5"). Per step: other kernels (1 ms), the grouped GEMM of the rank's
    experts (expert_us[r]), then the all-to-all, which ends on every rank when the slowest arrives (+ 300 µs). The
    next step starts 200 µs later on every rank, so the step lasts 1 ms + max(expert) + 300 µs + 200 µs."""
    folder.mkdir(parents=True, exist_ok=True)
    step_us = OTHER_US + max(expert_us) + A2A_US + GAP_US
    pgs = [{"pg_name": "0", "pg_desc": "default_pg", "ranks": [0, 1, 2, 3], "backend_config": "cuda:nccl"},
           {"pg_name": "5", "pg_desc": "expert_parallel", "ranks": [0, 1, 2, 3], "backend_config": "cuda:nccl"}]
    for r, e_us in enumerate(expert_us):
        ev, corr = [], 1
        for s in range(1, STEPS + 2):
            t0 = 1_000_000.0 + (s - 1) * step_us
            ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s}", "pid": 1, "tid": 1,
                       "ts": t0 - 50, "dur": step_us})
            kernels = [("elementwise_kernel", t0, OTHER_US, {}),
                       ("void cutlass::Kernel<cutlass_grouped_gemm_bf16>(Params)", t0 + OTHER_US, e_us, {}),
                       ("ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)", t0 + OTHER_US + e_us,
                        max(expert_us) - e_us + A2A_US,
                        {"Collective name": "all_to_all", "Process Group Name": "5", "Seq": s})]
            for k, (name, ts, dur, extra) in enumerate(kernels):
                ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                           "ts": t0 - 40 + k, "dur": 1, "args": {"correlation": corr}})
                ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7 + (k == 2), "ts": ts,
                           "dur": dur, "args": {"correlation": corr, "device": 0, **extra}})
                corr += 1
        head = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
                "distributedInfo": {"backend": "nccl", "rank": r, "world_size": 4, "pg_config": pgs}}
        (folder / f"rank{r}.pt.trace.json").write_text(json.dumps({**head, "traceEvents": ev}))
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("moe")
    hot = [2000.0, 2000.0, 4000.0, 2000.0]  # rank 2's experts get twice the tokens
    even = [2500.0] * 4  # the what-if: every rank computes the group's mean
    return {k: load_run(discover(write_moe(base / k, v))[0]) for k, v in (("hot", hot), ("even", even))}


def test_group_expert_time_imbalance_and_saving(runs):
    eb = analyze_expert_balance(runs["hot"])
    assert eb is not None and len(eb.groups) == 1
    g = eb.groups[0]
    assert g.group == "5" and g.name == "expert_parallel" and g.ranks == [0, 1, 2, 3]
    assert g.expert_ms == pytest.approx({0: 2.0, 1: 2.0, 2: 4.0, 3: 2.0})
    assert g.mean_ms == pytest.approx(2.5) and g.max_ms == pytest.approx(4.0)
    assert g.peak_to_mean == pytest.approx(1.6) and g.hot_ranks == [2]
    assert g.saving_ms == pytest.approx(1.5)
    # the all-to-all of the fast ranks holds their wait for rank 2 (2 ms) plus the transfer; rank 2's only the transfer
    assert g.alltoall_ms == pytest.approx({0: 2.3, 1: 2.3, 2: 0.3, 3: 2.3})
    assert any("grouped_gemm" in k for k in eb.kernels)


def test_saving_matches_the_what_if_run(runs):
    hot, even = analyze(runs["hot"]), analyze(runs["even"])
    step = {k: float(a.steps.per_step["total"].mean()) for k, a in (("hot", hot), ("even", even))}
    assert step["hot"] == pytest.approx((OTHER_US + 4000 + A2A_US + GAP_US) / 1000)
    assert step["hot"] - step["even"] == pytest.approx(hot.expert.groups[0].saving_ms)  # 1.5 ms per step
    assert even.expert.groups[0].saving_ms == pytest.approx(0) and even.expert.groups[0].hot_ranks == []


def test_rule_names_the_hot_rank_with_its_saving(runs):
    a = analyze(runs["hot"])
    findings, _ = run_rules(a, {})
    f = [x for x in findings if x.id == "expert-imbalance.group"]
    assert len(f) == 1 and f[0].ranks == [2]
    assert f[0].impact["step_ms"] == pytest.approx(1.5)
    assert f[0].impact["step_share"] == pytest.approx(1.5 / ((OTHER_US + 4000 + A2A_US + GAP_US) / 1000), rel=1e-3)
    assert f[0].evidence["peak_to_mean"] == pytest.approx(1.6)
    a = analyze(runs["even"])
    assert not [x for x in run_rules(a, {})[0] if x.id == "expert-imbalance.group"]


def test_no_all_to_all_no_expert_view(tmp_path):
    run = load_run(discover(write_moe(tmp_path / "x", [2000.0] * 4))[0])
    for r in run.rank_ids:  # the same run without its all-to-all
        c = run.ranks[r].communication
        c.ops = c.ops[c.ops["kind"] != "alltoall"]
    assert analyze_expert_balance(run) is None


def test_overview_shows_the_group_and_summary_keeps_it(tmp_path):
    import bs4

    from reportgen.report import build_report

    run = write_moe(tmp_path / "run", [2000.0, 2000.0, 4000.0, 2000.0])
    res = build_report(run, tmp_path / "out", lang="en")
    eb = res.summary["metrics"]["expert_balance"]
    g = eb["groups"][0]
    assert g["hot_ranks"] == [2] and g["saving_ms"] == pytest.approx(1.5) and g["peak_to_mean"] == pytest.approx(1.6)
    assert g["expert_ms"] == {"0": 2.0, "1": 2.0, "2": 4.0, "3": 2.0}
    assert any(f["id"] == "expert-imbalance.group" and f["impact"]["step_ms"] == pytest.approx(1.5)
               for f in res.summary["findings"])
    soup = bs4.BeautifulSoup((tmp_path / "out" / "index.html").read_text(encoding="utf-8"), "html.parser")
    cells = [td.get_text(strip=True) for td in soup.select("table.expert-balance tbody tr")[0].find_all("td")]
    assert cells == ["expert_parallel", "0–3", "2.500", "4.000", "1.60", "2", "1.500", "1.800"]


def test_all_to_all_without_experts_is_not_expert_parallel(tmp_path):
    folder = write_moe(tmp_path / "emb", [2000.0] * 4)
    for p in folder.glob("*.json"):  # no grouped GEMM, and a group named for embeddings
        p.write_text(p.read_text().replace("cutlass_grouped_gemm_bf16", "embedding_bag_kernel")
                     .replace("expert_parallel", "embedding_a2a"))
    assert analyze_expert_balance(load_run(discover(folder)[0])) is None
