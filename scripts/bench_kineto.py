"""Kineto loader throughput and memory: `python scripts/bench_kineto.py --mb 1024 [--gzip]`.

Writes one synthetic Kineto trace of about MB megabytes (the event shapes of `reportgen.synth.kineto`: cpu_op +
cudaLaunchKernel + ac2g flow + kernel + [memory] per kernel, NCCL all-reduces per step), streamed to disk, then
loads it in a fresh process and prints MB/s and the loader process's peak RSS.
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from reportgen.synth.kineto import KERNELS, NCCL_KERNEL


def write_trace(path: Path, mb: int, compress: bool) -> int:
    target = mb * 1_000_000
    opener = (lambda p: gzip.open(p, "wt", encoding="utf-8", compresslevel=1)) if compress else \
        (lambda p: open(p, "w", encoding="utf-8"))
    raw = 0
    with opener(path) as f:
        head = ('{\n  "schemaVersion": 1,\n  "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB", '
                '"totalGlobalMem": 85899345920}],\n  "distributedInfo": {"backend": "nccl", "rank": 0, '
                '"world_size": 8, "pg_count": 1, "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", '
                '"pg_size": 8, "ranks": [0, 1, 2, 3, 4, 5, 6, 7]}]},\n  "host_name": "node000",\n'
                '  "traceEvents": [\n')
        f.write(head)
        raw += len(head)
        t, corr, step, first = 5e9, 1, 1, True
        while raw < target:
            evs = []
            start = t
            for i in range(2000):
                op, k, _ = KERNELS[i % len(KERNELS)]
                evs.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 9, "tid": 9, "ts": round(t - 40, 3),
                            "dur": 18.5, "args": {"External id": corr, "Record function id": 0}})
                evs.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9,
                            "ts": round(t - 36, 3), "dur": 9.2, "args": {"correlation": corr, "cbid": 211}})
                evs.append({"ph": "s", "id": corr, "pid": 9, "tid": 9, "ts": round(t - 36, 3), "cat": "ac2g",
                            "name": "ac2g"})
                evs.append({"ph": "X", "cat": "kernel", "name": k, "pid": 0, "tid": 7, "ts": round(t, 3),
                            "dur": 55.125, "args": {"device": 0, "stream": 7, "correlation": corr,
                                                    "grid": [216, 1, 1], "block": [128, 1, 1]}})
                evs.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 9, "tid": 9,
                            "ts": round(t - 39, 3), "args": {"Total Reserved": 6e10, "Total Allocated": 4e10 + i,
                                                             "Bytes": 1024, "Device Id": 0, "Device Type": 1}})
                t += 60.0
                corr += 1
            evs.append({"ph": "X", "cat": "kernel", "name": NCCL_KERNEL, "pid": 0, "tid": 20, "ts": round(t, 3),
                        "dur": 5000.0, "args": {"device": 0, "stream": 20, "Collective name": "allreduce",
                                                "Process Group Name": "0"}})
            t += 5000.0
            evs.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 9, "tid": 9,
                        "ts": round(start - 100, 3), "dur": round(t - start + 100, 3)})
            step += 1
            text = ("" if first else ",\n") + ",\n".join(json.dumps(e) for e in evs)
            first = False
            f.write(text)
            raw += len(text)
        tail = '\n  ],\n  "displayTimeUnit": "ms"\n}\n'
        f.write(tail)
        raw += len(tail)
    return raw


LOAD = """
import resource, sys, time
from pathlib import Path
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.kineto import load_kineto
from reportgen.model import RankData, RankInfo
p = Path(sys.argv[1])
t0 = time.perf_counter()
d = RankData(info=RankInfo(rank=0, source_dir="."))
k = load_kineto(p, d, IssueLog(p.parent))
dt = time.perf_counter() - t0
print(dt, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, len(k.step_trace.steps),
      int(k.operators.by_type["count"].sum()))
"""


def bench_run(ranks: int, layout: str, jobs: int) -> None:
    from reportgen.synth import generate_run

    tmp = Path(tempfile.mkdtemp(prefix="kineto-run-bench-"))
    t0 = time.perf_counter()
    run = generate_run(tmp / "run", layout=layout, ranks=ranks, steps=10, seed=1,
                       inject=[f"slow-rank:{ranks // 3}"])
    size = sum(f.stat().st_size for f in run.rglob("*") if f.is_file())
    print(f"{layout}: {ranks} ranks, {size / 1e6:.0f} MB written in {time.perf_counter() - t0:.0f} s")
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", "import resource, sys; from reportgen.cli import main; "
                          "rc = main(sys.argv[1:]); "
                          "print('RSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "
                          "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)",
                          str(run), "-o", str(tmp / "report"), "-j", str(jobs), "-q"],
                         capture_output=True, text=True)
    dt = time.perf_counter() - t0
    rss = [ln for ln in out.stdout.splitlines() if ln.startswith("RSS")]
    summary = json.loads((tmp / "report" / "summary.json").read_text())
    found = [(f["id"], f.get("ranks")) for f in summary["findings"] if f["severity"] in ("warning", "critical")]
    print(f"report in {dt:.0f} s (rc {out.returncode}), peak RSS main/children MB: {rss[0][4:] if rss else '?'}; "
          f"warnings/criticals: {found}")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mb", type=int, default=1024)
    p.add_argument("--gzip", action="store_true")
    p.add_argument("--keep", help="write the trace here instead of a temporary folder")
    p.add_argument("--run-ranks", type=int, default=0,
                   help="instead: time a whole report on a synthetic run of this many ranks (--layout)")
    p.add_argument("--layout", default="kineto", choices=("kineto", "mindspore_gpu"))
    p.add_argument("--jobs", type=int, default=2)
    a = p.parse_args()
    if a.run_ranks:
        return bench_run(a.run_ranks, a.layout, a.jobs)
    tmp = Path(a.keep or tempfile.mkdtemp(prefix="kineto-bench-"))
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / ("big.pt.trace.json" + (".gz" if a.gzip else ""))
    t0 = time.perf_counter()
    raw = write_trace(path, a.mb, a.gzip)
    print(f"wrote {raw / 1e6:.0f} MB of JSON ({path.stat().st_size / 1e6:.0f} MB on disk) in "
          f"{time.perf_counter() - t0:.0f} s")
    out = subprocess.run([sys.executable, "-c", LOAD, str(path)], capture_output=True, text=True, check=True)
    dt, rss, steps, events = out.stdout.split()
    print(f"loaded {steps} steps, {events} device/host events counted in operators: {float(dt):.1f} s, "
          f"{raw / 1e6 / float(dt):.1f} MB/s of JSON, peak RSS {float(rss):.0f} MB")
    if not a.keep:
        path.unlink()



if __name__ == "__main__":
    main()
