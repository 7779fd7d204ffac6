"""Languages (issue 22): `--lang zh|en`, the zh catalog covers every extracted message, zh pages carry no English
left untranslated, `--lang en` output is the English report, and summary.json stays language-neutral."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from babel.messages import pofile
from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_mapping_cfg

from reportgen import i18n
from tests.conftest import SAMPLES

bs4 = pytest.importorskip("bs4")

ROOT = Path(__file__).resolve().parents[1]
CJK = re.compile(r"[\u4e00-\u9fff]")
# English words: letters only (ids mixing letters with digits or underscores, like node000 or Level1, are data)
WORD = re.compile(r"(?<![\w./-])[A-Za-z][A-Za-z'-]{2,}(?![\w./-])")
# Technical terms, product and file names the Chinese UI keeps in English (MindInsight's Chinese UI does the same).
ALLOWED = {"HCCL", "HCCS", "RDMA", "SDMA", "PCIe", "AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Send",
           "Receive", "MindInsight", "MindSpore", "Ascend", "msprof-analyze", "msreport", "Vega", "Vega-Lite",
           "vega-embed", "BSD-3-Clause", "Marey", "Host", "ProfilerStep", "step_trace_time", "csv", "CSV", "JSON",
           "ms", "MB", "GB", "Profiler", "torch_npu", "Kineto", "log", "CANN", "profiler",
           # efficiency (issue 32): the units and measures Chinese UIs keep in English
           "MFU", "FLOPs", "TFLOPS", "TFLOP", "GEMM",
           # NVIDIA's and PyTorch's product names, kept in English by their Chinese documentation
           "CUDA", "Graph", "ATen"}


def _english_words(text: str, data: set[str]) -> list[str]:
    return [w for w in WORD.findall(text) if w not in ALLOWED and w not in data]


# --- every zh page of three runs --------------------------------------------------------------------------------
# Latin words may remain on a zh page only when they are technical terms (TERMS, the names the Chinese profiler UIs
# keep in English), identifiers (CamelCase or several capitals: MindInsight, GetNext, MatMul, FLOPs, HCCL) or data
# of the run (words of the report's own CSV cells: operator types such as Add or Gelu, hosts, groups).
TERMS = ALLOWED | {"AI", "Core", "CPU", "GPU", "NPU", "ms", "us", "KB", "Perfetto", "chrome", "tracing", "torch",
                   "shape", "kernel", "Cube", "Vector", "Bubble", "Σ", "MindData", "Python", "TOML", "Megatron",
                   "FlashAttention", "Receive", "Send", "Cast", "TransData", "GetNext", "ZeRO", "Embedding", "DDP",
                   "MindRecord", "Momentum", "hccn_tool", "Profiler", "Host", "Trace", "trace",
                   # msprof-analyze's own names: its advisor and the sections of its output
                   "advisor", "Overall", "Summary", "Issues", "summary-json",
                   # names the files and traces use: MindSpore Insight, the trace's Steps lane, reduce columns
                   "Insight", "Steps", "reduce", "cluster-analyse", "Overlap", "Analysis",
                   # a collective library and a profiler tool with its output folder (msprof's timeline/)
                   "gloo", "msprof", "timeline", "gzip"}
IDENTIFIER = re.compile(r"^(?:[A-Z]?[a-z]+(?:[A-Z][a-z0-9]*)+|[A-Z]{2,}[a-zA-Z]*|[a-z]+[A-Z][A-Za-z]*)$")


def _data_words(site: Path) -> set[str]:
    """Words in the cells of the CSV files the report wrote (operator names, hosts, groups: data, not UI text)."""
    import csv

    words: set[str] = set()
    for f in site.rglob("*.csv"):
        with f.open(encoding="utf-8", newline="") as fh:
            rows = csv.reader(fh)
            next(rows, None)  # the header is UI text
            for row in rows:
                for cell in row:
                    words.update(re.findall(r"[A-Za-z][A-Za-z'-]+", cell))
    return words


def _latin_left(soup, data: set[str]) -> list[tuple[str, list[str]]]:
    brand = soup.select_one(".brand")
    run_title = brand.get_text().strip() if brand else ""
    for sel in ("script", "style", "code", ".brand", "svg text"):
        for t in soup.select(sel):
            t.decompose()
    # text that declares its own language (the language switch "English"; a compared summary's English title)
    for t in soup.select("body [lang]"):
        if not t["lang"].startswith("zh"):
            t.decompose()

    def bad(text: str) -> list[str]:
        text = text.replace(run_title, "") if run_title else text
        text = re.sub(r"\{\w+\}", "", text.replace("AI Core", "").replace("AI CPU", ""))  # file patterns: *_{rank}
        text = re.sub(r"'[^'\n]*'", "", text)  # quoted data: a file's header, an attribute name
        return [w for w in WORD.findall(text) if w not in TERMS and w not in data and not IDENTIFIER.match(w)]

    left = []
    for s in soup.find_all(string=True):
        if isinstance(s, (bs4.Doctype, bs4.Comment)):
            continue
        if bad(s):
            left.append((s.strip()[:100], bad(s)))
    for t in soup.find_all(True):
        for attr in ("title", "aria-label", "placeholder", "alt"):
            if t.get(attr) and bad(t[attr]):
                left.append((f"{t.name}[{attr}]={t[attr][:80]}", bad(t[attr])))
    return left


@pytest.fixture(scope="module")
def zh_runs(tmp_path_factory) -> dict[str, Path]:
    """zh reports of the example run, a MindInsight 4-stage pipeline run (strategy, execution, data queues, memory,
    FLOPs, injected problems) and, when the samples are there, a real single-device MindInsight run."""
    from reportgen.synth import generate_run

    base = tmp_path_factory.mktemp("zh-all")
    from reportgen.cli import main

    assert main(["--example", "-o", str(base / "example"), "-q", "--lang", "zh"]) == 0
    run = generate_run(base / "pipe-run", layout="mindinsight", ranks=8, steps=6, stages=4, tp=2,
                       inject=["slow-rank:5:compute:1.3", "slow-op:LayerNorm:4", "slow-link:0-1",
                               "memory-near-capacity:3", "starving-queue:2"])
    # both languages, English first: the zh pages are the second language's tree (OUT/zh/)
    _build(run, base / "pipeline", "en,zh")
    out = {"example": base / "example", "pipeline": base / "pipeline" / "zh"}
    # the comparison of the two (different layouts: the warnings show too; the pipeline's summary is English, its
    # finding titles are shown as written and marked lang="en"), their trend, and a folder of two runs
    env_zh = {"PYTHONPATH": str(ROOT), "LANG": "zh_CN.UTF-8", "LC_ALL": "", "PATH": "/usr/bin:/bin"}
    cmp = subprocess.run([sys.executable, "-m", "reportgen", "compare", str(base / "example"), str(base / "pipeline"),
                          "-o", str(base / "compare"), "--fail-on-regression", "0"], cwd=ROOT, env=env_zh,
                         capture_output=True, text=True, timeout=300)
    assert cmp.returncode == 4, cmp.stderr  # 16 ranks against 8 in another layout: not comparable
    assert main(["trend", str(base / "example"), str(base / "pipeline"), "-o", str(base / "trend"), "-q",
                 "--lang", "zh"]) == 0
    for name, layout in (("a", "ascend"), ("b", "mindinsight")):
        generate_run(base / "multi" / name, layout=layout, ranks=2, steps=3)
    _build(base / "multi", base / "runs", "zh,en")  # the landing page and each run in both languages
    out.update({"compare": base / "compare", "trend": base / "trend", "runs": base / "runs",
                "pipeline-both": base / "pipeline", "compare-cli": cmp})
    single = SAMPLES / "mindinsight" / "single_device_run2_rank1_full"
    if single.is_dir():
        _build(single, base / "single", "zh")
        out["single"] = base / "single"
    return out


def test_every_zh_page_of_three_runs_is_chinese(zh_runs):
    """Every page of the zh reports: no Latin word left that is not a technical term, an identifier or data."""
    assert {"example", "pipeline", "compare", "trend", "runs"} <= set(zh_runs)
    failures, pages = [], 0
    for name, site in zh_runs.items():
        if name in ("pipeline-both", "compare-cli"):
            continue
        data = _data_words(site)
        if (site / "trend.json").is_file():  # the runs' labels (their folder names) are data too
            data |= {w for r in json.loads((site / "trend.json").read_text(encoding="utf-8"))["runs"]
                     for w in re.findall(r"[A-Za-z][A-Za-z'-]+", r["label"])}
        for page in sorted(site.rglob("*.html")):
            if "en" in page.relative_to(site).parts:  # a two-language build's English tree
                continue
            pages += 1
            soup = _soup(page)
            assert soup.html["lang"] == "zh-CN", page
            left = _latin_left(soup, data)
            failures += [(f"{name}/{page.relative_to(site)}", *x) for x in left[:5]]
    assert pages > 30
    assert not failures, "\n".join(map(str, failures[:60]))


def test_zh_data_quality_problems_are_translated(zh_runs):
    """The example run's truncated step_trace_time.csv: the problem is stored in English in summary.json and shown
    in Chinese on the page, with its numbers."""
    summary = json.loads((zh_runs["example"] / "summary.json").read_text(encoding="utf-8"))
    stored = [i["problem"] for i in summary["data_quality"] if "file ends mid-row" in i["problem"]]
    assert stored and not CJK.search(stored[0])
    rows = [r.get_text(" ") for r in _soup(zh_runs["example"] / "index.html").select("#issues-table tbody tr")]
    shown = [r for r in rows if "文件在行中间结束" in r]
    assert shown, rows
    assert re.findall(r"\d+", stored[0]) == re.findall(r"\d+", shown[0].split("step_trace_time.csv")[-1])


def test_problem_templates_match_their_messages():
    from reportgen.site.views.problems import translate_problem

    text = "file ends mid-row (truncated?): 6 complete row(s) read; the cut-off last row (line 8) has a wrong " \
           "number of fields and was skipped"
    assert translate_problem(text, "en") == text
    zh = translate_problem(text, "zh")
    assert CJK.search(zh) and "6" in zh and "8" in zh
    # text no template knows is shown as written
    assert translate_problem("something new happened", "zh") == "something new happened"
    # "file is empty" is its own message, not a value of a template with placeholders
    assert translate_problem("file is empty", "zh") == "文件为空"


def test_problem_templates_are_up_to_date():
    """reportgen/site/views/problem_texts.py lists every message the loaders, discovery and analysis write (regenerate it
    with scripts/problem_texts.py, then update the catalog)."""
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "problem_texts.py"), "--check"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_no_catalog_entry_is_unused():
    """The catalog check the other way round: every translated msgid is still extracted from the source."""
    with i18n.catalog_path("zh").open("rb") as f:
        catalog = pofile.read_po(f)
    found = _extracted()
    unused = [m.id for m in catalog if m.id and (m.id if isinstance(m.id, str) else m.id[0]) not in found]
    assert not unused, unused[:20]


def test_default_language_follows_the_locale():
    assert i18n.default_language({"LANG": "zh_CN.UTF-8"}) == "zh"
    assert i18n.default_language({"LANG": "en_US.UTF-8"}) == "en"
    assert i18n.default_language({}) == "en"
    # LC_ALL wins over LANG, as gettext reads them
    assert i18n.default_language({"LC_ALL": "C", "LANG": "zh_CN.UTF-8"}) == "en"
    assert i18n.default_language({"LC_MESSAGES": "zh_TW", "LANG": "en_US"}) == "zh"


def test_lazy_message_renders_in_either_language():
    m = i18n.lazy("{phase} (ms)", phase=i18n.lazy("Step interval"))
    assert m.en == "Step interval (ms)"
    assert m.render("zh") == "迭代间隙（ms）"
    with i18n.use("zh"):
        assert str(m) == "迭代间隙（ms）"
    assert str(m) == "Step interval (ms)"


def _extracted() -> dict[str, tuple]:
    with open(ROOT / "babel.cfg", encoding="utf-8") as f:
        method_map, options_map = parse_mapping_cfg(f)
    keywords = {"_": None, "gettext": None, "ngettext": (1, 2), "N_": None, "lazy": None}
    found = {}
    for filename, lineno, message, _comments, _ctx in extract_from_dir(str(ROOT), method_map, options_map,
                                                                       keywords=keywords):
        if filename.startswith("reportgen/"):
            found[message if isinstance(message, str) else message[0]] = (filename, lineno)
    return found


def test_every_extracted_message_is_in_the_zh_catalog():
    """Babel extraction run against the source: every msgid has a Chinese translation with the same placeholders."""
    with i18n.catalog_path("zh").open("rb") as f:
        catalog = pofile.read_po(f)
    translated = {m.id: m.string for m in catalog if m.id and m.string and not m.fuzzy}
    found = _extracted()
    assert len(found) > 150  # the extraction really saw the templates and the modules
    missing = {k: v for k, v in found.items() if k not in translated}
    assert not missing, f"msgids missing from the zh catalog (run pybabel update, see README): {missing}"
    for msgid, text in translated.items():
        if msgid in found:
            # the translation uses only placeholders the English has (it may drop grammar ones such as {s})
            assert set(re.findall(r"\{\w+\}|%\(\w+\)s", text)) <= set(re.findall(r"\{\w+\}|%\(\w+\)s", msgid)), msgid


def _build(run: Path, out: Path, lang: str, env_lang: str = "C") -> None:
    """A report in `lang` (`--lang`); without one, in the language of the locale `env_lang` (a child process, so the
    locale is its own). With `--lang` the locale plays no part: built in this process (issue 31: suite time)."""
    if lang:
        from reportgen.cli import main

        assert main([str(run), "-o", str(out), "-q", "--lang", lang]) == 0
        return
    env = {"PYTHONPATH": str(ROOT), "LANG": env_lang, "LC_ALL": "", "PATH": "/usr/bin:/bin"}
    args = [sys.executable, "-m", "reportgen", str(run), "-o", str(out), "-q"] + (["--lang", lang] if lang else [])
    subprocess.run(args, cwd=ROOT, env=env, check=True, timeout=300)


@pytest.fixture(scope="module")
def zh_site(tmp_path_factory) -> Path:
    from reportgen.synth import generate_run

    base = tmp_path_factory.mktemp("zh")
    run = generate_run(base / "run", layout="ascend", ranks=8, steps=6, stages=2, tp=2,
                       inject=["slow-rank:5:compute:1.35"])
    _build(run, base / "zh", "zh")
    _build(run, base / "default-zh", "", env_lang="zh_CN.UTF-8")
    _build(run, base / "en", "en")
    return base


def _soup(path: Path):
    return bs4.BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


# Page chrome that must be fully Chinese. Rule-written text (finding titles, evidence, data-quality problems)
# is checked by its own test once the rules carry lazy messages.
PAGES = ["index.html", "cluster/step-trace.html"]
RULE_TEXT = [".findings", "#issues-table", ".top-findings"]


@pytest.mark.parametrize("page", PAGES)
def test_zh_pages_leave_no_english_untranslated(zh_site, page):
    soup = _soup(zh_site / "zh" / page)
    assert soup.html["lang"] == "zh-CN"
    data = {t.get_text() for t in soup.select("code")} | {"msreport"}
    run_folder = str(zh_site / "run")
    run_title = soup.select_one(".brand a").get_text()
    for sel in RULE_TEXT + ["script", "style", "code", ".brand"]:
        for t in soup.select(sel):
            t.decompose()
    hosts = set(re.findall(r"node\d+", soup.get_text()))
    left = []
    for s in soup.find_all(string=True):
        if isinstance(s, (bs4.Doctype, bs4.Comment)):
            continue
        words = _english_words(s.replace(run_title, "").replace(run_folder, ""), data | hosts)
        if words:
            left.append((s.strip()[:80], words))
    for t in soup.find_all(True):
        for attr in ("title", "aria-label", "placeholder", "alt"):
            if t.get(attr) and _english_words(t[attr], data):
                left.append((f"{t.name}[{attr}]={t[attr]}", _english_words(t[attr], data)))
    assert not left, "\n".join(map(str, left))
    assert CJK.search(soup.get_text())


def _titles(spec, out: list[str]) -> list[str]:
    if isinstance(spec, dict):
        for k, v in spec.items():
            if k == "title" and isinstance(v, str):
                out.append(v)
            elif k != "datasets":
                _titles(v, out)
    elif isinstance(spec, list):
        for v in spec:
            _titles(v, out)
    return out


@pytest.mark.parametrize("page", PAGES)
def test_zh_chart_titles_axes_and_tooltips_are_chinese(zh_site, page):
    soup = _soup(zh_site / "zh" / page)
    specs = [json.loads(s.string) for s in soup.select("script.spec")]
    assert specs
    titles = [t for s in specs for t in _titles(s, [])]
    assert titles and any(CJK.search(t) for t in titles)
    assert not [t for t in titles if _english_words(t, set())], titles
    captions = [c.get_text() for c in soup.select("figcaption")]
    assert all(CJK.search(c) for c in captions), captions


def test_nav_and_default_language_from_the_locale(zh_site):
    zh = _soup(zh_site / "zh" / "index.html")
    assert [a.get_text() for a in zh.select("header nav a")][:2] == ["概览", "迭代轨迹"]
    # LANG=zh_CN without --lang builds the same Chinese pages (up to the build time stamp)
    default = (zh_site / "default-zh" / "cluster" / "step-trace.html").read_text(encoding="utf-8")
    assert default == (zh_site / "zh" / "cluster" / "step-trace.html").read_text(encoding="utf-8")


def test_en_report_is_english(zh_site):
    en = _soup(zh_site / "en" / "index.html")
    assert en.html["lang"] == "en"
    assert not CJK.search((zh_site / "en" / "index.html").read_text(encoding="utf-8"))
    assert [a.get_text() for a in en.select("header nav a")][:2] == ["Overview", "Step trace"]


def test_summary_json_stays_language_neutral(zh_site):
    zh = json.loads((zh_site / "zh" / "summary.json").read_text(encoding="utf-8"))
    en = json.loads((zh_site / "en" / "summary.json").read_text(encoding="utf-8"))
    assert [f["id"] for f in zh["findings"]] == [f["id"] for f in en["findings"]]
    assert [f["severity"] for f in zh["findings"]] == [f["severity"] for f in en["findings"]]
    neutral = ("title", "advice", "why", "title_en", "generated_at", "evidence", "summary")
    strip = lambda d: {k: v for k, v in d.items() if k not in neutral}  # noqa: E731
    assert strip(zh).keys() == strip(en).keys()
    assert zh["run"]["ranks"] == en["run"]["ranks"]


def test_cli_help_and_errors_follow_the_language():
    env = {"PYTHONPATH": str(ROOT), "LANG": "C", "LC_ALL": "", "PATH": "/usr/bin:/bin"}
    zh = subprocess.run([sys.executable, "-m", "reportgen", "--lang", "zh", "-h"], cwd=ROOT, env=env,
                        capture_output=True, text=True, timeout=60)
    assert zh.returncode == 0 and "离线性能报告" in zh.stdout and "--lang" in zh.stdout
    err = subprocess.run([sys.executable, "-m", "reportgen"], cwd=ROOT, env=env | {"LANG": "zh_CN.UTF-8"},
                         capture_output=True, text=True, timeout=60)
    assert err.returncode == 2 and "需要指定运行目录" in err.stderr
    en = subprocess.run([sys.executable, "-m", "reportgen"], cwd=ROOT, env=env, capture_output=True, text=True,
                        timeout=60)
    assert en.returncode == 2 and "the run folder is required" in en.stderr and not CJK.search(en.stderr)


def test_finding_text_in_the_report_language_with_title_en(zh_site):
    """A slow-rank finding (rank 5 injected 1.35x slower in compute): Chinese title, why and advice on the zh page
    and in summary.json, the English title kept as `title_en`; the en summary's title is that same English."""
    zh = json.loads((zh_site / "zh" / "summary.json").read_text(encoding="utf-8"))
    en = json.loads((zh_site / "en" / "summary.json").read_text(encoding="utf-8"))
    fz = next(f for f in zh["findings"] if f["id"] == "slow-rank.compute")
    fe = next(f for f in en["findings"] if f["id"] == "slow-rank.compute")
    assert fz["ranks"] == fe["ranks"] == [5]
    assert fz["title_en"] == fe["title"] == fe["title_en"]
    assert fe["title"].startswith("Rank 5 computes longer than its peers")
    assert fz["title"].startswith("卡 5 计算耗时长于") and not _english_words(fz["title"], set())
    assert CJK.search(fz["advice"]) and CJK.search(fz["why"])
    page = _soup(zh_site / "zh" / "index.html")
    li = next(li for li in page.select("li.finding") if li.select_one(".fid").get_text() == "slow-rank.compute")
    assert li.select_one(".ftitle").get_text() == fz["title"]
    assert "为什么重要" in li.get_text() and "优化建议" in li.get_text()


