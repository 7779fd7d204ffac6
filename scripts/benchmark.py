"""Benchmark msreport on big synthetic runs: time per stage and peak memory.

    python scripts/benchmark.py --ranks 256 1024 4096 [--compare-msprof] [--repo /work/main] [--jobs N]
    python scripts/benchmark.py --shape small --ranks 512 1024 --steps 20 [--layout ascend] [--export db]
    python scripts/benchmark.py --trace-mb 2000     # stream a big trace_view.json: time and peak memory

`--shape realistic` (the default): a torch_npu run of issue 17's shape (tp 8, pp 4, 4 steps, 5,200
kernel_details.csv rows and 43 communication operators per rank and step, ~2.4 MB per rank), generated once and
cached under `--cache` (default /work/bench/runs) keyed by its parameters. Each build runs `python -m reportgen`
from `--repo` (default: this checkout; `--repo /work/main` measures main's code) in a child process and prints:
build wall time, stage times, peak RSS (largest single process, from RUSAGE_CHILDREN, and the whole process tree
sampled every 0.1 s), site MB, single-file MB, time per rank, and with `--compare-msprof` the wall time of
msprof-analyze `cluster -m all` on the same folder and the ratio. `--shape small`: the older in-process benchmark
(20 steps of the small generator, checks that every injected problem is named).

Prints one line per run; numbers go into closing notes, not into unit tests.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import tempfile
import time
from pathlib import Path
from typing import Optional

from reportgen.analysis import analyze
from reportgen.analysis.execution import select
from reportgen.discover import discover
from reportgen.loaders import load_execution, load_run, timeline_ranks
from reportgen.rules import run_rules
from reportgen.site import builder
from reportgen.site.pages import plan_pages
from reportgen.site.summary import build_summary
from reportgen.synth import generate_run


def _mem_rank(ranks: int) -> int:
    return (ranks * 2) // 3


def _queue_rank(ranks: int) -> int:
    return ranks - 1


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench(ranks: int, steps: int, layout: str, jobs: int, keep: bool, export: str = "text") -> dict:
    tmp = Path(tempfile.mkdtemp(prefix=f"msreport-bench-{ranks}-"))
    t = {}
    t0 = time.perf_counter()
    run_dir = generate_run(tmp / "run", layout=layout, ranks=ranks, steps=steps, stages=4 if ranks >= 8 else 1,
                           trace_view=layout == "ascend", export=export,
                           inject=[f"slow-rank:{ranks // 3}:compute:1.3"]
                           + (["unbalanced-stage:2:1.3"] if ranks >= 8 else [])
                           + ([f"slow-link:{link[0]}-{link[1]}"] if (link := _slow_link(ranks)) else [])
                           + [f"memory-near-capacity:{_mem_rank(ranks)}"]
                           + ([f"starving-queue:{_queue_rank(ranks)}"] if layout == "mindinsight" else []))
    t["generate"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    (lay,) = discover(run_dir)
    t["discover"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    run = load_run(lay, jobs=jobs)
    t["load"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    sel = select(run, timeline_ranks(lay))
    run.execution = load_execution(lay, run, sel.steps, sel.reasons, sel.ranks, sel.skipped)
    t["execution"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    a = analyze(run, device_memory_mb=64 * 1024 if layout == "ascend" else None)
    t["analyze"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    typed, thr = run_rules(a)
    t["rules"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    plan = plan_pages(a, typed, thresholds=thr)
    summary = build_summary(a, typed, thr)
    findings = summary["findings"]
    t["plan"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    entry = builder.write_site(plan, summary, tmp / "site", run_dir)
    t["write"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    builder.write_single_file(plan, summary, tmp / "one.html", run_dir)
    t["single"] = time.perf_counter() - t0
    size = sum(p.stat().st_size for p in (tmp / "site").rglob("*") if p.is_file()) / 1e6
    single = (tmp / "one.html").stat().st_size / 1e6
    # Ascend: the Computing phase. MindInsight pipeline runs: fp_and_bp holds the Receive waits of the other
    # stages, so the slow rank shows in the overlap view's computation (as it does on real data).
    slow_found = any(f["category"] == "slow_rank" and f["phase"] == "compute" and (ranks // 3) in f["ranks"]
                     and f["severity"] != "info" for f in findings)
    link = _slow_link(ranks)
    link_found = None if link is None else any(f["category"] == "slow_link" and f["links"] == [f"{link[0]}-{link[1]}"]
                                               for f in findings)
    stage_found = None if ranks < 8 else a.overlap.slowest_stage == 2
    mem = a.resources.memory
    mem_found = list(mem[mem["ratio"] > 0.9]["rank"]) == [_mem_rank(ranks)]
    starving = [r for r, q in a.resources.queues.items() if q.verdict in ("data_process", "data_transmission")]
    queue_found = starving == [_queue_rank(ranks)] if layout == "mindinsight" else None
    # the performance helper's verdicts: each injected problem named by a warning/critical finding, nothing else
    act = [f for f in findings if f["severity"] in ("critical", "warning")]

    def named(fid: str, key: str, want) -> bool:
        return any(f["id"] == fid and f[key] == want for f in act)

    expect = {"slow-rank.compute": named("slow-rank.compute", "ranks", [ranks // 3]),
              "memory-pressure.peak": named("memory-pressure.peak", "ranks", [_mem_rank(ranks)])}
    if ranks >= 8:
        expect["stage-imbalance.compute"] = named("stage-imbalance.compute", "stages", [2])
    if link:
        expect["slow-link.bandwidth"] = named("slow-link.bandwidth", "links", [f"{link[0]}-{link[1]}"])
    if layout == "mindinsight":
        expect["data-pipeline.data-process"] = named("data-pipeline.data-process", "ranks", [_queue_rank(ranks)])
    extra = sorted({f["id"] for f in act} - set(expect) - {"late-arrival.culprit", "slow-rank.step-interval"})
    if not keep:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print("kept", entry)
    return {"ranks": ranks, "steps": steps, **t, "site_mb": size, "single_mb": single, "rss_mb": _rss_mb(),
            "slow_rank_flagged": slow_found, "slow_link_flagged": link_found, "slow_stage_flagged": stage_found,
            "memory_flagged": mem_found, "starving_queue_flagged": queue_found,
            "findings_named": all(expect.values()), "findings_missing": [k for k, v in expect.items() if not v],
            "findings_unexpected": extra}


def bench_trace(mb: int) -> None:
    """Write a trace_view.json of about `mb` MB (device tasks, lanes, flows) and time the streaming reader."""
    import json
    import subprocess
    import sys

    tmp = Path(tempfile.mkdtemp(prefix="msreport-trace-"))
    path = tmp / "trace_view.json"
    t0 = time.perf_counter()
    steps, written, t = 0, 0, 1.7e15
    with open(path, "w") as f:
        f.write('[{"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"Overlap Analysis"}}')
        while written < mb * 1e6:
            steps += 1
            parts = [{"ph": "X", "name": f"ProfilerStep#{steps}", "pid": 2, "tid": 1, "ts": f"{t - 50:.3f}",
                      "dur": 100000.0},
                     {"ph": "s", "id": steps, "cat": "async_npu", "pid": 2, "tid": 1, "ts": f"{t - 40:.3f}"},
                     {"ph": "f", "id": steps, "cat": "async_npu", "pid": 3, "tid": 0, "ts": f"{t:.3f}"}]
            for k in range(2000):  # many small device tasks, each with its Computing slice
                ts = t + k * 40
                parts.append({"ph": "X", "name": f"MatMul_{k}", "pid": 3, "tid": 7, "ts": f"{ts:.3f}", "dur": 30.0,
                              "args": {"Task Type": "AI_CORE", "Task Id": k}})
                parts.append({"ph": "X", "name": "Computing", "pid": 1, "tid": 0, "ts": f"{ts:.3f}", "dur": 30.0})
            parts.append({"ph": "X", "name": "Communication", "pid": 1, "tid": 1, "ts": f"{t + 80000:.3f}",
                          "dur": 10000.0})
            parts.append({"ph": "X", "name": "Communication(Not Overlapped)", "pid": 1, "tid": 2,
                          "ts": f"{t + 80000:.3f}", "dur": 10000.0})
            chunk = "".join("," + json.dumps(e) for e in parts)
            f.write(chunk)
            written += len(chunk)
            t += 100000
        f.write("]")
    gen = time.perf_counter() - t0
    code = ("import resource,sys,time;from pathlib import Path;from reportgen.loaders.common import IssueLog;"
            "from reportgen.loaders.overlap import load_trace_view_step_trace as f;p=Path(sys.argv[1]);"
            "t=time.perf_counter();st=f(p,IssueLog(p.parent));e=time.perf_counter()-t;"
            "print(len(st.steps), round(float(st.steps['computing'].iloc[0]),3), round(e,2),"
            " resource.getrusage(resource.RUSAGE_SELF).ru_maxrss//1024)")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    n, comp, secs, rss = out.stdout.split()
    size = path.stat().st_size / 1e6
    print(f"trace_view.json {size:.0f} MB ({steps} steps, generated in {gen:.0f}s): read in {secs}s, "
          f"{size / float(secs):.0f} MB/s, peak RSS {rss} MB, {n} steps, step-1 computing {comp} ms (expected 60.000)")
    shutil.rmtree(tmp, ignore_errors=True)


def _slow_link(ranks: int):
    """A data-parallel ring hop inside stage 0 (ranks per stage >= 2): rank k -> k+1."""
    per_stage = ranks // (4 if ranks >= 8 else 1)
    return (per_stage // 2, per_stage // 2 + 1) if per_stage >= 3 else None


# --- the realistic shape through the command line ------------------------------------------------------------

GEN_VERSION = 2  # the realistic shape's; bump when synth.large changes what it writes (the cache key); 1: memory_record APP rows had
# one field too many (msreport skipped the file with an entry)
REPO = Path(__file__).resolve().parents[1]
# --shape -> reportgen.synth's shape and the generator version of its cached runs (bump when the shape changes)
SHAPES = {"realistic": ("torch_npu_large", GEN_VERSION), "trace": ("torch_npu_trace", 1),
          "comm": ("torch_npu_comm", 1)}


def realistic_run(cache: Path, ranks: int, steps: int, seed: int = 0, gen: Optional[int] = None,
                  shape: str = "realistic") -> Path:
    """The cached run of `shape` (generated on first use; `.complete` marks a finished one). `gen` below the
    shape's current version reuses an older cached run (to repeat a measurement on the same files); never
    generated."""
    synth_shape, current = SHAPES[shape]
    gen = current if gen is None else gen
    key = f"{synth_shape}-r{ranks}-s{steps}-seed{seed}-g{gen}"
    run = cache / key
    if (run / ".complete").exists():
        return run
    if gen != current:
        raise SystemExit(f"no cached run {run} (older generator versions are not regenerated)")
    import sys

    shutil.rmtree(run, ignore_errors=True)
    t0 = time.perf_counter()
    code = ("import sys;from reportgen.synth import generate_run as g;"
            "g(sys.argv[1], shape=sys.argv[2], ranks=int(sys.argv[3]), steps=int(sys.argv[4]), "
            "seed=int(sys.argv[5]), inject=sys.argv[6:])")
    inject = [f"slow-rank:{ranks // 3}:compute:1.3", f"memory-near-capacity:{_mem_rank(ranks)}"]
    if (link := _slow_link(ranks)) is not None:
        inject.append(f"slow-link:{link[0]}-{link[1]}")
    import subprocess

    subprocess.run([sys.executable, "-c", code, str(run), synth_shape, str(ranks), str(steps), str(seed), *inject],
                   check=True, cwd=REPO, env={**_env(REPO)})
    (run / ".complete").write_text(f"{time.perf_counter() - t0:.1f} s\n")
    size = sum(p.stat().st_size for p in run.rglob("*") if p.is_file()) / 1e9
    print(f"generated {run} ({ranks} ranks, {size:.2f} GB) in {time.perf_counter() - t0:.0f} s", flush=True)
    return run


def _env(repo: Path) -> dict:
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = str(repo)
    return env


def _tree_rss_mb(root: int) -> tuple[float, float]:
    """Resident memory of process `root` and all its descendants now (MB), from /proc: the sum of their RSS (a page
    shared by forked processes counted in each) and of their PSS (shared pages split between the sharers)."""
    import os

    kids: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                parts = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(d), int(parts[1])
        kids.setdefault(ppid, []).append(pid)
        rss[pid] = int(parts[21])  # pages
    total, todo, pss_kb = 0, [root], 0
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        pss_kb += _pss_kb(p)
        todo.extend(kids.get(p, []))
    return total * os.sysconf("SC_PAGE_SIZE") / 2**20, pss_kb / 1024


def _pss_kb(pid: int) -> int:
    """Proportional set size of a process (kB): pages shared by forked workers counted once across the tree."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


