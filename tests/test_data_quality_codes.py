"""Data-quality problems as codes with parameters (issue 31, `reportgen.dataquality`): the catalog is a contract
(codes listed in tests/dq_codes.txt), every code has a Chinese template, a coded entry renders in English and
Chinese through the catalog, and `summary.json` entries carry `code` and `params` beside the English `problem`."""

from __future__ import annotations

import ast
import json
import re
import string
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from reportgen import i18n
from reportgen.cli import main
from reportgen.dataquality import CATALOG, dq, message, render
from reportgen.model import DataIssue
from reportgen.site.views.problems import translate_problem
from reportgen.synth import generate_run

ROOT = Path(__file__).resolve().parents[1]
CJK = re.compile(r"[\u4e00-\u9fff]")
CODE = re.compile(r"[a-z0-9-]+\.[a-z0-9-]+")


def _fields(template: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(template) if f}


def test_codes_are_unique_well_formed_and_match_the_committed_list():
    tree = ast.parse((ROOT / "reportgen" / "dataquality.py").read_text(encoding="utf-8"))
    literal = next(n.value for n in ast.walk(tree) if isinstance(n, ast.AnnAssign) and n.target.id == "CATALOG")
    keys = [k.value for k in literal.keys]
    assert len(keys) == len(set(keys)), [k for k in keys if keys.count(k) > 1]  # a repeated key silently overrides
    assert all(CODE.fullmatch(k) for k in keys), [k for k in keys if not CODE.fullmatch(k)]
    committed = [line for line in (ROOT / "tests" / "dq_codes.txt").read_text(encoding="utf-8").splitlines()
                 if line and not line.startswith("#")]
    # renaming or dropping a code is a deliberate act: update tests/dq_codes.txt with it
    assert sorted(keys) == committed


def test_every_code_is_written_somewhere_and_every_written_code_is_known():
    written: set[str] = set()  # first arguments of dq(...) that are literals
    strings: set[str] = set()  # every string literal outside the catalog (a code chosen by a condition)
    for f in (ROOT / "reportgen").rglob("*.py"):
        if f.name == "dataquality.py" and f.parent.name == "reportgen":
            continue
        for n in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(n, ast.Constant) and isinstance(n.value, str):
                strings.add(n.value)
            if isinstance(n, ast.Call) and ast.unparse(n.func) == "dq" and isinstance(n.args[0], ast.Constant):
                written.add(n.args[0].value)
    assert written and written - set(CATALOG) == set()
    assert set(CATALOG) - strings == set()


def test_every_code_has_a_chinese_template_with_known_placeholders():
    tr = i18n.translations("zh")
    untranslated = [c for c, t in CATALOG.items() if tr.gettext(t) == t]
    assert untranslated == []
    # a translation may leave out an English-only placeholder (a plural "s"), never add one the code does not pass
    extra = {c: _fields(tr.gettext(t)) - _fields(t) for c, t in CATALOG.items() if _fields(tr.gettext(t)) - _fields(t)}
    assert extra == {}


def test_a_coded_entry_keeps_its_english_text_and_renders_in_both_languages():
    issue = DataIssue("ASCEND_PROFILER_OUTPUT/kernel_details.csv",
                      dq("csv.wrong-field-count-lines", bad=3, where="4, 9, 12"), "warning")
    english = "3 row(s) with a wrong number of fields (line 4, 9, 12); those rows were skipped (file truncated or corrupt?)"
    assert issue.problem == english  # what summary.json always stored
    d = issue.to_dict()
    assert (d["code"], d["params"]) == ("csv.wrong-field-count-lines", {"bad": 3, "where": "4, 9, 12"})
    assert json.loads(json.dumps(d)) == d
    assert translate_problem(d, "en") == english
    zh = translate_problem(d, "zh")
    assert CJK.search(zh) and "3" in zh and "4, 9, 12" in zh and "wrong number" not in zh
    # the same text through the fallback (the regex matching of text entries) reads the same
    assert translate_problem(english, "zh") == zh
    assert render(d["code"], d["params"], "zh") == zh
    # a finding's title made from the entry is the catalog message: English and Chinese alike
    assert message(issue).render("en") == english and message(issue).render("zh") == zh


