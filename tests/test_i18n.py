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

bs4 = pytest.importorskip("bs4")

ROOT = Path(__file__).resolve().parents[1]
CJK = re.compile(r"[\u4e00-\u9fff]")
# English words: letters only (ids mixing letters with digits or underscores, like node000 or Level1, are data)
WORD = re.compile(r"(?<![\w./-])[A-Za-z][A-Za-z'-]{2,}(?![\w./-])")
# Technical terms, product and file names the Chinese UI keeps in English (MindInsight's Chinese UI does the same).
ALLOWED = {"HCCL", "HCCS", "RDMA", "SDMA", "PCIe", "AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Send",
           "Receive", "MindInsight", "MindSpore", "Ascend", "msprof-analyze", "msreport", "Vega", "Vega-Lite",
           "vega-embed", "BSD-3-Clause", "Marey", "Host", "ProfilerStep", "step_trace_time", "csv", "CSV", "JSON",
           "ms", "MB", "GB", "Profiler", "torch_npu", "Kineto", "log", "CANN", "profiler"}


def _english_words(text: str, data: set[str]) -> list[str]:
    return [w for w in WORD.findall(text) if w not in ALLOWED and w not in data]


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
            assert sorted(re.findall(r"\{\w+\}|%\(\w+\)s", msgid)) == \
                sorted(re.findall(r"\{\w+\}|%\(\w+\)s", text)), msgid


def _build(run: Path, out: Path, lang: str, env_lang: str = "C") -> None:
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