def test_numbers_follow_the_language():
    """Babel formats numbers and percentages for zh (no space before %, the locale's grouping); English keeps the
    report's own style."""
    assert i18n.format_percent(12.345, 1, "en") == "12.3 %"
    assert i18n.format_percent(12.345, 1, "zh") == "12.3%"
    assert i18n.format_number(1234567.891, 2, "zh") == "1,234,567.89"
    from reportgen.site.render.jinja_env import make_env

    with i18n.use("zh"):
        env = make_env()
        assert env.filters["pct1"](0.5) == "50.0%" and env.filters["num"](12345.0) == "12,345"
    env = make_env()
    assert env.filters["pct1"](0.5) == "50.0 %"


# --- compare / trend in the report language ---------------------------------------------------------------------


def data_comparable(zh_runs) -> bool:
    return json.loads((zh_runs["compare"] / "compare.json").read_text(encoding="utf-8"))["comparability"]["comparable"]


def test_compare_and_trend_pages_and_messages_in_chinese(zh_runs):
    """`msreport compare` under LANG=zh_CN (no --lang): Chinese messages and page; compare.json stays English."""
    cli = zh_runs["compare-cli"]
    assert "迭代耗时" in cli.stdout and "比较结果已写入" in cli.stdout, cli.stdout
    page = _soup(zh_runs["compare"] / "index.html")
    assert page.html["lang"] == "zh-CN"
    assert page.select_one("#compare h1").get_text() == "运行比较"
    # 16 ranks against 8: not comparable, nothing judged; the gate box says why, in Chinese
    assert page.select_one("#gate h2").get_text() == "两次运行无法比较"
    assert data_comparable(zh_runs) is False
    # gate reasons and run warnings: English in compare.json, the same items in Chinese on the page
    data = json.loads((zh_runs["compare"] / "compare.json").read_text(encoding="utf-8"))
    assert data["warnings"] and not any(CJK.search(w) for w in data["warnings"])
    assert any("different profiler output layouts" in w for w in data["warnings"])
    shown = [li.get_text() for li in page.select(".cmp-warn li")]
    assert len(shown) == len(data["warnings"]) and all(CJK.search(w) for w in shown), shown
    blocking = [li.get_text() for li in page.select("#gate li")]
    checks = [c for c in data["comparability"]["checks"] if c["blocking"]]
    assert len(blocking) == len(checks) >= 1 and all(CJK.search(r) for r in blocking)
    assert not any(CJK.search(c["label"]) for c in checks) and data["gate"]["reasons"] == []
    # percentages as zh writes them ("+12.3%"), statuses and chart legends translated
    assert re.search(r"[+-]\d[\d,]*\.\d%", page.select_one("#tbl-phases").get_text())
    assert not re.search(r"\d %", page.select_one("#tbl-phases").get_text())
    specs = [json.loads(s.string) for s in page.select("script.spec")]
    titles = [t for sp in specs for t in _titles(sp, [])]
    assert titles and not [t for t in titles if _english_words(t, set())], titles
    statuses = {r["status"] for sp in specs for rows in sp.get("datasets", {}).values() for r in rows
                if isinstance(r, dict) and "status" in r}
    assert statuses and all(CJK.search(s) for s in statuses), statuses
    trend = _soup(zh_runs["trend"] / "index.html")
    assert trend.html["lang"] == "zh-CN" and trend.select_one("#trend h1").get_text() == "2 次运行的趋势"
    tdata = json.loads((zh_runs["trend"] / "trend.json").read_text(encoding="utf-8"))
    assert all(not CJK.search(f["subject"]) for f in tdata["findings"])
    assert all(f["title_en"] and not CJK.search(f["title_en"]) for f in tdata["findings"])


