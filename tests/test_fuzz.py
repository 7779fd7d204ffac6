"""Fuzz suite: damaged and hostile input never crashes, hangs, reads outside the run or loses data silently.

A seeded mutation generator of our own takes a small clean run of every input family available (synthetic Ascend
and MindInsight layouts; real samples when present: MindSpore CPU, torch gloo, msprof PROF, DB export) and applies,
to one file of each file family (one rank's copy), one mutation per case: empty, truncated (mid-row, mid-JSON),
binary garbage, invalid UTF-8, BOM, CRLF, wrong / reordered / missing headers, extra columns, non-finite and huge
numbers, text in numeric columns, negative durations, duplicated rows, deep nesting, a directory / FIFO / symlink
(out of the run, loop) in place of the file; plus odd folder names (spaces, unicode, HTML). Every case runs the CLI
in a subprocess with a timeout and an audit hook that records every file opened outside the run. A case fails on:

* crash: exit code other than 0 / 2, or a traceback;
* hang: the time bound is exceeded (FIFOs included);
* outside read: a file outside the run folder was opened;
* silent loss: an undamaged rank's numbers changed or the rank vanished; or the damaged rank's numbers changed
  (or it vanished) while `summary.json`'s `data_quality` does not name the damaged file; or a benign variant
  (BOM, CRLF, extra / reordered columns, odd names) changed any number. The stricter oracle (issue 30) compares
  every number of `summary.json`, every CSV of the damaged rank and the text of its page against the clean
  build (`snapshot`): any difference with no data-quality entry naming the file is a silent loss.

Value mutations (issue 30): set A (impossible values, present-but-empty tables, duplicated rows / entries /
steps, schema drift) and set B, written apart (other values and keys, the family's other copy), damage one value
of a file that still parses; "run" duplicates a rank folder. Set C (`tests/fuzz_set_c.py`) is a second generator
written apart from both (other operators and values, another seed, the family's third copy, SQLite and gzip
inputs) with bases of its own (real traces from other teams, 3-rank synthetic runs).

CI's fuzz stage (`python -m pytest -m fuzz tests/test_fuzz.py`) is one planned pass, `test_fuzz_sweep`: every set
over every base, each base's clean build made once, identical inputs once (`dedupe`), one case per base, file
family and class (`stratify`: the mutation turns so that every one still runs somewhere), the cases spread over
the machine's cores. `MSREPORT_FUZZ_FULL=1` runs every case instead. There is no list of tolerated failures.
Standalone, for measurements against any checkout: `python tests/test_fuzz.py --repo PATH [--limit N] [--jobs 2]
[--json OUT]` (results also go, case by case, to OUT with the suffix .jsonl; `--resume` continues a stopped sweep,
`--cases OUT.jsonl --failed` re-runs the failures, `--table OUT.jsonl` prints the class and family tables,
`--fresh` starts a new interpreter per case).

Cases run in children forked from a pre-imported server (`ForkServer`): about 1 s of CPU per case instead of
about 2.5 s for a fresh interpreter that imports pandas / altair each time; the judging is the same.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import queue
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fuzz_set_c  # noqa: E402  (set C: the independent generator)

REPO = Path(__file__).resolve().parents[1]
SAMPLES = Path(os.environ.get("MSREPORT_SAMPLES") or REPO.parent / "shared" / "samples")  # as tests/conftest.py
TIMEOUT_S = 90
SEED = 18

REAL_BASES = {  # name -> sample folder (copied; used when present)
    "mindspore_cpu": "real/mindspore_cpu_legacy_graph_minddata",
    "torch_gloo": "real/torch_gloo_4rank",
    "msprof_prof": "mindinsight/msprof_raw_2rank_10iter",
    "db_export": "ascend/msinsight_pytorch_2rank_level1_db",
    "ascend_text": "ascend/msinsight_pytorch_2rank_level0_text",
}
SYNTH_BASES = {  # name -> generate_run keyword arguments (every layout and export the generator makes)
    "synth_ascend": dict(layout="ascend", trace_view=True),
    "synth_mindinsight": dict(layout="mindinsight"),
    "synth_db": dict(layout="ascend", export="db"),
    "synth_kineto": dict(layout="kineto"),
    "synth_mindspore_gpu": dict(layout="mindspore_gpu"),
}

BENIGN = {"bom", "crlf", "extra_column", "reordered_columns", "odd_names"}

# --- the driver run for every case: CLI + an audit hook recording opens outside the run --------------------
#
# Two ways to start it, judged identically:
# * "fork" (default): one server process per job imports reportgen (and the third-party modules it uses) once,
#   then forks a child per case. The child leaves the server loop and runs DRIVER_CASE at module level, exactly
#   as a fresh interpreter would (same audit hook, `sys.exit(main())`, normal interpreter shutdown: atexit,
#   uncaught exception -> traceback on stderr and exit 1). The server enforces the time bound with SIGKILL on the
#   child's process group and reports the exit code; stderr goes to a file the harness reads (traceback detection
#   unchanged). Saves the ~1-2 s of imports per case.
# * "fresh": a new `python -c DRIVER` per case (the original harness; `--fresh`), for comparison.

DRIVER_CASE = r"""
import os, sys
run, outside_log = sys.argv[1], sys.argv[2]
root = os.path.realpath(run)
outside = os.environ.get("FUZZ_OUTSIDE", "")
seen = set()
def hook(event, args):
    if event in ("open", "os.open", "sqlite3.connect", "sqlite3.connect/handle") and args:
        p = args[0]
        if isinstance(p, (str, bytes, os.PathLike)):
            try:
                p = os.fsdecode(p)
                if outside and os.path.realpath(p).startswith(outside) and p not in seen:
                    seen.add(p)
                    with open(outside_log, "a") as f:
                        f.write(p + "\n")
            except Exception:
                pass
sys.addaudithook(hook)
sys.argv = ["msreport"] + sys.argv[3:]
from reportgen.cli import main
sys.exit(main())
"""
DRIVER = DRIVER_CASE  # the fresh-process driver: argv = run, outside_log, CLI arguments

FORK_SERVER = r"""
import importlib, json, os, pkgutil, select, signal, sys, time
import reportgen, reportgen.cli
for m in pkgutil.walk_packages(reportgen.__path__, "reportgen."):  # every lazy import, done once
    if not m.name.endswith("__main__") and not m.name.startswith(("reportgen.synth", "reportgen.compare")):
        try:
            importlib.import_module(m.name)
        except Exception:
            pass
for name in ("altair", "pandas", "numpy", "jinja2", "markdown", "markupsafe", "sqlite3", "orjson", "pyarrow.csv",
             "jsonschema", "babel"):
    try:
        importlib.import_module(name)
    except Exception:
        pass
# Warm-up, so that a case pays only for its own work: (1) compiled Jinja templates are kept in memory and shared
# by every build (every Environment reportgen makes has the same settings: `site.render.jinja_env.make_env`); (2) one clean
# report of a tiny generated run fills the libraries' own caches (altair's schema validators, the vega bundle).
# Neither changes what a case does with its input: validation still runs on every chart of every case.
import jinja2, shutil, tempfile
class _MemoryBytecodeCache(jinja2.BytecodeCache):
    def __init__(self):
        self.store = {}
    def load_bytecode(self, bucket):
        if bucket.key in self.store:
            bucket.bytecode_from_string(self.store[bucket.key])
    def dump_bytecode(self, bucket):
        self.store[bucket.key] = bucket.bytecode_to_string()
_BYTECODE = _MemoryBytecodeCache()
_env_init = jinja2.Environment.__init__
def _env_init_cached(self, *a, **kw):
    if not a:  # spontaneous environments (jinja2.Template) pass every setting by position
        kw.setdefault("bytecode_cache", _BYTECODE)
    _env_init(self, *a, **kw)
jinja2.Environment.__init__ = _env_init_cached
_warm = tempfile.mkdtemp(prefix="msreport-fuzz-warm-")
try:
    from reportgen.synth import generate_run
    generate_run(os.path.join(_warm, "run"), ranks=2, steps=2, seed=1, layout="ascend", trace_view=True)
    _fd1, _fd2 = os.dup(1), os.dup(2)
    _null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(_null, 1); os.dup2(_null, 2)
    try:
        reportgen.cli.main([os.path.join(_warm, "run"), "-o", os.path.join(_warm, "out"), "-q", "-j", "1"])
    finally:
        sys.stdout.flush(); sys.stderr.flush()
        os.dup2(_fd1, 1); os.dup2(_fd2, 2)
        for _fd in (_fd1, _fd2, _null):
            os.close(_fd)