_WRAP = ("import resource,subprocess,sys;r=subprocess.run(sys.argv[2:]);u=resource.getrusage(resource.RUSAGE_CHILDREN);"
         "open(sys.argv[1],'w').write(f'{u.ru_maxrss} {u.ru_utime + u.ru_stime}');"
         "sys.exit(r.returncode)")


def timed(cmd: list[str], cwd: Path, env: Optional[dict] = None) -> dict:
    """Run `cmd`; wall time, stderr, the largest single process's peak RSS (RUSAGE_CHILDREN of a wrapper, so
    the number is this command's alone) and the sampled peak RSS of the whole process tree."""
    import subprocess
    import sys
    import threading

    fd, rss_file = tempfile.mkstemp(prefix="msreport-bench-rss-")
    import os

    os.close(fd)
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", _WRAP, rss_file, *cmd], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak = [0.0, 0.0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.1):
            rss, pss = _tree_rss_mb(proc.pid)
            peak[0], peak[1] = max(peak[0], rss), max(peak[1], pss)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    err = proc.communicate()[1]
    wall = time.perf_counter() - t0
    done.set()
    th.join()
    try:
        maxrss, cpu = (Path(rss_file).read_text() or "0 nan").split()
    finally:
        os.unlink(rss_file)
    # cpu: user + system seconds of the command and all its processes (a figure the machine's load barely moves)
    return {"wall": wall, "rc": proc.returncode, "stderr": err, "rss_mb": int(maxrss) / 1024, "tree_mb": peak[0],
            "tree_pss_mb": peak[1], "cpu": float(cpu)}


