"""Where the ranks are read and how a trace copy is gzipped are chosen by the bytes the files hold, a gzip's by its
trailer (issue 33: a GPU run of a few ranks with Kineto traces of 20-500 MB each is read in the pool, not one rank at
a time; a large trace copy is gzipped at level 6, not 9)."""

from __future__ import annotations

import gzip

from reportgen.layouts import run
from reportgen.loaders.files import data_bytes
from reportgen.report import build_report
from reportgen.site.render import trace_copies
from reportgen.synth import generate_run


def _gz(path, n: int):
    path.write_bytes(gzip.compress(b"[" + b" " * (n - 2) + b"]", compresslevel=1))
    return path


def test_bytes_count_a_gzip_by_what_it_holds(tmp_path):
    plain = tmp_path / "a.json"
    plain.write_bytes(b"x" * 1000)
    packed = _gz(tmp_path / "b.json.gz", 3_000_000)
    assert packed.stat().st_size < 100_000
    assert data_bytes([plain, packed, None, tmp_path / "missing.json"]) == 1000 + 3_000_000
    assert data_bytes([packed]) == 3_000_000
    assert data_bytes([tmp_path / "missing.json"]) == 0
    link = tmp_path / "link.json.gz"
    link.symlink_to(packed)
    assert data_bytes([link]) == 0  # (a link is not followed)


def test_trace_copy_level_by_size():
    big = trace_copies.TRACE_GZIP.large_bytes
    assert trace_copies.TRACE_GZIP.level(3_600_000) == 9  # a torch_npu trace_view.json
    assert trace_copies.TRACE_GZIP.level(big) == 9
    assert trace_copies.TRACE_GZIP.level(big + 1) == 6  # a Kineto trace


def test_a_few_ranks_holding_many_bytes_are_read_in_the_pool(tmp_path, monkeypatch):
    src = generate_run(tmp_path / "run", ranks=4, steps=2, kernels_per_step=40, comm_ops_per_step=3)
    seen = []
    real = run.map_cached

    def spy(*a, **kw):
        seen.append(kw.get("min_parallel"))
        return real(*a, **kw)

    monkeypatch.setattr(run, "map_cached", spy)
    one = build_report(src, tmp_path / "one", jobs=2)  # a few KB: read here
    assert seen[-1] == run.PARALLEL_MIN_RANKS
    monkeypatch.setattr(run, "POOL_MIN_BYTES", 1)
    two = build_report(src, tmp_path / "two", jobs=2)  # "many" bytes: in the pool, the same report
    assert seen[-1] == 2
    strip = {k: v for k, v in one.summary.items() if k != "generated_at"}
    assert {k: v for k, v in two.summary.items() if k != "generated_at"} == strip
    build_report(src, tmp_path / "three", jobs=1)  # one job: never a pool
    assert seen[-1] == run.PARALLEL_MIN_RANKS


def test_kineto_execution_passes_in_the_pool_equal_those_read_here(tmp_path, monkeypatch):
    from reportgen.loaders import dispatch
    from reportgen.loaders.kineto import execution

    src = generate_run(tmp_path / "run", layout="kineto", ranks=4, steps=3, compress=True)
    asked = []
    real = dispatch.map_ranks

    def spy(fn, items, args, **kw):
        asked.append((getattr(fn, "__name__", ""), kw.get("jobs"), len(items)))
        return real(fn, items, args, **kw)

    monkeypatch.setattr(dispatch, "map_ranks", spy)
    here = build_report(src, tmp_path / "here", jobs=2)  # small traces: both passes read here
    assert ("_windows_job", 1, 4) in asked
    asked.clear()
    monkeypatch.setattr(execution, "EXEC_POOL_BYTES", 1)
    pooled = build_report(src, tmp_path / "pool", jobs=2)
    assert ("_windows_job", 2, 4) in asked
    assert {k: v for k, v in pooled.summary.items() if k != "generated_at"} == \
        {k: v for k, v in here.summary.items() if k != "generated_at"}
    pages = sorted(p.relative_to(tmp_path / "here") for p in (tmp_path / "here").rglob("*execution*.html"))
    assert pages, "the run draws an execution view"
    for rel in pages:
        assert (tmp_path / "pool" / rel).read_bytes() == (tmp_path / "here" / rel).read_bytes(), rel


def test_the_load_workers_are_forked_before_the_sites_libraries_are_imported(tmp_path):
    """The later stages' libraries (altair, Jinja: ~0.35 s of imports) are imported once the load's workers run,
    beside them (`report.LATER_MODULES`): a worker never holds them, and the report is whole. networkx (~0.1 s) is
    imported by no one when the run has no strategy graph to lay out."""
    import subprocess
    import sys
    src = generate_run(tmp_path / "run", ranks=4, steps=2, kernels_per_step=40, comm_ops_per_step=3)
    seen = tmp_path / "seen"
    code = (
        "import sys, pathlib\n"
        "from reportgen import pools\n"
        "from reportgen.layouts import run\n"
        "real = pools.init_worker\n"
        "def init():\n"
        "    real()\n"
        "    with open(sys.argv[3], 'a') as f:\n"
        "        f.write(' '.join(m for m in ('altair', 'jinja2', 'networkx', 'reportgen.site.render.builder')\n"
        "                         if m in sys.modules) + '|\\n')\n"
        "pools.init_worker = init\n"
        "import reportgen.loaders.dispatch as d; d.init_worker = init\n"
        "run.POOL_MIN_BYTES = 1\n"
        "from reportgen.cli import main\n"
        "rc = main([sys.argv[1], '-o', sys.argv[2], '-q', '-j', '2'])\n"
        "assert all(m in sys.modules for m in ('altair', 'jinja2', 'reportgen.site.render.builder'))\n"
        "assert 'networkx' not in sys.modules  # (a run without a strategy graph never needs it)\n"
        "sys.exit(rc)\n")
    p = subprocess.run([sys.executable, "-c", code, str(src), str(tmp_path / "out"), str(seen)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    workers = seen.read_text().splitlines()
    assert len(workers) == 2 and all(w == "|" for w in workers), workers
    assert (tmp_path / "out" / "index.html").is_file() and (tmp_path / "out" / "summary.json").is_file()