except Exception:
    pass
finally:
    shutil.rmtree(_warm, ignore_errors=True)
req_in = os.fdopen(os.dup(0), "rb")
reply = os.fdopen(os.dup(1), "w")
req = None
while True:
    line = req_in.readline()
    if not line:
        os._exit(0)
    req = json.loads(line)
    sys.stdout.flush(); sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        break
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass
    t0 = time.monotonic()
    deadline = t0 + req["timeout"]
    rc = None
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    while True:
        wpid, status = os.waitpid(pid, os.WNOHANG)
        if wpid:
            rc = os.waitstatus_to_exitcode(status)
            break
        left = deadline - time.monotonic()
        if left <= 0:
            for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
                try:
                    kill()
                except OSError:
                    pass
            os.waitpid(pid, 0)
            break
        if pidfd is not None:
            select.select([pidfd], [], [], min(left, 5.0))
        else:
            time.sleep(0.02)
    if pidfd is not None:
        os.close(pidfd)
    reply.write(json.dumps({"rc": rc, "seconds": time.monotonic() - t0}) + "\n")
    reply.flush()
# --- the forked child: one case, as a fresh interpreter would run it ---
os.setpgid(0, 0)
req_in.close(); reply.close()
for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, req["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                        (2, req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
    f = os.open(path, flags, 0o644)
    os.dup2(f, fd)
    os.close(f)
sys.stdin = open(0, "r", closefd=False)
sys.argv = ["-c"] + req["argv"]
del req, req_in, reply, line
exec(compile(DRIVER_CASE, "<fuzz-driver>", "exec"))
"""


class ForkServer:
    """One pre-imported interpreter that runs cases in forked children (see FORK_SERVER)."""

    def __init__(self, repo: Path, env: dict):
        code = f"DRIVER_CASE = {DRIVER_CASE!r}\n" + FORK_SERVER
        self.proc = subprocess.Popen([sys.executable, "-c", code], cwd=repo, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)

    def run(self, argv: list[str], stdout: Path, stderr: Path, timeout: float) -> Optional[int]:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps({"argv": argv, "stdout": str(stdout), "stderr": str(stderr),
                                          "timeout": timeout}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"fuzz fork server died (exit {self.proc.poll()})")
        return json.loads(line)["rc"]

    def close(self) -> None:
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


@dataclass
class Case:
    base: str
    mutation: str
    target: str  # path relative to the run root ("" for run-level cases)
    rank: Optional[int]  # the rank that owns the damaged file (None: run-level)
    cls: str = ""  # class in the closing table


@dataclass
class Result:
    case: Case
    rc: Optional[int]
    seconds: float
    crash: bool = False
    hang: bool = False
    outside: bool = False
    silent: bool = False
    named: bool = False
    why: str = ""
    extra: dict = field(default_factory=dict)


# --- base runs ---------------------------------------------------------------------------------------


def make_bases(where: Path, repo: Path = REPO, real: bool = True, c: bool = False) -> dict[str, Path]:
    """Clean runs to mutate: the synthetic layouts (generated with the checkout under test) and real samples;
    with `c`, also set C's own bases (`fuzz_set_c`: other shapes, other real samples)."""
    where.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}
    code = ("import sys, json; sys.path.insert(0, sys.argv[1]); from reportgen.synth import generate_run\n"
            "for name, (n, seed, kw) in json.loads(sys.argv[3]).items():\n"
            "    generate_run(sys.argv[2] + '/' + name, ranks=n, steps=3, seed=seed, **kw)")
    synth = {name: (2, 3, kw) for name, kw in SYNTH_BASES.items()}
    if c:
        synth.update({name: (3, 11, kw) for name, kw in fuzz_set_c.SYNTH_BASES_C.items()})
    subprocess.run([sys.executable, "-c", code, str(repo), str(where), json.dumps(synth)],
                   check=True, cwd=repo, timeout=300)
    out.update({name: where / name for name in synth})
    if real and SAMPLES.exists():
        for name, rel in {**REAL_BASES, **(fuzz_set_c.REAL_BASES_C if c else {})}.items():
            src = SAMPLES / rel
            if src.is_dir():
                shutil.copytree(src, where / name, symlinks=True)
                out[name] = where / name
    return out


def _rank_files(run: Path) -> dict[Path, Optional[int]]:
    """Every file the discovery recognises, with the rank that owns it (None: run-level)."""
    sys.path.insert(0, str(REPO))
    from reportgen.layouts import discover

    owners: dict[Path, set] = {}
    layouts = discover(run)
    for lay in layouts:
        for r, rf in lay.ranks.items():
            for paths in rf.files.values():
                for p in paths:
                    p = Path(p)
                    if p.is_dir():
                        for q in p.rglob("*"):
                            if q.is_file():
                                owners.setdefault(q, set()).add(r)
                    elif p.is_file():
                        owners.setdefault(p, set()).add(r)
        for paths in lay.run_files.values():
            for p in paths:
                if Path(p).is_file():
                    owners.setdefault(Path(p), set())
    return {p: (min(rs) if len(rs) == 1 else None) for p, rs in owners.items()}


def family(name: str) -> str:
    return re.sub(r"\d+", "#", name)


# --- mutations (bytes in, bytes out; None: not applicable) --------------------------------------------

_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NUM = re.compile(rb"(?<![\w.\"])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.\"])")


def _csv_rows(data: bytes) -> Optional[list[list[str]]]:
    try:
        text = data.decode("utf-8-sig")
        rows = list(csv.reader(io.StringIO(text)))
    except (UnicodeDecodeError, csv.Error):
        return None
    rows = [r for r in rows if r]
    return rows if len(rows) >= 2 else None


def _csv_bytes(rows: list[list[str]]) -> bytes:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue().encode("utf-8")


def _numeric_cells(rows: list[list[str]]) -> list[tuple[int, int]]:
    out = []
    for i, row in enumerate(rows[1:], 1):
        for j, c in enumerate(row):
            try:
                v = float(c.strip())
            except ValueError:
                continue
            if math.isfinite(v) and j < len(rows[0]):
                out.append((i, j))
    return out


def _set_number(data: bytes, kind: str, ext: str, rng: random.Random, token: str) -> Optional[bytes]:
    if ext == ".csv":
        rows = _csv_rows(data)
        if rows is None:
            return None
        cells = _numeric_cells(rows)
        if kind == "negative":
            pref = [(i, j) for i, j in cells if re.search(r"dur|time|cost", rows[0][j], re.I)]
            cells = pref or cells
            cells = [(i, j) for i, j in cells if float(rows[i][j]) > 0]
        if not cells:
            return None
        i, j = rng.choice(cells)
        rows[i][j] = ("-" + rows[i][j].strip()) if kind == "negative" else token
        return _csv_bytes(rows)
    nums = [m for m in _NUM.finditer(data) if not m.group().startswith(b"-")]
    if kind == "negative":  # (as for a CSV: "-0" is zero, not a negative value)
        nums = [m for m in nums if float(m.group()) > 0]
    if ext == ".json":  # a JSON number, not digits inside a string ("utilization of 0.0%": text, shown as written)
        inside = [(q.start(), q.end()) for q in _JSON_STRING.finditer(data)]
        starts = [a for a, _ in inside]
        import bisect

        def in_string(pos: int) -> bool:
            i = bisect.bisect_right(starts, pos) - 1
            return i >= 0 and inside[i][0] < pos < inside[i][1]

        nums = [m for m in nums if not in_string(m.start())]
    if not nums:
        return None
    m = rng.choice(nums[: max(1, min(len(nums), 400))])
    if kind == "negative":
        new = b"-" + m.group()
    elif ext == ".json":
        new = {"inf": b"Infinity", "nan": b"NaN", "huge": b"1e400", "digits": b"9" * 30, "text": b'"abc"'}[kind]
    else:
        new = token.encode()
    return data[:m.start()] + new + data[m.end():]


