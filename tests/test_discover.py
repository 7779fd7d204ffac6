"""Discovery: every layout, rank ids, runs never merged across experiments, duplicates, missing ranks, hostile
folders (links, pipes, sparse files, many files)."""

from __future__ import annotations

import json
import re
import os
import shutil
import socket
import stat
import time
from pathlib import Path

import pytest

from reportgen.layouts import discover
from reportgen.errors import NoProfilingData
from reportgen.synth import generate_run
from tests.conftest import SAMPLES, sample


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


def test_ranks_the_world_size_names_are_a_warning_unless_one_rank_was_profiled_alone(tmp_path):
    """Rank 0 of 8 profiled alone (common on GPU jobs): the missing ranks are context (info), the coverage says what
    a lone rank cannot show; two ranks of four present: the missing two are a warning naming them."""
    run = generate_run(tmp_path / "r", layout="kineto", ranks=4, steps=3, seed=1)
    traces = sorted((run / "traces").glob("*.pt.trace.json"))
    for t in traces[2:]:
        t.unlink()
    (layout,) = discover(run)
    (issue,) = [i for i in layout.issues if "took part" in i.problem]
    assert issue.severity == "warning" and tuple(issue.ranks) == (2, 3)
    traces[1].unlink()
    (layout,) = discover(run)
    (issue,) = [i for i in layout.issues if "took part" in i.problem]
    assert issue.severity == "info" and tuple(issue.ranks) == (1, 2, 3)


# --- runs are never merged across experiments --------------------------------------------------------------------


def _subfolders(group: str) -> list[str]:
    return sorted(p.name for p in (SAMPLES / group).iterdir() if p.is_dir()) if (SAMPLES / group).is_dir() else []


@pytest.mark.parametrize("group", ["real", "ascend", "mindinsight"])
def test_every_sample_folder_is_its_own_run(group):
    root = sample(group)
    runs = discover(root)
    expected = set(_subfolders(group)) - {"marey_pipeline_4device_derived"}  # not profiler output
    seen = set()
    for r in runs:
        rel = r.rel(r.base)
        assert rel not in ("", "."), r.label
        assert r.label not in ("", ".")
        top = rel.split("/")[0]
        seen.add(top)
        for rf in r.ranks.values():  # every rank of a run comes from that run's folder
            assert r.rel(rf.dir).split("/")[0] == top, (r.label, r.rel(rf.dir))
        assert not any("newer folder" in i.problem for i in r.issues), r.label
    assert seen == expected
    assert len({r.slug for r in runs}) == len(runs)  # one report folder each


def test_real_samples_are_not_stitched():
    """Before: one 4-rank run named "." from three experiments, with 20 'a newer folder also holds rank N' notes."""
    runs = discover(sample("real"))
    by = {r.label.split(" ")[0]: r for r in runs}
    assert sorted(by["mindspore_cpu_dist4_new_graph_skew"].ranks) == [0, 1, 2, 3]
    assert sorted(by["mindspore_cpu_legacy_graph_databound"].ranks) == [0]
    assert sorted(by["mindspore_cpu_dist2_envvar_graph"].ranks) == [0, 1]
    assert len(runs) == 17  # 14 experiments; three of them were profiled in two cycles


def test_schedule_repeat_cycles_are_runs_of_their_own():
    """schedule(repeat=2): one process writes two folders for rank 0, two profiled windows: neither is dropped."""
    runs = discover(sample("real/mindspore_cpu_new_graph_full"))
    assert len(runs) == 2
    assert [sorted(r.ranks) for r in runs] == [[0], [0]]
    assert runs[0].ranks[0].dir != runs[1].ranks[0].dir
    assert [r.name.split(",")[0] for r in runs] == ["cycle 1 of 2", "cycle 2 of 2"]
    assert runs[0].ranks[0].dir.name < runs[1].ranks[0].dir.name  # cycle 1 is the earlier folder
    assert len({r.slug for r in runs}) == 2
    assert any("profiled in 2 cycles" in i.problem and i.severity == "info" for i in runs[0].issues)


def _rename_launch(d: Path, pid: int, ts: str) -> str:
    m = re.match(r"^(?P<host>.+?)_(?P<pid>\d+)_(?P<ts>\d{14,17})_(?P<sfx>ascend_(pt|ms))$", d.name)
    return f"{m.group('host')}_{pid}_{ts}_{m.group('sfx')}"