def _size_mb(p: Path) -> float:
    if p.is_file():
        return p.stat().st_size / 1e6
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) / 1e6


def bench_realistic(ranks: int, steps: int, cache: Path, repo: Path, jobs: Optional[int], single: bool,
                    msprof: bool, extra: list[str], gen: Optional[int] = None, shape: str = "realistic") -> dict:
    import re
    import sys

    run = realistic_run(cache, ranks, steps, gen=gen, shape=shape)
    tmp = Path(tempfile.mkdtemp(prefix=f"msreport-bench-{ranks}-"))
    try:
        base = [sys.executable, "-m", "reportgen", str(run), "-v", "--lang", "en", *extra]
        if jobs:
            base += ["-j", str(jobs)]
        r = timed(base + ["-o", str(tmp / "site")], repo, _env(repo))
        if r["rc"] != 0:
            raise SystemExit(f"msreport failed ({r['rc']}):\n{r['stderr'][-3000:]}")
        stages = {m.group(1): float(m.group(2)) for m in re.finditer(r"stage (.+?): ([\d.]+) s", r["stderr"])}
        out = {"shape": shape, "ranks": ranks, "run_gb": _size_mb(run) / 1e3, "build_s": r["wall"], "cpu_s": r["cpu"],
               "tree_pss_mb": r["tree_pss_mb"],
               "rss_mb": r["rss_mb"],
               "tree_mb": r["tree_mb"], "stages": stages, "site_mb": _size_mb(tmp / "site"),
               "per_rank_ms": r["wall"] / ranks * 1e3}
        summary = json.loads((tmp / "site" / "summary.json").read_text())
        out["slow_rank_flagged"] = any(f.get("category") == "slow_rank" and (ranks // 3) in (f.get("ranks") or [])
                                       for f in summary.get("findings", []))
        shutil.rmtree(tmp / "site", ignore_errors=True)
        if single:
            s = timed(base + ["--single-file", "-o", str(tmp / "one.html")], repo, _env(repo))
            out["single_mb"] = _size_mb(tmp / "one.html") if s["rc"] == 0 else float("nan")
            out["single_s"] = s["wall"]
        if msprof:
            exe = shutil.which("msprof-analyze")
            if exe is None:
                print("msprof-analyze is not installed (pip install msprof-analyze): no comparison", flush=True)
            else:
                m = timed([exe, "cluster", "-d", str(run), "-m", "all", "-o", str(tmp / "msprof"), "--force"],
                          tmp, None)
                out["msprof_s"], out["msprof_rc"], out["msprof_tree_mb"] = m["wall"], m["rc"], m["tree_mb"]
                out["msprof_cpu_s"] = m["cpu"]
                out["msprof_rss_mb"] = m["rss_mb"]
                # msprof-analyze writes into the input folder too (cluster_analysis_output, .db caches): clean
                for p in run.glob("cluster_analysis_output*"):
                    shutil.rmtree(p, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def print_realistic(r: dict, label: str) -> None:
    stages = " ".join(f"{k.split(': ')[-1]}={v:.1f}s" for k, v in r["stages"].items())
    line = (f"{label} {r['shape']} ranks={r['ranks']} ({r['run_gb']:.2f} GB): build {r['build_s']:.1f}s, cpu {r['cpu_s']:.1f}s "
            f"({r['per_rank_ms']:.1f} ms/rank; {stages}); peak RSS {r['rss_mb']:.0f} MB (largest process), "
            f"{r['tree_mb']:.0f} MB RSS / {r['tree_pss_mb']:.0f} MB PSS (process tree); site {r['site_mb']:.1f} MB")
    if "single_mb" in r:
        line += f"; single file {r['single_mb']:.1f} MB ({r['single_s']:.1f}s)"
    if "msprof_s" in r:
        line += (f"; msprof-analyze cluster -m all {r['msprof_s']:.1f}s, cpu {r['msprof_cpu_s']:.1f}s (exit "
                 f"{r['msprof_rc']}, RSS {r['msprof_rss_mb']:.0f} MB / tree {r['msprof_tree_mb']:.0f} MB): msreport "
                 f"is {r['msprof_s'] / r['build_s']:.1f}x faster (wall), {r['msprof_cpu_s'] / r['cpu_s']:.1f}x (cpu)")
    line += f"; slow rank flagged: {r['slow_rank_flagged']}"
    print(line, flush=True)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, nargs="+", default=[256, 1024])
    p.add_argument("--shape", default="realistic", choices=(*SHAPES, "small"))
    p.add_argument("--repo", type=Path, default=REPO, help="the msreport checkout to measure (realistic shape)")
    p.add_argument("--cache", type=Path, default=Path("/work/bench/runs"), help="generated runs (realistic shape)")
    p.add_argument("--compare-msprof", action="store_true", help="also time msprof-analyze cluster -m all")
    p.add_argument("--no-single", action="store_true", help="skip the --single-file build")
    p.add_argument("--msreport-args", default="", help="extra msreport arguments (e.g. '--scheduler local')")
    p.add_argument("--gen-version", type=int, default=None, help="reuse a run cached by an older generator")
    p.add_argument("--generate-only", action="store_true", help="only generate (cache) the runs")
    p.add_argument("--label", default="", help="printed before each line (e.g. 'before' / 'after')")
    p.add_argument("--steps", type=int, default=None, help="default: 4 (realistic), 20 (small)")
    p.add_argument("--layout", default="ascend", choices=("ascend", "mindinsight"))
    p.add_argument("--jobs", type=int, default=None, help="default: msreport's own default (realistic), 1 (small)")
    p.add_argument("--keep", action="store_true")
    p.add_argument("--export", default="text", choices=("text", "db", "both"),
                   help="Ascend layout: text export, torch_npu's DB export only, or both")
    p.add_argument("--trace-mb", type=int, default=0, help="only benchmark streaming a trace_view.json of this size")
    a = p.parse_args()
    if a.trace_mb:
        bench_trace(a.trace_mb)
        return
    if a.shape in SHAPES:
        label = a.label or ("main" if a.repo.resolve() != REPO else "this checkout")
        for n in a.ranks:
            if a.generate_only:
                print(realistic_run(a.cache, n, a.steps or 4, gen=a.gen_version, shape=a.shape))
                continue
            r = bench_realistic(n, a.steps or 4, a.cache, a.repo.resolve(), a.jobs, not a.no_single,
                                a.compare_msprof, a.msreport_args.split(), a.gen_version, a.shape)
            print_realistic(r, label)
        return
    a.steps = a.steps or 20
    for n in a.ranks:
        r = bench(n, a.steps, a.layout, a.jobs or 1, a.keep, a.export)
        stages = " ".join(f"{k}={r[k]:.2f}s" for k in ("generate", "discover", "load", "execution", "analyze",
                                                       "rules", "plan", "write", "single"))
        build = sum(r[k] for k in ("discover", "load", "execution", "analyze", "rules", "plan", "write"))
        print(f"{a.layout}{'' if a.export == 'text' else ' (' + a.export + ')'} ranks={n} steps={a.steps}: build {build:.1f}s ({stages}); site {r['site_mb']:.1f} MB, "
              f"single file {r['single_mb']:.1f} MB, peak RSS {r['rss_mb']:.0f} MB, "
              f"injected slow rank flagged: {r['slow_rank_flagged']}, slow link flagged: {r['slow_link_flagged']}, "
              f"unbalanced stage found: {r['slow_stage_flagged']}, memory near capacity found: "
              f"{r['memory_flagged']}, starving queue found: {r['starving_queue_flagged']}; findings: every "
              f"injection named {r['findings_named']} (missing {r['findings_missing']}), other warnings "
              f"{r['findings_unexpected']}",
              flush=True)


if __name__ == "__main__":
    main()