def test_parameters_are_stored_as_json_can_hold_them_and_read_as_the_fstring_wrote_them():
    issue = DataIssue("x.json", dq("json.file-mb-too-large", size=format(1234.5678, ".1f")))
    assert issue.params == {"size": "1234.6"} and issue.problem == "file is 1234.6 MB, too large to read whole; skipped"
    err = OSError(2, "No such file or directory")
    issue = DataIssue("x.csv", dq("csv.cannot-read-file", strerror=err), "error")  # an object: its text
    assert issue.params == {"strerror": str(err)} and issue.problem == f"cannot read the file: {err}"
    issue = DataIssue("x.csv", dq("overlap.computation-pure-communication-x", ratio=float("nan")))
    assert issue.params == {"ratio": "nan"}  # not a JSON number: its text
    assert DataIssue("x.csv", "written as text").to_dict() == {"file": "x.csv", "problem": "written as text",
                                                               "severity": "warning"}


def test_an_entry_the_catalog_cannot_render_is_shown_by_its_text():
    text = "file is empty"
    assert translate_problem({"problem": text, "code": "csv.no-such-code", "params": {}}, "zh") == "文件为空"
    # parameters that do not fit the template (a newer writer): the text, through the fallback
    bad = {"problem": "3 row(s) with non-numeric times skipped", "code": "overlap.row-non-numeric-times",
           "params": {"other": 1}}
    assert render(bad["code"], bad["params"], "zh") is None
    assert CJK.search(translate_problem(bad, "zh"))
    assert translate_problem({"problem": "something new", "code": "", "params": {}}, "zh") == "something new"


@pytest.fixture(scope="module")
def damaged(tmp_path_factory) -> Path:
    """A 2-rank run whose rank-1 step_trace_time.csv ends mid-row and whose kernel_details.csv has a row with a
    wrong number of fields, built in English and Chinese."""
    base = tmp_path_factory.mktemp("dq-codes")
    run = generate_run(base / "run", layout="ascend", ranks=2, steps=3, seed=1)
    step = sorted(run.rglob("step_trace_time.csv"))[1]
    step.write_text(step.read_text(encoding="utf-8").rstrip("\n") + "\n7,1.5", encoding="utf-8")
    kd = sorted(run.rglob("kernel_details.csv"))[0]
    lines = kd.read_text(encoding="utf-8").splitlines()
    kd.write_text("\n".join(lines[:3] + ["a,b"] + lines[3:]) + "\n", encoding="utf-8")
    assert main([str(run), "-o", str(base / "out"), "-q", "--lang", "en,zh"]) == 0
    return base / "out"


def test_summary_entries_carry_code_and_params_and_pages_show_them_in_the_language(damaged):
    summary = json.loads((damaged / "summary.json").read_text(encoding="utf-8"))
    coded = [i for i in summary["data_quality"] if "code" in i]
    assert "csv.truncated-last-row-line" in {i["code"] for i in coded}, summary["data_quality"]
    cut = next(i for i in coded if i["code"] == "csv.truncated-last-row-line")
    assert cut["params"] == {"rows": 3, "last_short": 5}  # 3 whole step rows, the cut one on line 5 (header + 3)
    # entries still written as text (loaders not given codes yet) are shown through the fallback
    text_only = [i for i in summary["data_quality"] if "code" not in i]
    for i in coded:
        assert i["code"] in CATALOG and not CJK.search(i["problem"])
        assert i["problem"] == CATALOG[i["code"]].format(**i["params"])
    for lang, tree in (("en", damaged), ("zh", damaged / "zh")):
        soup = BeautifulSoup((tree / "index.html").read_text(encoding="utf-8"), "html.parser")
        rows = [r.select("td")[-1].get_text() for r in soup.select("#issues-table tbody tr")]
        for i in coded:
            shown = render(i["code"], i["params"], lang)
            assert shown in rows, (lang, shown, rows)
            assert bool(CJK.search(shown)) == (lang == "zh")
        for i in text_only:
            assert translate_problem(i["problem"], lang) in rows


def test_every_code_reads_the_same_through_the_catalog_as_through_the_text_matching():
    """For every code, with made-up parameters: the English text is the template filled in, and the Chinese the
    catalog renders is what the pages showed when they matched the English text (so coding a call site changes no
    page); a template without placeholders keeps its literal braces single."""
    for code, template in CATALOG.items():
        names = list(dict.fromkeys(f for _, f, _, _ in string.Formatter().parse(template) if f))
        params = {n: (k + 7 if k % 2 else f"v{k}x") for k, n in enumerate(names)}
        issue = DataIssue("f", dq(code, **params))
        assert issue.problem == template.format(**params), code
        assert render(code, issue.params, "zh") == translate_problem(issue.problem, "zh"), code
    assert DataIssue("d", dq("discover.no-rank-id-folder")).problem == \
        "no rank id in the folder (no profiler_info_{rank}.json); treated as rank 0"
    assert "{rank}" in render("discover.no-rank-id-folder", {}, "zh")


