"""`summary.json` is a contract (docs/summary-json.md): every key the code writes is in the doc's key index, so a
new key is documented in the change that adds it and a renamed one shows up as undocumented (issue 31)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from reportgen.cli import main
from reportgen.synth import generate_run

DOC = Path(__file__).resolve().parents[1] / "docs" / "summary-json.md"
NUMBER_KEY = re.compile(r"-?\d+(\.\d+)?|\d+-\d+")  # ranks, stages, links as object keys


def expand(line: str) -> list[str]:
    """One key-index line with its `{a,b}` alternatives spelled out."""
    m = re.search(r"\{([^}]*)\}", line)
    if not m:
        return [line]
    return [x for alt in m.group(1).split(",") for x in expand(line[:m.start()] + alt + line[m.end():])]


def _regex(path: str) -> re.Pattern:
    open_end = path.endswith("…")
    return re.compile(re.escape(path.rstrip("…").rstrip(".")) + (r"(?:\..+)?" if open_end else ""))


def documented() -> list[str]:
    block = re.search(r"```keys\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert block, "docs/summary-json.md has no key index"
    return [x for line in block.group(1).splitlines() if line.strip() for x in expand(line.strip())]


def is_documented(path: str, paths: list[str]) -> bool:
    if path.endswith(".{}"):  # an empty object: documented when some documented key lies below it
        return any(p.startswith(path[:-2]) for p in paths)
    return any(_regex(p).fullmatch(path) for p in paths)


def key_paths(value, path=()) -> set[str]:
    """Every leaf's dotted path: numbers as keys become `*`, list items `[]`."""
    if isinstance(value, dict):
        return set().union(*[key_paths(v, path + ("*" if NUMBER_KEY.fullmatch(k) else k,)) for k, v in value.items()])\
            if value else {".".join(path + ("{}",))}
    if isinstance(value, list):
        return set().union(*[key_paths(v, path + ("[]",)) for v in value]) if value else {".".join(path + ("[]",))}
    return {".".join(path)}


def test_the_key_index_reads_as_documented():
    pats = documented()
    assert is_documented("metrics.step_trace.per_rank.*.total_ms", pats)
    assert is_documented("metrics.step_trace.spread.per_rank.*.free_ms", pats)
    assert is_documented("findings.[].evidence.value_ms", pats)  # an open object
    assert is_documented("run.parallel_index.{}", pats)  # an empty map
    assert not is_documented("metrics.step_trace.per_rank.*.total_mss", pats)
    assert not is_documented("findings.[].evidence_x", pats)
    assert not is_documented("run.parallel_indexes.{}", pats)


@pytest.fixture(scope="module")
def summaries(tmp_path_factory, example_site) -> dict[str, dict]:
    """The example (Ascend, 16 ranks, every finding kind it plants) and a small run of every other layout."""
    base = tmp_path_factory.mktemp("contract")
    out = {"example": json.loads((example_site / "summary.json").read_text(encoding="utf-8"))}
    for name, kw in (("mindinsight", dict(layout="mindinsight", stages=2)), ("kineto", dict(layout="kineto")),
                     ("mindspore_gpu", dict(layout="mindspore_gpu")), ("db", dict(layout="ascend", export="db"))):
        run = generate_run(base / name, ranks=4 if name != "db" else 2, steps=4, seed=1, **kw)
        assert main([str(run), "-o", str(base / f"out-{name}"), "-q", "--lang", "en"]) == 0
        out[name] = json.loads((base / f"out-{name}" / "summary.json").read_text(encoding="utf-8"))
    return out


def test_every_key_written_is_documented(summaries):
    pats = documented()
    undocumented = {}
    for name, s in summaries.items():
        for path in sorted(key_paths(s)):
            if not is_documented(path, pats):
                undocumented.setdefault(path, name)
    assert not undocumented, "keys written but not in docs/summary-json.md's key index:\n" + "\n".join(
        f"  {k} ({v})" for k, v in sorted(undocumented.items()))
    assert all(s["schema"] == "msreport.summary/1" for s in summaries.values())
