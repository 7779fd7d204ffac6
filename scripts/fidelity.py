"""Fidelity snapshot of msreport outputs: save summary.json + every CSV per run, then compare two snapshots.

    python scripts/fidelity.py save SNAPDIR RUN [RUN ...]     # runs `python -m reportgen RUN -o ...` per run
    python scripts/fidelity.py compare SNAP_A SNAP_B          # exit 1 on any difference (timing fields ignored)

Used before and after a loading/pipeline change (issue 17): every number in summary.json and the CSVs must stay equal.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's reportgen
from reportgen.site.render.csv_text import csv_value  # noqa: E402

TIMING_KEYS = {"generated_at", "build_seconds", "elapsed_s", "timings", "generator"}


def _strip(obj):
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in TIMING_KEYS}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def save(snap: Path, runs: list[str]) -> None:
    for run in runs:
        name = Path(run).name
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "site"
            proc = subprocess.run([sys.executable, "-m", "reportgen", run, "-o", str(out), "--lang", "en"],
                                  capture_output=True, text=True)
            dest = snap / name
            dest.mkdir(parents=True, exist_ok=True)
            (dest / "_exit").write_text(f"{proc.returncode}\n")
            for f in [*out.rglob("*.csv"), *out.rglob("*.csv.gz"), *out.rglob("summary.json")]:
                rel = f.relative_to(out)
                if f.suffix == ".gz":  # a large run's per-rank tables: kept decompressed, under the plain name
                    target = dest / rel.with_suffix("")
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(gzip.decompress(f.read_bytes()))
                    continue
                target = dest / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, target)


def _same_cell(old: str, new: str) -> bool:
    """A CSV cell is unchanged when its text is, or when it is the same number written compactly (issue 17:
    `208.0` -> `208`, `8.552121000000003` -> `8.552121`, the rule of `csv_text.csv_value`)."""
    if old == new:
        return True
    try:
        v = float(old)
    except ValueError:
        return False
    return str(csv_value(v)) == new


def _same_csv(ta: str, tb: str) -> bool:
    ra, rb = list(csv.reader(io.StringIO(ta))), list(csv.reader(io.StringIO(tb)))
    return len(ra) == len(rb) and all(len(x) == len(y) and all(_same_cell(p, q) for p, q in zip(x, y))
                                      for x, y in zip(ra, rb))


def compare(a: Path, b: Path) -> int:
    fa = {p.relative_to(a) for p in a.rglob("*") if p.is_file()}
    fb = {p.relative_to(b) for p in b.rglob("*") if p.is_file()}
    bad = 0
    for rel in sorted(fa ^ fb):
        print(f"only in one snapshot: {rel}")
        bad += 1
    for rel in sorted(fa & fb):
        ta, tb = (a / rel).read_text(errors="replace"), (b / rel).read_text(errors="replace")
        if rel.suffix == ".json":
            same = _strip(json.loads(ta)) == _strip(json.loads(tb))
        elif rel.suffix == ".csv":
            same = _same_csv(ta, tb)
        else:
            same = ta == tb
        if not same:
            print(f"differs: {rel}")
            bad += 1
    print(f"{len(fa & fb)} files compared, {bad} differences")
    return 1 if bad else 0


def main(argv: list[str]) -> int:
    if len(argv) >= 3 and argv[0] == "save":
        save(Path(argv[1]), argv[2:])
        return 0
    if len(argv) == 3 and argv[0] == "compare":
        return compare(Path(argv[1]), Path(argv[2]))
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