def test_the_door_writes_one_coded_entry_per_problem_with_its_count_and_first_example(tmp_path):
    """The loaders' door (loaders.schema.Door): a problem noted as a code; the entry it writes holds the count and
    the first example, in the text the door always wrote ("{n} <problem>; e.g. {example}")."""
    from reportgen.loaders.issuelog import IssueLog
    from reportgen.loaders.schema import Door

    log = IssueLog(tmp_path, rank=3)
    door = Door(log, tmp_path / "op_statistic.csv")
    door.note(dq("schema.value-null"), "entry 1, 'Count': null")
    door.note(dq("schema.value-null"), "entry 7, 'Count': null")
    door.note_many(dq("schema.null-mark", name="'Count'"), 4, "data row 2: 'NULL'", "warning", "impossible value")
    door.note_many(dq("schema.null-mark", name="'Ratio(%)'"), 1, "data row 5: 'N/A'")  # other parameters: own entry
    door.note_many(dq("schema.null-mark", name="'Ratio(%)'"), 0, "data row 9: 'N/A'")  # none: nothing noted
    door.close()
    got = [(i.problem, i.code, i.params, i.ranks) for i in log.issues]
    assert got == [
        ("2 value(s) read as missing (null where a number belongs); e.g. entry 1, 'Count': null", "schema.value-null",
         {"n": 2, "example": "entry 1, 'Count': null"}, (3,)),
        ("4 value(s) written as a null mark in 'Count' (read as missing); e.g. data row 2: 'NULL'", "schema.null-mark",
         {"n": 4, "name": "'Count'", "example": "data row 2: 'NULL'"}, (3,)),
        ("1 value(s) written as a null mark in 'Ratio(%)' (read as missing); e.g. data row 5: 'N/A'",
         "schema.null-mark", {"n": 1, "name": "'Ratio(%)'", "example": "data row 5: 'N/A'"}, (3,)),
    ]
    zh = render("schema.null-mark", log.issues[1].params, "zh")
    assert zh.startswith("4 处：") and "'Count'" in zh and "data row 2: 'NULL'" in zh and "null mark" not in zh


def test_schema_drift_between_ranks_is_coded_and_reads_as_before():
    """compare_shapes: a key every other rank's copy has is lacking, a key no other copy has is added, or both; one
    code each, whose English is the sentence the f-string wrote, and whose Chinese leaves no English phrase."""
    from types import SimpleNamespace

    from reportgen.loaders.schema import compare_shapes

    shape = frozenset({"config", "config.level", "config.mode"})
    ranks = {r: SimpleNamespace(json_shapes={f"r{r}/profiler_info_{r}.json": shape}) for r in range(4)}
    ranks[1] = SimpleNamespace(json_shapes={"r1/profiler_info_1.json": shape - {"config.mode"}})
    ranks[2] = SimpleNamespace(json_shapes={"r2/profiler_info_2.json": shape | {"config.extra"}})
    ranks[3] = SimpleNamespace(json_shapes={"r3/profiler_info_3.json": shape - {"config.level"} | {"config.lvl"}})
    issues: list = []
    compare_shapes(ranks, issues)
    by = {i.ranks: i for i in issues}
    tail = ": a key dropped or renamed? the values under it were not read for this rank"
    assert (by[(1,)].code, by[(1,)].problem) == (
        "schema.keys-lacked", "rank 1's file lacks key(s) every other rank's copy has (config.mode)" + tail)
    assert (by[(2,)].code, by[(2,)].problem) == (
        "schema.keys-added", "rank 2's file has key(s) no other rank's copy has (config.extra)" + tail)
    assert (by[(3,)].code, by[(3,)].problem) == (
        "schema.keys-lacked-and-added", "rank 3's file lacks key(s) every other rank's copy has (config.level) and "
        "has key(s) no other rank's copy has (config.lvl)" + tail)
    assert set(by) == {(1,), (2,), (3,)} and all(i.kind == "schema drift" for i in issues)
    for i in issues:
        zh = render(i.code, i.params, "zh")
        assert CJK.search(zh) and "lacks" not in zh and "has key" not in zh and f"卡 {i.ranks[0]}" in zh