def mutate(data: bytes, mutation: str, ext: str, rng: random.Random) -> Optional[bytes]:
    text_like = ext in (".csv", ".txt", ".json")
    if mutation == "empty":
        return b""
    if mutation == "truncated":
        if len(data) < 8:
            return None
        if ext == ".csv":
            end = data.rstrip(b"\r\n")
            last = end.rfind(b"\n")
            if last < 0 or len(end) - last < 4:
                return data[: len(data) * 3 // 5]
            return end[: last + 1 + (len(end) - last - 1) // 2]
        return data[: len(data) * 3 // 5]
    if mutation == "binary":
        return bytes(rng.getrandbits(8) for _ in range(min(len(data), 4096) or 64)) + b"\x00" * 16
    if mutation == "invalid_utf8":
        if not text_like or len(data) < 4:
            return None
        k = data.find(b"\n") + 1 or len(data) // 2
        k = data.find(b",", k) + 1 or k
        return data[:k] + b"\xff\xfe\xc3(\x80" + data[k:]
    if mutation == "bom":
        return b"\xef\xbb\xbf" + data if text_like and not data.startswith(b"\xef\xbb\xbf") else None
    if mutation == "crlf":
        return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n") if text_like and b"\n" in data else None
    if mutation in ("inf", "nan", "huge", "digits", "text", "negative"):
        if not text_like:
            return None
        token = {"inf": "inf", "nan": "nan", "huge": "1e400", "digits": "9" * 30, "text": "abc",
                 "negative": ""}[mutation]
        return _set_number(data, mutation, ext, rng, token)
    if ext == ".csv":
        rows = _csv_rows(data)
        if rows is None:
            return None
        if mutation == "wrong_headers":
            rows[0] = [f"col{i}" for i in range(len(rows[0]))]
        elif mutation == "reordered_columns":
            if len(rows[0]) < 2:
                return None
            rows = [list(reversed(r)) for r in rows]
        elif mutation == "missing_header":
            rows = rows[1:]
        elif mutation == "extra_column":
            rows = [r[:1] + (["extra_col"] if i == 0 else ["x"]) + r[1:] for i, r in enumerate(rows)]
        elif mutation == "duplicated_rows":
            rows = rows[:2] + [list(rows[1])] + rows[2:]
        else:
            return None
        return _csv_bytes(rows)
    if mutation == "duplicated_rows" and ext == ".txt":
        lines = data.split(b"\n")
        if len(lines) < 3:
            return None
        return b"\n".join(lines[:2] + [lines[1]] + lines[2:])
    if mutation == "deep_nesting" and ext == ".json":
        depth = 200_000
        if data.lstrip().startswith(b"{"):
            return b'{"traceEvents": ' + b"[" * depth + b"]" * depth + b"}"
        return b"[" * depth + b"]" * depth
    return None


FILE_MUTATIONS = ["empty", "truncated", "binary", "invalid_utf8", "bom", "crlf", "wrong_headers",
                  "reordered_columns", "missing_header", "extra_column", "inf", "nan", "huge", "digits", "text",
                  "negative", "duplicated_rows", "deep_nesting"]
PLACE_MUTATIONS = ["directory", "fifo", "symlink_out", "symlink_loop"]
# groups of mutations that test the same reader path: the sweep takes one per family, in turn ("all-file": all)
ROTATE = [("inf", "huge", "nan", "digits"), ("bom", "crlf"), ("reordered_columns", "extra_column")]
CLASS_OF = {
    "empty": "empty / truncated", "truncated": "empty / truncated", "binary": "binary garbage / invalid UTF-8",
    "invalid_utf8": "binary garbage / invalid UTF-8", "bom": "BOM / CRLF", "crlf": "BOM / CRLF",
    "wrong_headers": "wrong / reordered / missing headers, extra columns",
    "reordered_columns": "wrong / reordered / missing headers, extra columns",
    "missing_header": "wrong / reordered / missing headers, extra columns",
    "extra_column": "wrong / reordered / missing headers, extra columns",
    "inf": "non-finite / huge numbers, text in numbers", "nan": "non-finite / huge numbers, text in numbers",
    "huge": "non-finite / huge numbers, text in numbers", "digits": "non-finite / huge numbers, text in numbers",
    "text": "non-finite / huge numbers, text in numbers", "negative": "negative durations / duplicated rows",
    "duplicated_rows": "negative durations / duplicated rows", "deep_nesting": "deep nesting",
    "directory": "directory / FIFO in place of a file", "fifo": "directory / FIFO in place of a file",
    "symlink_out": "symlinks (out of the run, loops)", "symlink_loop": "symlinks (out of the run, loops)",
    "odd_names": "odd file names",
}


# --- value mutations: one damaged value (or row, key, entry) in a file that still parses ----------------------
#
# Two sets written apart. Set "A" follows the classes of issue 30 (impossible values, present-but-empty tables,
# duplicated rows and entries, schema drift); set "B" damages other values in other ways (other numbers, other
# keys, the family's other copy): a product tuned to set A's exact values still has to name set B's.

# a percentage's name ("Ratio(%)", "percent", "FLOPS_Utilization"), not "Duration" or "iteration" (which hold
# "ratio"): changing a duration to 250 is a plausible value, not a damaged one
PERCENT_NAME = r"%|percent|(?<![a-z])ratio|util|proportion"
# an id the writers set to -1 for "none" (a task with no launch, the root operator, the CPU device): -1 there is a
# value real files hold, not damage (set B's "minus one" leaves them alone)
SENTINEL_ID = re.compile(r"(^|_|\s)id$|Id$|connection", re.I)


def _json_load(data: bytes):
    try:
        return json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


def _json_slots(v, path=()):
    """(container path, key, value) of every value inside a JSON document (depth-first, bounded)."""
    out = []
    stack = [(v, path)]
    while stack and len(out) < 200_000:
        cur, pth = stack.pop()
        items = cur.items() if isinstance(cur, dict) else enumerate(cur) if isinstance(cur, list) else ()
        for k, x in items:
            out.append((pth, k, x))
            if isinstance(x, (dict, list)):
                stack.append((x, pth + (k,)))
    return out


def _json_get(doc, pth):
    for k in pth:
        doc = doc[k]
    return doc


def _num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _num_text(x) -> bool:
    return isinstance(x, str) and bool(re.fullmatch(r"-?\d+(\.\d+)?", x.strip()))


def mutate_json_value(data: bytes, mutation: str, rng: random.Random) -> Optional[bytes]:
    doc = _json_load(data)
    if not isinstance(doc, (dict, list)):
        return None
    slots = _json_slots(doc)
    numbers = [(p, k) for p, k, x in slots if (_num(x) and x > 0) or _num_text(x)]
    lists = [(p, k) for p, k, x in slots if isinstance(x, list) and x]
    dict_lists = [(p, k) for p, k, x in slots if isinstance(x, list) and any(isinstance(e, dict) for e in x)]
    keyed = [(p, k) for p, k, x in slots if isinstance(k, str) and (_num(x) or _num_text(x) or isinstance(x, str))]
    if isinstance(doc, list) and any(isinstance(e, dict) for e in doc):
        dict_lists.append(((), None))

    def pick(xs):
        return rng.choice(xs) if xs else None

    if mutation in ("j_null", "j_negative", "j_text", "j_string_number", "j_bool", "j_minus_one", "j_list_number",
                    "j_percent"):
        pool = numbers
        if mutation == "j_minus_one":  # -1 is the writers' own "none" for an id (connection_id, parent_id, Device Id)
            pool = [(p, k) for p, k in numbers if not (isinstance(k, str) and SENTINEL_ID.search(k))]
        if mutation == "j_percent":
            pool = [(p, k) for p, k in numbers if isinstance(k, str) and re.search(PERCENT_NAME, k, re.I)]
        at = pick(pool)
        if at is None:
            return None
        p, k = at
        parent = _json_get(doc, p)
        x = parent[k]
        v = float(x) if isinstance(x, str) else x
        parent[k] = {"j_null": None, "j_negative": -abs(v) - 1, "j_text": "n/a", "j_string_number": str(x),
                     "j_bool": True, "j_minus_one": -1, "j_list_number": [x], "j_percent": 250}[mutation]
        if mutation == "j_string_number" and isinstance(x, str):
            parent[k] = v  # a number written as text becomes a bare number: also a type change
    elif mutation == "j_object_for_list":
        at = pick(lists)
        if at is None:
            return None
        p, k = at
        _json_get(doc, p)[k] = {"0": _json_get(doc, p)[k][0]}
    elif mutation in ("j_drop_key", "j_rename_key"):
        at = pick(keyed)
        if at is None:
            return None
        p, k = at
        parent = _json_get(doc, p)
        v = parent.pop(k)
        if mutation == "j_rename_key":
            parent[k + "_renamed"] = v
    elif mutation in ("j_dup_entry", "j_dup_last_entry"):
        at = pick(dict_lists)
        if at is None:
            return None
        p, k = at
        lst = doc if k is None else _json_get(doc, p)[k]
        idx = [i for i, e in enumerate(lst) if isinstance(e, dict)]
        i = idx[-1] if mutation == "j_dup_last_entry" else rng.choice(idx)
        lst.insert(i + 1, json.loads(json.dumps(lst[i])))
    elif mutation in ("j_empty", "j_empty_inner"):
        if mutation == "j_empty":
            doc = {} if isinstance(doc, dict) else []
        else:
            at = pick(lists + [(p, k) for p, k, x in slots if isinstance(x, dict) and x])
            if at is None:
                return None
            p, k = at
            parent = _json_get(doc, p)
            parent[k] = type(parent[k])()
    elif mutation == "j_huge_string":
        at = pick([(p, k) for p, k, x in slots if isinstance(x, str)])
        if at is None:
            return None
        p, k = at
        _json_get(doc, p)[k] = "x" * (3 * 1024 * 1024)
    else:
        return None
    return json.dumps(doc).encode("utf-8")


def mutate_csv_value(data: bytes, mutation: str, rng: random.Random) -> Optional[bytes]:
    rows = _csv_rows(data)
    if rows is None:
        return None
    head = rows[0]
    cells = _numeric_cells(rows)
    if mutation in ("c_header_only", "c_header_blank_lines"):
        return _csv_bytes([head]) + (b"\n\n\n" if mutation == "c_header_blank_lines" else b"")
    if mutation in ("c_negative_any", "c_minus_one", "c_null", "c_percent", "c_float_count"):
        pool = [(i, j) for i, j in cells if float(rows[i][j]) > 0]
        if mutation in ("c_negative_any", "c_minus_one"):  # a value that is not a duration: counts, sizes, ...
            pool = [(i, j) for i, j in pool if not re.search(r"dur|time|cost|elapse", rows[0][j], re.I)] or pool
        if mutation == "c_minus_one":
            pool = [(i, j) for i, j in pool if not SENTINEL_ID.search(rows[0][j])]
        if mutation == "c_percent":
            pool = [(i, j) for i, j in pool if re.search(PERCENT_NAME, rows[0][j], re.I)]
        if mutation == "c_float_count":
            pool = [(i, j) for i, j in pool if re.search(r"count|num|id$|occurr|freq", rows[0][j], re.I)
                    and re.fullmatch(r"\d+", rows[i][j].strip())]
        if not pool:
            return None
        i, j = rng.choice(pool)
        v = rows[i][j].strip()
        rows[i][j] = {"c_negative_any": "-" + v, "c_minus_one": "-1", "c_null": "null", "c_percent": "250",
                      "c_float_count": v + ".5"}[mutation]
        return _csv_bytes(rows)
    if mutation in ("c_drop_column", "c_rename_column"):
        cols = sorted({j for _, j in cells}) or list(range(len(head)))
        j = rng.choice(cols)
        if mutation == "c_rename_column":
            rows[0][j] = rows[0][j] + "_renamed"
            return _csv_bytes(rows)
        return _csv_bytes([r[:j] + r[j + 1:] for r in rows])
    if mutation in ("c_dup_row", "c_dup_last_row"):
        if len(rows) < 2:
            return None
        i = len(rows) - 1 if mutation == "c_dup_last_row" else rng.randrange(1, len(rows))
        return _csv_bytes(rows[:i + 1] + [list(rows[i])] + rows[i + 1:])
    if mutation == "c_huge_field":
        i = rng.randrange(1, len(rows))
        j = rng.randrange(len(rows[i]))
        rows[i][j] = "y" * (2 * 1024 * 1024)
        return _csv_bytes(rows)
    if mutation == "c_dup_step":  # a second row with the same step number and other figures
        sj = next((j for j, h in enumerate(head) if re.fullmatch(r"(step|step_num|iteration_id|iteration|"
                                                                     r"step id|step_id)", h.strip(), re.I)), None)
        if sj is None:
            return None
        pool = [i for i in range(1, len(rows)) if sj < len(rows[i]) and re.fullmatch(r"\d+", rows[i][sj].strip())]
        steps = [rows[i][sj].strip() for i in pool]
        if not pool or len(set(steps)) != len(steps):
            return None  # only tables with one row per step (kernel_details has many rows a step: no conflict)
        i = rng.choice(pool)
        dup = list(rows[i])
        for j, c in enumerate(dup):
            if j != sj and re.fullmatch(r"\d+(\.\d+)?", c.strip()) and float(c) > 0:
                dup[j] = str(float(c) * 2)
        return _csv_bytes(rows[:i + 1] + [dup] + rows[i + 1:])
    if mutation == "c_cut_rows":  # cut at a line end, mid-file (the rows after it lost; no partial row)
        lines = data.splitlines(keepends=True)
        if len(lines) < 4:
            return None
        return b"".join(lines[: max(2, len(lines) * 2 // 3)])
    return None


VALUE_MUTATIONS_A = ["j_null", "j_negative", "j_text", "j_string_number", "j_object_for_list", "j_drop_key",
                     "j_dup_entry", "j_empty", "c_header_only", "c_negative_any", "c_drop_column", "c_dup_row",
                     "c_huge_field", "c_percent", "c_dup_step"]
VALUE_MUTATIONS_B = ["j_bool", "j_minus_one", "j_list_number", "j_rename_key", "j_dup_last_entry", "j_empty_inner",
                     "j_huge_string", "j_percent", "c_header_blank_lines", "c_minus_one", "c_null", "c_rename_column",
                     "c_dup_last_row", "c_float_count"]
RUN_MUTATIONS = ["dup_rank_folder"]
VALUE_CLASS = {
    "j_null": "impossible values", "j_negative": "impossible values", "j_text": "impossible values",
    "j_bool": "impossible values", "j_minus_one": "impossible values", "j_percent": "impossible values",
    "c_negative_any": "impossible values", "c_minus_one": "impossible values", "c_null": "impossible values",
    "c_percent": "impossible values", "c_float_count": "impossible values",
    "j_empty": "present but empty", "j_empty_inner": "present but empty", "c_header_only": "present but empty",
    "c_header_blank_lines": "present but empty",
    "j_dup_entry": "duplicates and conflicts", "j_dup_last_entry": "duplicates and conflicts",
    "c_dup_row": "duplicates and conflicts", "c_dup_last_row": "duplicates and conflicts",
    "dup_rank_folder": "duplicates and conflicts", "c_dup_step": "duplicates and conflicts",
    "j_string_number": "schema drift", "j_object_for_list": "schema drift", "j_drop_key": "schema drift",
    "j_list_number": "schema drift", "j_rename_key": "schema drift", "j_huge_string": "schema drift",
    "c_drop_column": "schema drift", "c_rename_column": "schema drift", "c_huge_field": "schema drift",
}
CLASS_OF.update(VALUE_CLASS)
CLASS_OF.update(fuzz_set_c.CLASS_C)
VALUE_MUTATIONS = VALUE_MUTATIONS_A + VALUE_MUTATIONS_B


def mutate_value(data: bytes, mutation: str, ext: str, rng: random.Random) -> Optional[bytes]:
    if mutation.startswith("j_") and (ext == ".json" or re.search(rb"^\s*[\[{]", data[:64])):
        if len(data) > 64 * 1024 * 1024:
            return None
        return mutate_json_value(data, mutation, rng)
    if mutation.startswith("c_") and ext == ".csv":
        return mutate_csv_value(data, mutation, rng)
    return None


def plan_cases(bases: dict[str, Path], seed: int = SEED, sets: tuple[str, ...] = ("file", "place")) -> list[Case]:
    """Every applicable (base, family, mutation), one file per family (a seeded choice of its copies). `sets`:
    "file" (FILE_MUTATIONS, one of each ROTATE group per family in turn; "all-file": every one), "place" (one
    of PLACE_MUTATIONS per family in turn, and odd names; "all-place": all four per family), "A" / "B" (the two
    value-mutation sets; set B damages the family's other copy where there is one) and "run" (a duplicated rank
    folder)."""
    rng = random.Random(seed)
    rng_c = random.Random(fuzz_set_c.SEED_C)
    cases: list[Case] = []
    for name, run in bases.items():
        files = _rank_files(run)
        fams: dict[str, list[Path]] = {}
        for p in sorted(files):
            fams.setdefault(family(p.relative_to(run).as_posix()), []).append(p)
        only_c = name in fuzz_set_c.REAL_BASES_C or name in fuzz_set_c.SYNTH_BASES_C  # set C's own bases
        for n_fam, (fam, paths) in enumerate(sorted(fams.items()) if not only_c else ()):
            i = rng.randrange(len(paths))
            for which, muts in (("file", FILE_MUTATIONS), ("place", PLACE_MUTATIONS), ("A", VALUE_MUTATIONS_A),
                                ("B", VALUE_MUTATIONS_B)):
                if which not in sets and f"all-{which}" not in sets:
                    continue
                p = paths[(i + 1) % len(paths)] if which == "B" else paths[i]
                rel = p.relative_to(run).as_posix()
                if which == "place":  # one of the four per family, in turn (each kind covers a quarter of them)
                    m = muts[n_fam % len(muts)] if "all-place" not in sets else None
                    cases.extend(Case(name, x, rel, files[p], CLASS_OF[x]) for x in muts if m is None or x == m)
                    continue
                try:
                    data = p.read_bytes()
                except OSError:
                    continue
                for m in muts:
                    grp = next((g for g in ROTATE if m in g), None)
                    if grp is not None and which == "file" and "all-file" not in sets and \
                            m != grp[n_fam % len(grp)]:
                        continue  # one of a group of equivalent mutations per family, in turn
                    rs = random.Random(f"{seed}:{rel}:{m}")
                    new = (mutate(data, m, p.suffix.lower(), rs) if which == "file" else
                           mutate_value(data, m, p.suffix.lower(), rs))
                    if new is not None and new != data:
                        cases.append(Case(name, m, rel, files[p], CLASS_OF[m]))
        if "C" in sets and (name in fuzz_set_c.REAL_BASES_C or name in fuzz_set_c.SYNTH_BASES_C):
            for fam, paths in sorted(fams.items()):  # the family's third copy where there is one
                p = paths[(rng_c.randrange(len(paths)) + 2) % len(paths)]
                rel = p.relative_to(run).as_posix()
                for m in fuzz_set_c.MUTATIONS_C:
                    if fuzz_set_c.applies(p, m, rel):
                        cases.append(Case(name, m, rel, files[p], fuzz_set_c.CLASS_C[m]))
        if ("place" in sets or "all-place" in sets) and not only_c:
            cases.append(Case(name, "odd_names", "", None, CLASS_OF["odd_names"]))
        if "run" in sets and not only_c:
            for r, d in sorted(_rank_dirs(run).items()):
                cases.append(Case(name, "dup_rank_folder", d, r, CLASS_OF["dup_rank_folder"]))
                break
    return cases


def _rank_dirs(run: Path) -> dict[int, str]:
    """rank -> its own folder (relative to the run), for ranks that have one below the run folder."""
    sys.path.insert(0, str(REPO))
    from reportgen.layouts import discover

    out = {}
    for lay in discover(run):
        dirs = [Path(rf.dir) for rf in lay.ranks.values()]
        for r, rf in lay.ranks.items():
            d = Path(rf.dir)
            if d != run and d.is_dir() and dirs.count(d) == 1:
                out[r] = d.relative_to(run).as_posix()
    return out


ODD = "run ü 名 <img src=x onerror=alert(1)> [x](javascript:alert(1))"


def apply_case(case: Case, base: Path, work: Path, outside: Path, seed: int = SEED) -> Path:
    """Copy the clean run into `work` and damage it; return the run folder to report on."""
    run = work / ("run" if case.mutation != "odd_names" else ODD)
    shutil.copytree(base, run, symlinks=True)
    if case.mutation == "odd_names":
        for d in sorted((p for p in run.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            # the profilers' own fixed folder names are layout, not names a user picks: renaming msprof's
            # `device_N/timeline` (or `summary`) is a different, broken export (the report then says in its coverage
            # gaps that no step trace was found), not an odd name
            if d.name in ("profiler", "ASCEND_PROFILER_OUTPUT", "FRAMEWORK", "timeline", "summary") or \
                    "ascend" in d.name or \
                    d.name.startswith("PROF_") or d.name.startswith("device_") or re.search(r"\d", d.name):
                continue
            d.rename(d.with_name(d.name + " ü <b>x<i>&amp;"))  # no "/": not allowed in a name
        return run
    p = run / case.target
    ext = p.suffix.lower()
    if case.mutation in FILE_MUTATIONS:
        data = p.read_bytes()
        new = mutate(data, case.mutation, ext, random.Random(f"{seed}:{case.target}:{case.mutation}"))
        assert new is not None
        p.write_bytes(new)
    elif case.mutation in VALUE_MUTATIONS:
        data = p.read_bytes()
        new = mutate_value(data, case.mutation, ext, random.Random(f"{seed}:{case.target}:{case.mutation}"))
        assert new is not None
        p.write_bytes(new)
    elif case.mutation in fuzz_set_c.MUTATIONS_C:
        fuzz_set_c.apply(p, case.mutation, case.target)
    elif case.mutation == "dup_rank_folder":  # a second folder with the same rank, its CSVs a third shorter
        dup = p.with_name(p.name + "_dup")
        shutil.copytree(p, dup, symlinks=True)
        for q in dup.rglob("*.csv"):
            if q.is_file() and not q.is_symlink():
                cut = mutate_csv_value(q.read_bytes(), "c_cut_rows", random.Random(seed))
                if cut is not None:
                    q.write_bytes(cut)
    elif case.mutation == "directory":
        p.unlink()
        p.mkdir()
        (p / "inner.txt").write_text("x")
    elif case.mutation == "fifo":
        p.unlink()
        os.mkfifo(p)
    elif case.mutation == "symlink_out":
        secret = outside / f"secret-{abs(hash(case.target)) % 10**8}{ext}"
        shutil.copyfile(p, secret)
        p.unlink()
        p.symlink_to(secret)
    elif case.mutation == "symlink_loop":
        p.unlink()
        p.symlink_to(p.name + ".loop")
        (p.parent / (p.name + ".loop")).symlink_to(p.name)
    return run


# --- running and judging -------------------------------------------------------------------------------


def _env(repo: Path, outside: Path) -> dict:
    env = dict(os.environ, FUZZ_OUTSIDE=os.path.realpath(outside), PYTHONDONTWRITEBYTECODE="1")
    env["PYTHONPATH"] = str(repo)
    return env


def run_cli(run: Path, out: Path, repo: Path, outside: Path, timeout: float = TIMEOUT_S,
            server: Optional[ForkServer] = None) -> tuple:
    """Run the CLI on `run` (in a forked child of `server`, or a fresh interpreter): (rc, stderr, s, reads)."""
    log = out.parent / (out.name + ".outside")
    argv = [str(run), str(log), str(run), "-o", str(out), "-q", "-j", "1"]
    t0 = time.monotonic()
    if server is not None:
        err_file = out.parent / (out.name + ".stderr")
        rc = server.run(argv, out.parent / (out.name + ".stdout"), err_file, timeout)
        err = err_file.read_bytes().decode("utf-8", "replace") if err_file.exists() else ""
    else:
        try:
            p = subprocess.run([sys.executable, "-c", DRIVER, *argv], cwd=repo, env=_env(repo, outside),
                               capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
            rc, err = p.returncode, p.stderr.decode("utf-8", "replace")
        except subprocess.TimeoutExpired as e:
            rc, err = None, (e.stderr or b"").decode("utf-8", "replace")
    secs = time.monotonic() - t0
    outside_reads = log.read_text().split("\n") if log.exists() else []
    return rc, err, secs, [x for x in outside_reads if x]


def numbers(summary: dict, rank: int, with_comm: bool) -> dict:
    m = summary.get("metrics", {})
    keys = ["step_trace", "memory", "flops", "overlap"] + (["communication"] if with_comm else [])
    out = {}
    for k in keys:
        pr = (m.get(k) or {}).get("per_rank") or {}
        v = pr.get(str(rank))
        if isinstance(v, dict):  # values relative to the other ranks are not this rank's own numbers
            v = {a: b for a, b in v.items() if not re.search(r"vs_|_vs|least|most|rank_of|share_of_max", a)}
        out[k] = v
    return out



_SKIP_KEYS = {"generated_at", "tool", "data_quality", "thresholds", "path"}


def flat_numbers(d, prefix: str = "", out: Optional[dict] = None) -> dict:
    """Every number of a JSON value, by path ("metrics.step_trace.per_rank.0.total_ms"); the keys that name the
    build (time, tool, run path, thresholds) and the data-quality list itself are left out."""
    out = {} if out is None else out
    if isinstance(d, dict):
        for k, v in d.items():
            if k in _SKIP_KEYS and prefix.count(".") < 2:
                continue
            flat_numbers(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(d, list):
        for i, v in enumerate(d):
            flat_numbers(v, f"{prefix}[{i}]", out)
    elif isinstance(d, (int, float)) and not isinstance(d, bool):
        out[prefix] = d
    elif d is None:
        out[prefix] = None
    return out


def page_text(path: Path, run: Path) -> str:
    """The visible text of a page (scripts and styles left out), the run folder's path written as <RUN>."""
    from bs4 import BeautifulSoup

    try:
        soup = BeautifulSoup(path.read_text(encoding="utf-8", errors="replace"), "html.parser")
    except OSError:
        return ""
    for x in soup(["script", "style"]):
        x.decompose()
    # a file's size on disk is not a value read from it: a value mutation writes the JSON back without its
    # indentation (the same events, fewer bytes), which the timeline's "Source: x.json (1.0 MB)" shows
    return SIZE_RE.sub("<SIZE>", soup.get_text(" ", strip=True).replace(str(run), "<RUN>"))


SIZE_RE = re.compile(r"\(\d+(?:\.\d+)? ?(?:[kKMGT]i?)?B\)")


def snapshot(out: Path, run: Path, ranks) -> dict:
    """What the stricter oracle compares: every number of summary.json, every CSV of each rank and the text of
    each rank page."""
    try:
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        summary = {}
    snap = {"summary": flat_numbers(summary), "csv": {}, "text": {}}
    for r in ranks:
        d = out / "ranks"
        snap["csv"][r] = {p.name: p.read_text(encoding="utf-8", errors="replace")
                          for p in sorted(d.glob(f"rank-{r}-*.csv"))} if d.is_dir() else {}
        snap["text"][r] = page_text(d / f"rank-{r}.html", run)
    return snap


def _diff_numbers(a: dict, b: dict) -> list[str]:
    keys = sorted(set(a) | set(b))
    return [k for k in keys if k not in a or k not in b or not _close(a[k], b[k])]


def snapshot_diff(now: dict, ref: dict, rank: Optional[int], text: bool = True) -> list[str]:
    """What differs between two snapshots: summary numbers (anywhere), and the CSVs and page text of `rank`
    (of every rank when None)."""
    out = []
    d = _diff_numbers(now["summary"], ref["summary"])
    if d:
        out.append(f"summary.json: {len(d)} number(s) differ (e.g. {d[0]})")
    for r in ([rank] if rank is not None else sorted(ref["csv"])):
        if now["csv"].get(r) != ref["csv"].get(r):
            names = sorted(n for n in set(now["csv"].get(r) or {}) | set(ref["csv"].get(r) or {})
                           if (now["csv"].get(r) or {}).get(n) != (ref["csv"].get(r) or {}).get(n))
            out.append(f"rank {r} CSV differ: {', '.join(names)[:80]}")
        if text and now["text"].get(r) != ref["text"].get(r):
            out.append(f"rank {r} page text differs")
    return out

def _close(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, (int, float)) or isinstance(b, float) and isinstance(a, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a == b


def judge(case: Case, rc, err: str, secs: float, outside_reads: list, out: Path, baseline: dict,
          run: Optional[Path] = None) -> Result:
    r = Result(case, rc, secs)
    r.hang = rc is None
    r.crash = (rc is not None and rc not in (0, 2)) or "Traceback" in err
    r.outside = bool(outside_reads)
    if r.crash:
        r.why = err.strip().splitlines()[-1][:200] if err.strip() else f"exit {rc}"
    if rc != 0:
        if rc == 2 and not r.crash:
            # nothing recognisable: acceptable only when the damage removed the only recognisable file -- never
            # for a benign variant, and never when an undamaged rank of the clean run was there to report
            undamaged = [k for k in baseline.get("ranks") or [] if case.rank is not None and k != case.rank]
            r.silent = bool(baseline.get("ranks")) and case.mutation in BENIGN or bool(undamaged)
            r.why = r.why or ("exit 2" + (f": undamaged rank(s) {undamaged} not reported" if undamaged else ""))
        return r
    try:
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        r.crash = True
        r.why = f"no readable summary.json ({e})"
        return r
    dq = summary.get("data_quality") or []
    name = Path(case.target).name
    r.named = bool(case.target) and any(name in (d.get("file") or "") or case.target in (d.get("problem") or "")
                                        or name in (d.get("problem") or "") for d in dq)
    ranks_now = set(summary.get("run", {}).get("ranks") or [])
    lost = []
    for rank, base_nums in baseline["numbers"].items():
        damaged = case.rank is not None and rank == case.rank
        if case.rank is None and case.mutation not in BENIGN and case.target:
            continue  # a run-level file: judged as a whole below (any difference must name the file)
        if rank not in ranks_now:
            if not damaged or not r.named:
                lost.append(f"rank {rank} vanished")
            continue
        now = numbers(summary, rank, damaged)
        ref = base_nums if damaged else {k: v for k, v in base_nums.items() if k != "communication"}
        if damaged and case.mutation not in BENIGN:
            if not _close(now, ref) and not r.named:
                lost.append(f"rank {rank} (damaged) changed, file not named")
        elif not _close(now, ref):
            lost.append(f"rank {rank} changed")
    # the stricter oracle: every number of summary.json, every CSV of the damaged rank (every rank for a run-level
    # file or a benign variant) and its page's text, against the clean build
    if baseline.get("snap") is not None and run is not None and not lost and (case.mutation in BENIGN or
                                                                               not r.named):
        # (a damaged file named in data quality may change what it likes: nothing to compare then)
        # (only the ranks compared below: the damaged one, every rank for a run-level file or a benign variant)
        snap = snapshot(out, run, [case.rank] if case.rank is not None and case.mutation not in BENIGN
                        else baseline["ranks"])
        # (a benign variant may add a note naming its file -- an extra column ignored -- to the page's data-quality
        # box: its numbers and CSVs must not move, its text only when the file is not named)
        diff = snapshot_diff(snap, baseline["snap"], case.rank if case.mutation not in BENIGN else None,
                             text=case.mutation != "odd_names" and not (case.mutation in BENIGN and r.named))
        if diff and (case.mutation in BENIGN or not r.named):
            lost.append(("benign variant changed: " if case.mutation in BENIGN else "file not named: ")
                        + "; ".join(diff))
    if lost:
        r.silent = True
        r.why = "; ".join(lost)[:300]
    return r


def baseline_of(run: Path, repo: Path, tmp: Path, outside: Path, server: Optional[ForkServer] = None) -> dict:
    tmp.mkdir(parents=True, exist_ok=True)
    out = tmp / "baseline-out"
    copy = tmp / "run"  # the same folder name as the cases' runs (the name shows on the pages)
    shutil.copytree(run, copy, symlinks=True)
    rc, err, secs, _ = run_cli(copy, out, repo, outside, server=server)
    assert rc == 0, f"clean run {run} fails: {err[-2000:]}"
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    ranks = summary["run"]["ranks"]
    snap = snapshot(out, copy, ranks)
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(copy, ignore_errors=True)
    return {"ranks": ranks, "numbers": {r: numbers(summary, r, True) for r in ranks}, "seconds": secs,
            "snap": snap}


def run_cases(cases: list[Case], bases: dict[str, Path], repo: Path, jobs: int = 2,
              progress: Optional[Callable[[Result], None]] = None, fresh: bool = False) -> list[Result]:
    """Run every case (`jobs` at a time); `fresh`: a new interpreter per case instead of the fork server."""
    tmp = Path(tempfile.mkdtemp(prefix="msreport-fuzz-"))
    outside = tmp / "outside"
    outside.mkdir()
    servers: queue.Queue = queue.Queue()
    started: list[ForkServer] = []
    if not fresh:
        for _ in range(max(1, jobs)):
            started.append(ForkServer(repo, _env(repo, outside)))
            servers.put(started[-1])
    try:
        baselines = {}
        for name in sorted({c.base for c in cases}):
            srv = None if fresh else servers.get()
            try:
                baselines[name] = baseline_of(bases[name], repo, tmp / f"b-{name}", outside, srv)
            finally:
                if srv is not None:
                    servers.put(srv)

        def one(i_case):
            i, case = i_case
            work = tmp / f"case-{i}"
            work.mkdir()
            srv = None if fresh else servers.get()
            try:
                run = apply_case(case, bases[case.base], work, outside)
                out = work / "out"
                rc, err, secs, reads = run_cli(run, out, repo, outside, server=srv)
                res = judge(case, rc, err, secs, reads, out, baselines[case.base], run)
            finally:
                if srv is not None:
                    servers.put(srv)
                shutil.rmtree(work, ignore_errors=True)
            if progress:
                progress(res)
            return res

        with ThreadPoolExecutor(max_workers=jobs) as ex:
            return list(ex.map(one, enumerate(cases)))
    finally:
        for srv in started:
            srv.close()
        shutil.rmtree(tmp, ignore_errors=True)


def table(results: list[Result], by: str = "class") -> str:
    """Cases and failures per class (`by="class"`) or per input family, the base run (`by="base"`)."""
    rows: dict[str, list[int]] = {}
    for r in results:
        t = rows.setdefault(r.case.cls if by == "class" else r.case.base, [0, 0, 0, 0, 0])
        t[0] += 1
        t[1] += r.crash
        t[2] += r.hang
        t[3] += r.silent
        t[4] += r.outside
    lines = [f"| {by} | cases | crashes | hangs | silent losses | outside reads |", "|---|---|---|---|---|---|"]
    tot = [0] * 5
    for k in sorted(rows):
        lines.append(f"| {k} | " + " | ".join(str(x) for x in rows[k]) + " |")
        tot = [a + b for a, b in zip(tot, rows[k])]
    lines.append("| **total** | " + " | ".join(str(x) for x in tot) + " |")
    return "\n".join(lines)


def failures(results: list[Result]) -> list[str]:
    return [f"{r.case.base} {r.case.mutation} {r.case.target or '(run)'}: "
            f"{'crash ' if r.crash else ''}{'hang ' if r.hang else ''}{'outside-read ' if r.outside else ''}"
            f"{'silent-loss ' if r.silent else ''}{r.why}"
            for r in results if r.crash or r.hang or r.outside or r.silent]


# --- pytest ---------------------------------------------------------------------------------------------



@pytest.fixture(scope="module")
def synth_bases(tmp_path_factory):
    return make_bases(tmp_path_factory.mktemp("fuzz-bases"), real=False)


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    """Every base of the sets A / B (synthetic layouts, real samples when present); `sweep_bases` adds set C's."""
    return make_bases(tmp_path_factory.mktemp("fuzz-bases-all"), real=True)


@pytest.fixture(scope="module")
def sweep_bases(tmp_path_factory):
    return make_bases(tmp_path_factory.mktemp("fuzz-bases-sweep"), real=True, c=True)


def _one_file_per_family(run: Path) -> list[Path]:
    fams: dict[str, Path] = {}
    for p in sorted(_rank_files(run)):
        fams.setdefault(family(p.relative_to(run).as_posix()), p)
    return list(fams.values())


def test_a_folder_in_place_of_any_recognised_file_is_named(bases):
    """Sweep (first run): a folder standing where `ascend_pytorch_profiler_0.db` was (and, by the same cause,
    `cpu_framework_0.txt`, `start_info.0`, `x.db-wal`) was skipped with nothing in data quality. Every file family
    of every base run: the folder in its place is named by discovery, or (msprof's device folders, which their
    loaders list themselves) by the loader that reads the rank."""
    from reportgen.layouts import discover, load_rank

    missed, n = [], 0
    for name, run in sorted(bases.items()):
        listed, read = set(), set()  # files discovery lists by name; files the loaders read (clean run)
        for lay in discover(run):
            for rf in lay.ranks.values():
                listed |= {Path(q).relative_to(run).as_posix() for qs in rf.files.values() for q in qs}
                read |= set(load_rank(rf, run, lay.layout).files)
        for p in _one_file_per_family(run):
            if p.relative_to(run).as_posix() not in listed | read:
                continue  # inside an msprof device folder and read by no loader (task_time_*.json): harmless
            aside = p.with_name(p.name + ".aside")
            p.rename(aside)
            try:
                p.mkdir()
                (p / "inner.txt").write_text("x")
                rel = p.relative_to(run).as_posix()
                layouts = discover(run)
                issues = [i for lay in layouts for i in lay.issues]
                if not any(i.file == rel for i in issues):
                    issues = [i for lay in layouts for rf in lay.ranks.values() if str(rf.dir) in str(p)
                              for i in load_rank(rf, run, lay.layout).issues]
                n += 1
                if not any(i.file == rel and re.search("folder|directory", i.problem) for i in issues):
                    missed.append(f"{name}: {rel}")
            finally:
                shutil.rmtree(p, ignore_errors=True)
                aside.rename(p)
    assert n > (40 if set(bases) - set(SYNTH_BASES) else 30)  # families tried (the synthetic bases alone: 40)
    assert not missed, "\n".join(missed)


SWEEP_SETS = ("file", "place", "A", "B", "C", "run")


def dedupe(cases: list[Case], bases: dict[str, Path]) -> list[Case]:
    """Cases that make the same input are run once: the same base, the same file, the same damaged bytes (two
    mutations that happen to write the same thing: a duplicated first row is set A's `c_dup_row` and the file
    mutation `duplicated_rows`)."""
    import hashlib

    seen: set = set()
    out = []
    for c in cases:
        key = None
        if c.mutation in FILE_MUTATIONS or c.mutation in VALUE_MUTATIONS:
            p = bases[c.base] / c.target
            try:
                data = p.read_bytes()
            except OSError:
                data = None
            if data is not None:
                rng = random.Random(f"{SEED}:{c.target}:{c.mutation}")
                new = (mutate(data, c.mutation, p.suffix.lower(), rng) if c.mutation in FILE_MUTATIONS else
                       mutate_value(data, c.mutation, p.suffix.lower(), rng))
                key = (c.base, c.target, hashlib.sha1(new or b"").hexdigest())
        if key is not None and key in seen:
            continue
        if key is not None:
            seen.add(key)
        out.append(c)
    return out


def stratify(cases: list[Case]) -> list[Case]:
    """One case per (base, file family, class): the CI pass. The mutation of each stratum turns with the
    stratum's place in the plan, so every mutation of every set still runs on some family of some base, and every
    family of every base meets every class. (`MSREPORT_FUZZ_FULL=1`, or the standalone runner, runs them all.)"""
    strata: dict[tuple, list[Case]] = {}
    for c in cases:
        strata.setdefault((c.base, family(c.target), c.cls), []).append(c)
    used: dict[str, int] = {}  # mutation -> strata that took it
    out = []
    for i, group in enumerate(strata.values()):
        # the mutation used least so far (ties: in turn), so that every one runs somewhere
        pick = min(range(len(group)), key=lambda j: (used.get(group[j].mutation, 0), (j - i) % len(group)))
        used[group[pick].mutation] = used.get(group[pick].mutation, 0) + 1
        out.append(group[pick])
    return out


def plan_sweep(bases: dict[str, Path], full: bool = False) -> list[Case]:
    """The fuzz stage's one planned pass: every set (file and place mutations, value sets A and B, the
    independent set C, a duplicated rank folder) over every base, identical inputs once, one case per stratum
    unless `full`."""
    cases = dedupe(plan_cases(bases, sets=SWEEP_SETS), bases)
    return cases if full else stratify(cases)


@pytest.mark.fuzz
def test_fuzz_sweep(sweep_bases):
    """The fuzz stage (issue 30): one planned pass over every base -- the synthetic layouts, the real samples when
    present, set C's own bases -- judged by the stricter oracle (every number of summary.json, the damaged rank's
    CSVs and page text against the clean build, each base's clean build made once). Zero crashes, hangs, outside
    reads and silent losses: no list of tolerated cases."""
    bases = sweep_bases
    full = os.environ.get("MSREPORT_FUZZ_FULL") == "1"
    cases = plan_sweep(bases, full=full)
    jobs = int(os.environ.get("MSREPORT_FUZZ_JOBS") or max(1, min(os.cpu_count() or 1, 4)))
    import resource

    t0, cpu0 = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    results = run_cases(cases, bases, REPO, jobs=jobs)
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    print("\n" + table(results) + f"\n{len(results)} cases ({'full' if full else 'one per stratum'}) in "
          f"{time.monotonic() - t0:.0f} s wall, {cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime:.0f} "
          f"s CPU, --jobs {jobs}")
    bad = failures(results)
    assert not bad, f"{len(bad)} of {len(results)} cases fail:\n" + "\n".join(bad[:80])


@pytest.mark.fuzz  # (planning only, ~25 s: with the sweep it checks)
def test_sweep_plan_covers_every_mutation_and_stratum(synth_bases):
    """The CI pass keeps one case per (base, family, class) and still runs every mutation somewhere; identical
    inputs are planned once."""
    allc = dedupe(plan_cases(synth_bases, sets=SWEEP_SETS), synth_bases)
    ci = stratify(allc)
    assert {(c.base, family(c.target), c.cls) for c in ci} == {(c.base, family(c.target), c.cls) for c in allc}
    assert len(ci) == len({(c.base, family(c.target), c.cls) for c in allc}) < len(allc)
    assert {c.mutation for c in ci} == {c.mutation for c in allc}  # every mutation runs on some family
    raw = plan_cases(synth_bases, sets=SWEEP_SETS)
    assert len(allc) < len(raw)  # (c_dup_row and duplicated_rows write the same file on several families)


def _row(r: Result) -> dict:
    return {**r.case.__dict__, "rc": r.rc, "seconds": round(r.seconds, 2), "crash": r.crash, "hang": r.hang,
            "silent": r.silent, "outside": r.outside, "named": r.named, "why": r.why}


def _from_row(d: dict) -> Result:
    r = Result(Case(d["base"], d["mutation"], d["target"], d["rank"], d.get("cls") or CLASS_OF[d["mutation"]]),
               d["rc"], d["seconds"])
    for k in ("crash", "hang", "silent", "outside", "named", "why"):
        setattr(r, k, d[k])
    return r


def load_results(path: Path) -> list[Result]:
    """Results written by the sweep: a JSON list (--json) or JSON lines (--jsonl); the last result of a case wins."""
    text = path.read_text(encoding="utf-8")
    rows = json.loads(text) if text.lstrip().startswith("[") else [json.loads(x) for x in text.splitlines() if x]
    last = {(d["base"], d["mutation"], d["target"]): d for d in rows}
    return [_from_row(d) for d in last.values()]


def family_table(results: list[Result]) -> str:
    """Cases per file family (the file name with digits as #; "(run)" for run-level cases) and what failed."""
    rows: dict[str, list[int]] = {}
    for r in results:
        fam = family(Path(r.case.target).name) if r.case.target else "(run: odd folder names)"
        t = rows.setdefault(fam, [0, 0, 0, 0, 0, 0])
        for i, v in enumerate((1, r.crash, r.hang, r.silent, r.outside, r.named)):
            t[i] += v
    lines = ["| file family | cases | crashes | hangs | silent losses | outside reads | named in data quality |",
             "|---|---|---|---|---|---|---|"]
    for k in sorted(rows):
        lines.append(f"| {k} | " + " | ".join(str(x) for x in rows[k]) + " |")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="msreport fuzz sweep (standalone, for before/after measurements)")
    ap.add_argument("--repo", type=Path, default=REPO, help="checkout whose reportgen is run")
    ap.add_argument("--limit", type=int, default=0, help="at most this many cases (seeded sample)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", type=Path, help="write the per-case results here (and, as they come, to JSON.jsonl)")
    ap.add_argument("--no-real", action="store_true", help="synthetic runs only")
    ap.add_argument("--bases", default="", help="comma-separated base names to keep")
    ap.add_argument("--seed", type=int, default=SEED, help="seed of the --limit sample and of the case order")
    ap.add_argument("--fresh", action="store_true", help="a fresh interpreter per case (no fork server; slower)")
    ap.add_argument("--cases", type=Path, help="only the cases listed in this results file (--json / .jsonl): "
                    "re-run failed cases with --failed")
    ap.add_argument("--failed", action="store_true", help="with --cases: only the cases that failed there")
    ap.add_argument("--resume", action="store_true", help="skip the cases already in JSON.jsonl (append to it)")
    ap.add_argument("--sets", default="file,place,A,B,run", help="mutation sets to plan (see plan_cases)")
    ap.add_argument("--table", type=Path, help="print the class and family tables of a results file and exit")
    ap.add_argument("--ci", action="store_true", help="the CI pass: identical inputs once, one case per base, "
                    "family and class (as test_fuzz_sweep)")
    a = ap.parse_args(argv)
    if a.table:
        results = load_results(a.table)
        print(table(results) + "\n\n" + table(results, by="base") + "\n\n" + family_table(results))
        return 1 if failures(results) else 0
    work = Path(tempfile.mkdtemp(prefix="msreport-fuzz-bases-"))
    try:
        bases = make_bases(work, repo=a.repo, real=not a.no_real, c="C" in a.sets.split(","))
        if a.bases:
            bases = {k: v for k, v in bases.items() if k in a.bases.split(",")}
        cases = plan_cases(bases, sets=tuple(a.sets.split(",")))
        if a.ci:
            cases = stratify(dedupe(cases, bases))
        print(f"{len(cases)} cases planned", flush=True)
        if a.cases:
            want = {(r.case.base, r.case.mutation, r.case.target) for r in load_results(a.cases)
                    if not a.failed or r.crash or r.hang or r.silent or r.outside}
            cases = [c for c in cases if (c.base, c.mutation, c.target) in want]
        if a.limit and len(cases) > a.limit:
            cases = random.Random(a.seed).sample(cases, a.limit)
        # a seeded order mixing bases and classes: a sweep stopped early is still an even sample of all of them
        random.Random(a.seed).shuffle(cases)
        partial = a.json.with_suffix(".jsonl") if a.json else None
        if partial and a.resume and partial.exists():
            done = {(r.case.base, r.case.mutation, r.case.target) for r in load_results(partial)}
            cases = [c for c in cases if (c.base, c.mutation, c.target) not in done]
        elif partial:
            partial.write_text("")
        n = [0]
        t_start = time.monotonic()

        def tick(r: Result) -> None:
            n[0] += 1
            if partial:
                with partial.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(_row(r)) + "\n")
            if r.crash or r.hang or r.silent or r.outside:
                print(f"[{n[0]}/{len(cases)}] {failures([r])[0]}", flush=True)
            elif n[0] % 25 == 0:
                print(f"[{n[0]}/{len(cases)}] {time.monotonic() - t_start:.0f} s", flush=True)

        import resource

        t0, cpu0 = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
        results = run_cases(cases, bases, a.repo, jobs=a.jobs, progress=tick, fresh=a.fresh)
        wall, cpu1 = time.monotonic() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime
        print(table(results))
        secs = sorted(r.seconds for r in results)
        if secs:
            print(f"{len(results)} cases in {wall:.0f} s wall ({'fresh interpreter' if a.fresh else 'fork server'}, "
                  f"--jobs {a.jobs}); per case: mean {sum(secs) / len(secs):.2f} s, median "
                  f"{secs[len(secs) // 2]:.2f} s, max {secs[-1]:.2f} s; CPU (every process the sweep started, "
                  f"baselines and warm-up included) {cpu:.0f} s = {cpu / len(secs):.2f} s per case")
        if a.json:
            a.json.write_text(json.dumps([_row(r) for r in results], indent=1))
        return 1 if failures(results) else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
