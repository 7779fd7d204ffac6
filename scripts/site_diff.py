"""Build the same report with another commit (default: main) and with this worktree, and compare the two sites
file by file: a change that should not change the output (a faster renderer) must leave every byte the same.

    python scripts/site_diff.py -- /path/to/run                   # main vs this worktree
    python scripts/site_diff.py --base HEAD~3 -- --example --lang en,zh
    python scripts/site_diff.py --keep /tmp/sites -- RUN -j 2     # keep both sites (A = base, B = worktree)
    python scripts/site_diff.py -- RUN --single-file               # the single file (and its summary, findings)
    python scripts/site_diff.py --gz-content -- RUN                # a `.gz` file the same once decompressed is equal
                                                                   # (a change of gzip level)

Every file must be byte-identical, except `summary.json` (and `*.summary.json`), compared without its
`generated_at` line, and the temporary folder `--example` generates its run in (`msreport-example-XXXX`, a new
name on every build), which is normalised in text files. Exit 1 when anything differs (the differing files are
listed, with the first differing line of text files).
"""

from __future__ import annotations

import argparse
import filecmp
import gzip
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_EXAMPLE_DIR = re.compile(rb"msreport-example-[A-Za-z0-9_]+")
# (pretty-printed: a line of its own; compact, as summary.json is written now: a member on the one line)
_GENERATED = re.compile(rb'"generated_at": ?"[^"]*",?')


def export(commit: str, dest: Path) -> None:
    """The tree of `commit` (its files only: no checkout, no branch switch) under `dest`."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)


def build(tree: Path, out: Path, args: list[str]) -> None:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run([sys.executable, "-m", "reportgen", *args, "-o", str(out), "-q"], cwd=tree, env=env, check=True)


def _normalised(path: Path) -> bytes:
    data = _EXAMPLE_DIR.sub(b"msreport-example-X", path.read_bytes())
    if path.name.endswith("summary.json"):
        data = _GENERATED.sub(b"", data)
    return data


def _cache(rel: Path) -> bool:
    return any(part.endswith(".msreport-cache") for part in rel.parts)


def compare(a: Path, b: Path, gz_content: bool = False) -> list[str]:
    """The differences between sites `a` and `b` (empty: the same). `gz_content`: `.gz` files compared by what
    they hold."""
    # (a single file's rank cache sits beside it: its entries are keyed by each build's own source, never equal)
    files_a = {p.relative_to(a) for p in a.rglob("*") if p.is_file() and not _cache(p.relative_to(a))}
    files_b = {p.relative_to(b) for p in b.rglob("*") if p.is_file() and not _cache(p.relative_to(b))}
    out = [f"only in A: {p}" for p in sorted(files_a - files_b)] + [f"only in B: {p}" for p in sorted(files_b - files_a)]
    for rel in sorted(files_a & files_b):
        fa, fb = a / rel, b / rel
        if filecmp.cmp(fa, fb, shallow=False):
            continue
        da, db = _normalised(fa), _normalised(fb)
        if da == db:
            continue
        if gz_content and rel.name.endswith(".gz") and gzip.decompress(da) == gzip.decompress(db):
            continue
        la, lb = da.splitlines(), db.splitlines()
        first = next((i for i, (x, y) in enumerate(zip(la, lb)) if x != y), min(len(la), len(lb)))
        out.append(f"differs: {rel} (line {first + 1})")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", default="main", help="commit to compare with (default: main)")
    p.add_argument("--keep", type=Path, help="build the sites into this folder (A = base, B = worktree) and keep them")
    p.add_argument("--gz-content", action="store_true", help="compare .gz files by their decompressed bytes")
    p.add_argument("args", nargs=argparse.REMAINDER, help="msreport arguments, after --")
    a = p.parse_args(argv)
    args = a.args[1:] if a.args[:1] == ["--"] else a.args
    with tempfile.TemporaryDirectory(prefix="site-diff-") as tmp:
        work = a.keep or Path(tmp)
        base = Path(tmp) / "base"
        base.mkdir()
        export(a.base, base)
        site_a, site_b = work / "A", work / "B"
        # --single-file writes one file (and its summary and findings beside it): each build in its own folder
        name = "report.html" if "--single-file" in args else ""
        build(base, site_a / name, args)
        build(ROOT, site_b / name, args)
        diffs = compare(site_a, site_b, a.gz_content)
        n = sum(1 for f in site_a.rglob("*") if f.is_file() and not _cache(f.relative_to(site_a)))
        if diffs:
            print(f"DIFFERENT ({len(diffs)} of {n} files):", *diffs, sep="\n  ")
            return 1
        print(f"IDENTICAL: {n} files (summary.json without generated_at)")
        return 0


if __name__ == "__main__":
    sys.exit(main())