def test_compare_help_follows_the_language():
    env = {"PYTHONPATH": str(ROOT), "LANG": "C", "LC_ALL": "", "PATH": "/usr/bin:/bin"}
    for cmd, word in (("compare", "比较两次运行"), ("trend", "趋势")):
        r = subprocess.run([sys.executable, "-m", "reportgen", cmd, "--lang", "zh", "-h"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and word in r.stdout and "--lang" in r.stdout, r.stdout
        en = subprocess.run([sys.executable, "-m", "reportgen", cmd, "-h"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
        assert en.returncode == 0 and not CJK.search(en.stdout)
    bad = subprocess.run([sys.executable, "-m", "reportgen", "compare", "a", "b", "-o", "x", "--lang", "fr"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--lang" in bad.stderr


# --- one site in two languages -------------------------------------------------------------------------------------


def _switch(page: Path, soup=None):
    links = (soup or _soup(page)).select("a.lang-switch")
    assert len(links) == 1, page
    return links[0]


def test_two_languages_every_page_links_to_the_same_page_in_the_other(zh_runs):
    """`--lang en,zh`: English at the root, Chinese under zh/, the same pages in both; every page's switch link
    lands on the same page (same path in the other tree) of the other language, which links back."""
    root = zh_runs["pipeline-both"]
    en_pages = {p.relative_to(root) for p in root.rglob("*.html") if p.relative_to(root).parts[0] != "zh"}
    zh_pages = {p.relative_to(root / "zh") for p in (root / "zh").rglob("*.html")}
    assert len(en_pages) > 10 and en_pages == zh_pages
    for rel in sorted(en_pages):
        soups = {}  # each page parsed once (read only here)
        soup = lambda p: soups.get(p.resolve()) or soups.setdefault(p.resolve(), _soup(p))  # noqa: E731
        for here, there, lang in ((root, root / "zh", "zh"), (root / "zh", root, "en")):
            a = _switch(here / rel, soup(here / rel))
            assert a["hreflang"] == lang and a.get_text() == {"zh": "中文", "en": "English"}[lang]
            target = ((here / rel).parent / a["href"]).resolve()
            assert target == (there / rel).resolve(), (rel, a["href"])
            other = soup(target)
            assert other.html["lang"] == ("zh-CN" if lang == "zh" else "en")
            back = ((there / rel).parent / _switch(there / rel, soup(there / rel))["href"]).resolve()
            assert back == (here / rel).resolve()
    # the same page identity: the same section ids and the same number of findings in either language
    for rel in (Path("index.html"), Path("cluster/communication.html")):
        a, b = _soup(root / rel), _soup(root / "zh" / rel)
        assert [s.get("id") for s in a.select("section[id]")] == [s.get("id") for s in b.select("section[id]")]
        assert len(a.select("li.finding")) == len(b.select("li.finding"))
    # one summary.json (the primary language's), the assets and traces shared, every link lands
    assert (root / "summary.json").is_file() and not (root / "zh" / "summary.json").exists()
    assert not (root / "zh" / "assets").exists()
    summary = json.loads((root / "summary.json").read_text(encoding="utf-8"))
    assert not CJK.search(json.dumps([f["title"] for f in summary["findings"]], ensure_ascii=False))
    from test_links import check_site

    assert check_site(root) > 100


def test_two_languages_findings_md_in_each_tree_linked_from_its_overview(zh_runs):
    """findings.md in each language's tree, in that language (the same findings, in the same order, with the titles
    the pages show), and each overview links to its own tree's file."""
    from reportgen.site.render.findings_md import md_text

    root = zh_runs["pipeline-both"]
    summary = json.loads((root / "summary.json").read_text(encoding="utf-8"))
    ids = [f["id"] for f in summary["findings"]]
    for tree, lang in ((root, "en"), (root / "zh", "zh")):
        page = _soup(tree / "index.html")
        a = page.select_one("#findings-md a[href]")
        assert a is not None and (tree / a["href"]).resolve() == (tree / "findings.md").resolve()
        md = (tree / "findings.md").read_text(encoding="utf-8")
        assert [m for m in re.findall(r"^- id: `([^`]+)`", md, re.M)] == ids
        titles = [li.select_one(".ftitle").get_text() for li in page.select("li.finding")]
        heads = re.findall(r"^## \d+\. \[[^]]+\] (.*)$", md, re.M)
        assert heads == [md_text(t, 300) for t in titles]
        head = md.splitlines()[0]
        if lang == "zh":
            assert head.startswith("# msreport 诊断结论") and all(CJK.search(h) for h in heads)
            assert "critical" not in md.splitlines()[2] and "严重" in md.splitlines()[2]
        else:
            assert head.startswith("# msreport findings:") and not CJK.search(md)


def test_two_languages_for_a_folder_of_runs(zh_runs):
    """A folder of two runs with `--lang zh,en`: a landing page per language, each linking to the runs' reports in
    its language and to the other landing page; every link of the whole output lands."""
    root = zh_runs["runs"]
    zh, en = _soup(root / "index.html"), _soup(root / "en" / "index.html")
    assert zh.html["lang"] == "zh-CN" and en.html["lang"] == "en"
    assert ((root / "en") / _switch(root / "en" / "index.html")["href"]).resolve() == (root / "index.html").resolve()
    assert (root / _switch(root / "index.html")["href"]).resolve() == (root / "en" / "index.html").resolve()
    for soup, here, lang in ((zh, root, "zh-CN"), (en, root / "en", "en")):
        reports = [(here / a["href"]).resolve() for a in soup.select("main a[href]")]
        assert len(reports) == 2
        assert all(_soup(p).html["lang"] == lang for p in reports)
    from test_links import check_site

    assert check_site(root) > 100


def test_single_file_takes_one_language(tmp_path):
    from reportgen.synth import generate_run

    run = generate_run(tmp_path / "run", layout="ascend", ranks=2, steps=3)
    env = {"PYTHONPATH": str(ROOT), "LANG": "C", "LC_ALL": "", "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, "-m", "reportgen", str(run), "-o", str(tmp_path / "r.html"), "--single-file",
                        "--lang", "zh,en"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "--single-file" in r.stderr.splitlines()[-1]
    assert not (tmp_path / "r.html").exists()
    bad = subprocess.run([sys.executable, "-m", "reportgen", str(run), "-o", str(tmp_path / "x"), "--lang", "zh,zh"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "zh,zh" in bad.stderr


# --- numbers inside finding texts; impact.basis stays English ------------------------------------------------------


def test_percentages_in_finding_titles_follow_the_language(zh_site):
    zh = json.loads((zh_site / "zh" / "summary.json").read_text(encoding="utf-8"))
    en = json.loads((zh_site / "en" / "summary.json").read_text(encoding="utf-8"))
    with_pct = [f for f in en["findings"] if re.search(r"\d %", f["title"])]
    assert with_pct, [f["title"] for f in en["findings"]]
    by_id = {f["id"]: f for f in zh["findings"]}
    for f in with_pct:
        z = by_id[f["id"]]
        assert z["title_en"] == f["title"]
        assert not re.search(r"\d %", z["title"]) and re.search(r"\d%", z["title"]), z["title"]
        # the same numbers in both titles
        assert re.findall(r"\d+(?:\.\d+)?", z["title"]) == re.findall(r"\d+(?:\.\d+)?", f["title"])


def test_impact_basis_is_english_in_summary_and_translated_on_the_page(zh_site):
    zh = json.loads((zh_site / "zh" / "summary.json").read_text(encoding="utf-8"))
    en = json.loads((zh_site / "en" / "summary.json").read_text(encoding="utf-8"))
    zb = {f["id"]: f["impact"]["basis"] for f in zh["findings"] if f.get("impact", {}).get("basis")}
    eb = {f["id"]: f["impact"]["basis"] for f in en["findings"] if f.get("impact", {}).get("basis")}
    assert zb and zb == eb and not any(CJK.search(b) for b in zb.values())
    page = _soup(zh_site / "zh" / "index.html")
    shown = [p.select_one(".muted").get_text() for p in page.select("p.impact") if p.select_one(".muted")]
    assert shown and all(CJK.search(b) for b in shown), shown


def test_execution_page_legends_lanes_and_memory_tooltip_in_chinese(zh_runs):
    """The execution view's legends (operator classes, timeline kinds, communication / wait) and its lane labels are
    Chinese on zh pages, and every data value a legend colours is in its scale's domain (colours stay right)."""
    soup = _soup(zh_runs["pipeline"] / "cluster" / "execution.html")
    specs = {s.get("data-chart") or n: json.loads(s.string) for n, s in enumerate(soup.select("script.spec"))}
    domains, values = [], set()

    def walk(v):
        if isinstance(v, dict):
            for k, x in v.items():
                if k == "scale" and isinstance(x, dict) and isinstance(x.get("domain"), list):
                    domains.append(x["domain"])
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    for spec in specs.values():
        walk(spec)
        for rows in (spec.get("datasets") or {}).values():
            values.update(r.get("cls") for r in rows if isinstance(r, dict) and r.get("cls"))
            values.update(r.get("metric") for r in rows if isinstance(r, dict) and r.get("metric"))
    words = [d for dom in domains for d in dom if isinstance(d, str)]
    assert words and all(CJK.search(w) for w in words), words
    assert values and values <= set(words), (values, words)
    cols = [json.loads(s.string) for s in soup.select("script[type='application/json']")]
    lanes = [ln for c in cols if isinstance(c, dict) for ds in c.values() if isinstance(ds, dict)
             for ln in (ds.get("dicts") or {}).get("lane", [])]
    cats = [c_ for c in cols if isinstance(c, dict) for ds in c.values() if isinstance(ds, dict)
            for c_ in (ds.get("dicts") or {}).get("cat", [])]
    assert lanes and cats and all(CJK.search(c) for c in cats)
    assert not [ln for ln in lanes if re.search(r"\b(rank|stage|Communication|plane|stream|thread)\b", ln)], lanes


def test_memory_tooltip_says_capacity_unknown():
    from reportgen.site.pages.execution import memory_tip

    assert memory_tip(30100.0, 32768.0) == "30,100 of 32,768 MB"
    assert memory_tip(30100.0, None) == "30,100 MB, capacity unknown"
    assert memory_tip(None, 32768.0) == ""
    with i18n.use("zh"):
        assert memory_tip(30100.0, None) == "30,100 MB，容量未知"
        assert memory_tip(30100.0, float("nan")) == "30,100 MB，容量未知"


def test_zh_finding_texts_have_no_spaces_between_chinese_words(tmp_path):
    """Before: "msprof-analyze advisor：集群中 通信 存在问题", "把它们的 计算 和 空闲 设为": a translated label
    placed between Chinese words kept the English spaces around it. Every finding of the example run, in Chinese."""
    import json as _json

    from reportgen.analysis import analyze
    from reportgen.cli import EXAMPLE
    from reportgen.layouts import discover, load_run
    from reportgen.rules import run_rules
    from reportgen.synth import generate_run

    run = generate_run(tmp_path / "run", **EXAMPLE)
    findings, _ = run_rules(analyze(load_run(discover(run)[0], jobs=1)))
    assert any(f.id.startswith("msprof-analyze.") for f in findings)
    with i18n.use("zh"):
        text = _json.dumps([f.to_dict() for f in findings], ensure_ascii=False)
    assert "集群中通信（未被掩盖）存在问题" in text or re.search(r"集群中[\u4e00-\u9fff（）]+存在问题", text), text[:500]
    stray = re.findall(r".{0,12}[\u4e00-\u9fff] [\u4e00-\u9fff]+ [\u4e00-\u9fff].{0,12}", text)
    assert not stray, stray


def test_numbers_are_babels_format_decimal_and_format_percent():
    """`i18n.format_number` / `format_percent` keep Babel's parsed locale and pattern: the text is what Babel's own
    functions write, in every language, for whole, fractional, negative, huge and rounding-edge values."""
    import math

    from babel.numbers import format_decimal, format_percent

    from reportgen import i18n

    import random

    rnd = random.Random(33)
    values = [0.0, -0.0, 1.0, -1.0, 0.05, 0.15, 2.675, 12.345, 999.9999, 1234567.891, -98765.4321, 1e-9, 1e15,
              123456789012.5, math.pi * 1e4, 0.5, 1.5, 2.5, -0.04, 5e-324, 1e16, -1e15, 7, -12, 10 ** 14,
              float("inf"), -float("inf")]
    # (Python's formatting of the same Decimal stands in for Babel's where it writes the same: random values too)
    values += [rnd.uniform(-1e4, 1e4) for _ in range(300)] + [round(rnd.uniform(0, 100), 3) for _ in range(300)]
    for lang in ("zh", "en"):
        loc = i18n._BABEL_LOCALE.get(lang, "en_US")
        for digits in (0, 1, 2, 3):
            fmt = "#,##0" + ("." + "0" * digits if digits > 0 else "")
            for v in values:
                assert i18n.format_number(v, digits, lang) == format_decimal(v, format=fmt, locale=loc), (lang, v)
                if lang != i18n.DEFAULT:
                    want = format_percent(v / 100.0, format=fmt + "%", locale=loc)
                    assert i18n.format_percent(v, digits, lang) == want, (lang, digits, v)
    assert i18n._as_python("zh")  # (the fast path is the one compared above)


def test_a_locale_that_writes_numbers_otherwise_keeps_babel(monkeypatch):
    """A language whose locale writes numbers with other signs (German: "1.234,5") never takes Python's
    formatting: Babel's text."""
    from babel.numbers import format_decimal, format_percent

    from reportgen import i18n

    monkeypatch.setitem(i18n._BABEL_LOCALE, "de", "de_DE")
    assert not i18n._as_python("de")
    assert i18n.format_number(1234.5, 1, "de") == format_decimal(1234.5, format="#,##0.0", locale="de_DE") == "1.234,5"
    assert i18n.format_percent(12.25, 1, "de") == format_percent(0.1225, format="#,##0.0%", locale="de_DE")
    i18n._as_python.cache_clear()