def test_true_duplicate_inside_one_launch_newest_wins(tmp_path):
    run = generate_run(tmp_path / "r", ranks=4, steps=2)
    d2 = sorted(run.glob("*_ascend_pt"))[2]
    dup = run / _rename_launch(d2, 424242, "20261121093001500")  # another process, 1.5 s later, claims rank 2
    shutil.copytree(d2, dup)
    (layout,) = discover(run)
    assert sorted(layout.ranks) == [0, 1, 2, 3]
    assert layout.ranks[2].dir == dup
    assert any("newer folder" in i.problem and "rank 2" in i.problem and i.severity == "warning"
               for i in layout.issues)


def test_a_relaunch_into_the_same_folder_is_a_second_run(tmp_path):
    run = generate_run(tmp_path / "r", ranks=4, steps=2)
    for d in sorted(run.glob("*_ascend_pt")):
        shutil.copytree(d, run / _rename_launch(d, 300000 + int(d.name.split("_")[-3][-3:]),
                                                "20261121103000" + d.name.split("_")[-3][-3:]))
    runs = discover(run)
    assert len(runs) == 2 and [sorted(r.ranks) for r in runs] == [[0, 1, 2, 3]] * 2
    assert all("launch" in r.name for r in runs)
    assert not any("newer folder" in i.problem for r in runs for i in r.issues)


def test_ranks_of_one_job_copied_per_host_are_joined(tmp_path):
    run = generate_run(tmp_path / "r", ranks=8, steps=2)
    job = tmp_path / "job"
    for d in sorted(run.glob("*_ascend_pt")):
        rank = int(json.loads((d / "profiler_metadata.json").read_text())["distributed_args"]["rank"])
        host = job / ("host-a" if rank < 4 else "host-b")
        host.mkdir(parents=True, exist_ok=True)
        shutil.move(str(d), host / d.name)
    (layout,) = discover(job)
    assert sorted(layout.ranks) == list(range(8))
    assert layout.world_size == 8


def test_sibling_experiments_with_disjoint_ranks_stay_apart(tmp_path):
    """Two single-rank experiments (no world size to tie them) are two runs, not one 2-rank run."""
    a = generate_run(tmp_path / "gen_a", ranks=1, steps=2)
    root = tmp_path / "exps"
    shutil.copytree(a, root / "exp1")
    shutil.copytree(a, root / "exp2")
    runs = discover(root)
    assert [r.rel(r.base) for r in runs] == ["exp1", "exp2"]


# --- missing ranks ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout_name", ["ascend", "mindinsight"])
def test_missing_rank_is_a_warning_that_names_it(tmp_path, layout_name):
    run = generate_run(tmp_path / "r", layout=layout_name, ranks=8, steps=2, inject=["missing-rank:3"])
    (layout,) = discover(run)
    assert 3 not in layout.ranks
    hits = [i for i in layout.issues if i.ranks == (3,)]
    assert len(hits) == 1 and hits[0].severity == "warning" and "rank 3 missing" in hits[0].problem


def test_missing_rank_becomes_a_warning_finding_with_ranks(tmp_path):
    from reportgen.analysis import analyze
    from reportgen.layouts import load_run
    from reportgen.rules import run_rules

    run = generate_run(tmp_path / "r", ranks=8, steps=3, inject=["missing-rank:5"])
    findings, _ = run_rules(analyze(load_run(discover(run)[0])))
    findings = [f if isinstance(f, dict) else f.to_dict() for f in findings]
    f = [f for f in findings if f["category"] == "data_quality" and 5 in f["ranks"]]
    assert f and f[0]["severity"] == "warning" and "rank 5" in f[0]["title"]


def test_no_missing_rank_without_evidence():
    for r in discover(sample("real")):  # MindSpore CPU writes no world size: nothing may be claimed
        assert not any(i.ranks for i in r.issues), r.label


# --- hostile folders ---------------------------------------------------------------------------------------


@pytest.fixture
def small_run(tmp_path):
    return generate_run(tmp_path / "run", ranks=2, steps=2)


def _rank_dir(run: Path, rank: int = 0) -> Path:
    return sorted(run.glob("*_ascend_pt"))[rank]


def _all_files(layouts) -> set[Path]:
    return {p for lay in layouts for rf in lay.ranks.values() for ps in rf.files.values() for p in ps}


def _problems(layouts) -> dict[str, str]:
    return {i.file: i.problem for lay in layouts for i in lay.issues}


def test_symlink_loops_are_named_not_followed(small_run):
    (small_run / "loop_a").symlink_to(small_run / "loop_b")
    (small_run / "loop_b").symlink_to(small_run / "loop_a")
    out = _rank_dir(small_run) / "ASCEND_PROFILER_OUTPUT"
    (out / "self.csv").symlink_to(out / "self.csv")
    (small_run / "up").symlink_to(small_run, target_is_directory=True)
    layouts = discover(small_run)
    probs = _problems(layouts)
    assert "symbolic link" in probs["loop_a"] and "not followed" in probs["loop_a"]
    assert "not followed" in probs[f"{_rank_dir(small_run).name}/ASCEND_PROFILER_OUTPUT/self.csv"]
    assert "folder inside the run" in probs["up"]
    assert sorted(layouts[0].ranks) == [0, 1]


def test_file_links_out_of_the_run_are_never_followed(tmp_path, small_run):
    secret = tmp_path / "secret.csv"
    secret.write_text("Device_id,Step\n0,1\n")
    d = _rank_dir(small_run)
    out = d / "ASCEND_PROFILER_OUTPUT"
    (out / "step_trace_time.csv").unlink()
    (out / "step_trace_time.csv").symlink_to(secret)
    (d / "profiler_metadata.json").unlink()
    (d / "profiler_metadata.json").symlink_to(secret)
    (d / "FRAMEWORK").mkdir(exist_ok=True)
    (d / "FRAMEWORK" / "cpu_op_type_info_0.csv").symlink_to(secret)
    (small_run / "outside_dir").symlink_to(tmp_path, target_is_directory=True)
    layouts = discover(small_run)
    files = _all_files(layouts)
    assert not any(os.path.realpath(p) == str(secret.resolve()) for p in files)
    probs = _problems(layouts)
    for rel in (f"{d.name}/ASCEND_PROFILER_OUTPUT/step_trace_time.csv", f"{d.name}/profiler_metadata.json",
                f"{d.name}/FRAMEWORK/cpu_op_type_info_0.csv", "outside_dir"):
        assert "outside the run folder" in probs[rel], rel


def test_a_link_to_a_file_inside_the_run_is_read(small_run):
    out = _rank_dir(small_run) / "ASCEND_PROFILER_OUTPUT"
    real = small_run / "kept_step_trace.csv"
    shutil.move(str(out / "step_trace_time.csv"), real)
    (out / "step_trace_time.csv").symlink_to(real)
    (layout,) = discover(small_run)
    assert layout.ranks[0].first("step_trace_time.csv") == out / "step_trace_time.csv"


def test_pipes_sockets_and_folders_where_files_belong(small_run):
    out = _rank_dir(small_run) / "ASCEND_PROFILER_OUTPUT"
    (out / "step_trace_time.csv").unlink()
    os.mkfifo(out / "step_trace_time.csv")
    (out / "kernel_details.csv").unlink()
    (out / "kernel_details.csv").mkdir()
    sock = socket.socket(socket.AF_UNIX)
    cwd = os.getcwd()
    os.chdir(out)  # AF_UNIX paths are short: bind by a relative name
    try:
        sock.bind("communication.json.sock")
    finally:
        os.chdir(cwd)
    try:
        t0 = time.monotonic()
        layouts = discover(small_run)
        assert time.monotonic() - t0 < 10
    finally:
        sock.close()
    rf = layouts[0].ranks[0]
    assert rf.first("step_trace_time.csv") is None and rf.first("kernel_details.csv") is None
    assert all(os.path.isfile(p) and not stat.S_ISFIFO(os.stat(p).st_mode) for p in _all_files(layouts))
    probs = _problems(layouts)
    rel = f"{_rank_dir(small_run).name}/ASCEND_PROFILER_OUTPUT/"
    assert "named pipe" in probs[rel + "step_trace_time.csv"]
    assert "folder stands where" in probs[rel + "kernel_details.csv"]
    assert "socket" in probs[rel + "communication.json.sock"]


def test_device_files_are_named_not_read(small_run):
    if os.geteuid() != 0:
        pytest.skip("mknod needs root")
    out = _rank_dir(small_run) / "ASCEND_PROFILER_OUTPUT"
    (out / "op_statistic.csv").unlink(missing_ok=True)
    os.mknod(out / "op_statistic.csv", stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero: endless
    layouts = discover(small_run)
    assert layouts[0].ranks[0].first("op_statistic.csv") is None
    assert "character device" in _problems(layouts)[f"{_rank_dir(small_run).name}/ASCEND_PROFILER_OUTPUT/op_statistic.csv"]


def test_a_fifo_never_blocks_the_report(tmp_path, small_run):
    from reportgen.cli import main

    out = _rank_dir(small_run) / "ASCEND_PROFILER_OUTPUT"
    (out / "trace_view.json").unlink(missing_ok=True)
    os.mkfifo(out / "trace_view.json")
    (_rank_dir(small_run) / "profiler_metadata.json").unlink()
    os.mkfifo(_rank_dir(small_run) / "profiler_metadata.json")
    t0 = time.monotonic()
    assert main([str(small_run), "-o", str(tmp_path / "o"), "-q"]) == 0
    assert time.monotonic() - t0 < 60
    dq = json.loads((tmp_path / "o" / "summary.json").read_text())["data_quality"]
    assert any("named pipe" in q["problem"] for q in dq)


def test_a_sparse_two_gigabyte_file_is_named_and_skipped(small_run):
    import resource

    out = _rank_dir(small_run) / "ASCEND_PROFILER_OUTPUT"
    with open(out / "trace_view.json", "wb") as f:
        f.truncate(2 * 1024 ** 3)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.monotonic()
    (layout,) = discover(small_run)
    assert time.monotonic() - t0 < 5
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50_000  # KB
    assert layout.ranks[0].first("trace_view.json") is None
    assert any("sparse" in i.problem and i.file.endswith("trace_view.json") for i in layout.issues)


def test_fifty_thousand_tiny_files_bounded_and_noted(small_run):
    junk = small_run / "junk"
    junk.mkdir()
    for i in range(50_000):
        (junk / f"f{i:05d}.txt").touch()
    t0 = time.monotonic()
    (layout,) = discover(small_run)
    assert time.monotonic() - t0 < 10
    assert sorted(layout.ranks) == [0, 1]
    assert any(i.file == "junk" and "50,000 entries" in i.problem for i in layout.issues)


def test_discovery_imports_nothing_from_the_loaders():
    import subprocess
    import sys

    code = ("import sys, reportgen.discover; "
            "print(sorted(m for m in sys.modules if m.startswith('reportgen.loaders')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "[]"


def test_metadata_group_ranks_plain_and_mixed(tmp_path):
    """profiler_metadata.json's parallel groups: a list of plain whole numbers is taken as it is; any other list
    element by element as `to_int` reads it (digit text and 2.0 kept, negatives, fractions, booleans dropped)."""
    from reportgen.discover.peek import metadata_facts
    from reportgen.numbers import to_int

    p = tmp_path / "profiler_metadata.json"
    mixed = [5, "6", -1, 2.0, 2.5, True, None, 2 ** 70]
    p.write_text(json.dumps({"parallel_group_info": {"g1": {"global_ranks": [0, 1, 7]},
                                                      "g2": {"global_ranks": mixed},
                                                      "g3": {"global_ranks": [3, -4]}}}))
    want = {0, 1, 7} | {r for r in (to_int(x) for x in mixed) if r is not None and r >= 0} | {3}
    assert metadata_facts(p)["group_ranks"] == want
    assert {0, 1, 7, 5, 6, 2, 3} <= want and -1 not in want and 2 ** 70 not in want


def test_equal_group_rank_sets_are_one_object_per_run():
    """Every rank's profiler_metadata.json names the world group: the ranks share one set of its members instead
    of a copy each (4,096 ranks: 16.7M set entries, 1 GB in discovery)."""
    from reportgen.discover import ascend

    a, b = ascend._shared(frozenset(range(4096))), ascend._shared(frozenset(range(4096)))
    assert a is b and a == frozenset(range(4096))
    assert ascend._shared(frozenset({0, 1})) is not a


def test_small_json_peek_reads_as_json_loads(tmp_path):
    """Discovery's quick read of a small metadata file (orjson where it reads the same) gives json.loads' values
    and types on every input: integers past 64 bits stay integers, NaN / Infinity / 1e400, a BOM, lone surrogates,
    invalid UTF-8, duplicate keys, deep nesting, not JSON at all (None)."""
    import json

    from reportgen.discover.peek import read_small_json

    cases = [b'{"a": 1, "a": 2}', b'[1e400, -1e400]', b"[18446744073709551616, -99999999999999999999, 12]",
             b'{"x": "\\ud800"}', b"[NaN, Infinity]", b"\xef\xbb\xbf{\"k\": [1, 2]}", b'{"s": "\xff\xfe"}',
             b'{"f": [0.1, 1.0000000000000002, -0.0, 5e-324, 1.7976931348623157e308]}', b"[" * 600 + b"]" * 600,
             b"[" * 3000 + b"]" * 3000, b"{not json", b'{"global_ranks": [0, 1, 2, 3], "rank_size": 4}', b""]
    for i, raw in enumerate(cases):
        p = tmp_path / f"c{i}.json"
        p.write_bytes(raw)
        try:
            want = json.loads(raw.decode("utf-8-sig", errors="replace"))
        except (ValueError, RecursionError):
            want = None
        got = read_small_json(p)
        assert repr(got) == repr(want), raw[:40]  # repr: the types too (an int is not a float), NaN compared


def test_metadata_group_ranks_read_once_per_group_equal_the_plain_union(tmp_path):
    """The ranks discovery takes from profiler_metadata.json's groups (each group read once per process, the world
    group's set shared) equal the plain union of what `to_int` reads per value, >= 0: booleans, negatives, floats,
    texts, huge numbers, empty groups, groups none of which holds the others, the same group in two files."""
    import json

    from reportgen.discover.peek import metadata_facts
    from reportgen.numbers import to_int

    def plain(groups: dict) -> set:
        out: set = set()
        for g in groups.values():
            if isinstance(g, dict) and isinstance(g.get("global_ranks"), list):
                for x in g["global_ranks"][:100_000]:
                    r = to_int(x)
                    if r is not None and r >= 0:
                        out.add(r)
        return out

    world = list(range(300))
    cases = [{"w": {"global_ranks": world}, "tp": {"global_ranks": [0, 1]}},
             {"w": {"global_ranks": world}, "tp": {"global_ranks": [298, 299]}},  # the same world group again
             {"a": {"global_ranks": [0, 1, 2]}, "b": {"global_ranks": [5, 6]}},  # none holds the other
             {"a": {"global_ranks": [True, 1, 2]}, "b": {"global_ranks": [1, 2]}},  # True == 1, not a rank
             {"a": {"global_ranks": [-1, 3, 2.0, "4", 5.5, None, 2 ** 80]}},
             {"a": {"global_ranks": []}, "b": "x", "c": {"global_ranks": "0,1"}},
             {"a": {"global_ranks": [0, 1]}, "b": {"global_ranks": [0, 1]}}]
    for i, groups in enumerate(cases):
        p = tmp_path / f"m{i}.json"
        p.write_text(json.dumps({"parallel_group_info": groups}))
        got = metadata_facts(p).get("group_ranks", frozenset())
        assert set(got) == plain(groups), groups
    a, b = (tmp_path / "m0.json", tmp_path / "m1.json")
    assert metadata_facts(a)["group_ranks"] is metadata_facts(b)["group_ranks"]  # one object for the world group


def test_metadata_facts_read_as_json_loads_on_every_input(tmp_path):
    """profiler_metadata.json's world size and group ranks (msgspec splits the file into its values' text, each
    read as json.loads reads it, a group's text read once per process) equal what json.loads of the whole file
    gives, on odd and damaged files: duplicate keys, a BOM, NaN, big numbers, invalid UTF-8, lone surrogates,
    groups that are not objects, deep nesting elsewhere, trailing bytes, not JSON at all."""
    import json

    from reportgen.discover.peek import metadata_facts
    from reportgen.numbers import to_int

    def plain(raw: bytes) -> dict:
        try:
            data = json.loads(raw.decode("utf-8-sig", errors="replace"))
        except (ValueError, RecursionError):
            return {}
        out: dict = {}
        if not isinstance(data, dict):
            return out
        dargs = data.get("distributed_args")
        if isinstance(dargs, dict):
            ws = to_int(dargs.get("world_size"))
            if ws is not None and ws > 0:
                out["world_size"] = ws
        groups = data.get("parallel_group_info")
        if isinstance(groups, dict):
            ranks = {r for g in groups.values() if isinstance(g, dict) and isinstance(g.get("global_ranks"), list)
                     for r in (to_int(x) for x in g["global_ranks"][:100_000]) if r is not None and r >= 0}
            if ranks:
                out["group_ranks"] = ranks
        return out

    world = ", ".join(map(str, range(64)))
    g = '"parallel_group_info": {"w": {"global_ranks": [' + world + ']}, "tp": {"global_ranks": [0, 1]}}'
    cases = [
        '{"distributed_args": {"world_size": 64}, ' + g + '}',
        '{"distributed_args": {"world_size": 64}, ' + g + '}',  # the same groups again (read once)
        '{"distributed_args": {"world_size": "64"}, "distributed_args": {"world_size": 8}, ' + g + '}',
        '{"distributed_args": [1], ' + g + ', "parallel_group_info": {"a": {"global_ranks": [3, 4]}}}',
        '{"parallel_group_info": {"a": {"global_ranks": [3, 4]}}, "parallel_group_info": [1]}',
        '{"parallel_group_info": {"a": 5, "b": {"global_ranks": [1]}}}',
        '{"parallel_group_info": {"a": {"global_ranks": "0,1"}, "b": {}, "c": {"global_ranks": null}}}',
        '{"parallel_group_info": {"a": {"global_ranks": [1, "2", 3.0, 4.5, true, -1, 99999999999999999999]}}}',
        '{"parallel_group_info": {"a": {"global_ranks": [1, 2], "global_ranks": [7]}}}',
        '{"distributed_args": {"world_size": NaN}, ' + g + '}',
        '{"distributed_args": {"world_size": 1e400}, ' + g + '}',
        '{"distributed_args": {"world_size": 12345678901234567890123}, ' + g + '}',
        '{"x": "\\ud800", ' + g + '}',
        '{"parallel_group_info": {"a": {"global_ranks": [5, "\\ud800"]}}}',
        '{"x": ' + "[" * 600 + "]" * 600 + ', ' + g + '}', '{"x": ' + "[" * 3000 + "]" * 3000 + ', ' + g + '}',
        '{"distributed_args": {"world_size": 4}} trailing',
        '{"parallel_group_info": null, "distributed_args": null}',
        '{"parallel_group_info": {}}', '[1, 2]', '', 'not json',
    ]
    raws = [c.encode() for c in cases] + [
        b"\xef\xbb\xbf" + cases[0].encode(),
        b'{"s": "\xff\xfe", "distributed_args": {"world_size": 3}, ' + g.encode() + b'}',
        b'{"parallel_group_info": {"a": {"global_ranks": [2, "\xff"]}}}',
    ]
    for i, raw in enumerate(raws):
        p = tmp_path / f"meta{i}.json"
        p.write_bytes(raw)
        got = metadata_facts(p)
        got = {k: (set(v) if k == "group_ranks" else v) for k, v in got.items()}
        assert got == plain(raw), raw[:80]


def test_metadata_loader_group_ranks_plain_and_odd(tmp_path):
    """The rank loader's parallel groups (profiler_metadata.json): plain whole numbers kept as they are (the fast
    check); booleans and negatives named and dropped; floats and digit text read as whole numbers; an empty group
    stays empty."""
    import json

    from reportgen.loaders.issuelog import IssueLog
    from reportgen.loaders.metadata import load_profiler_metadata
    from reportgen.model import RankInfo

    p = tmp_path / "profiler_metadata.json"
    p.write_text(json.dumps({"distributed_args": {"world_size": 4, "rank": 0}, "parallel_group_info": {
        "w": {"group_name": "default_group", "global_ranks": list(range(100)), "group_rank": 0},
        "b": {"group_name": "tp", "global_ranks": [True, 1]}, "n": {"group_name": "pp", "global_ranks": [-1, 2]},
        "f": {"group_name": "dp", "global_ranks": [1.0, "2", 3]}, "e": {"group_name": "x", "global_ranks": []}}}))
    info, log = RankInfo(rank=0, source_dir="r"), IssueLog(tmp_path, 0)
    load_profiler_metadata(p, info, log)
    got = {k: g["global_ranks"] for k, g in info.parallel_groups.items()}
    assert got == {"w": list(range(100)), "b": [1], "n": [2], "f": [1, 2, 3], "e": []}
    assert all(type(r) is int for ranks in got.values() for r in ranks)  # noqa: E721
    bad = [i for i in log.issues if "global_ranks" in str(i.problem) or "rank" in str(i.problem).lower()]
    assert len(bad) == 1 and "2" in str(bad[0].problem)  # one entry: two invalid values (True, -1)
