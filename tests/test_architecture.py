"""Architecture checks: the package read top-down is the pipeline, and `msreport --help` names its sub-commands."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "reportgen"
# Pipeline order: a layer may import its own layer and the layers before it, never one after it.
# `model` is the data vocabulary the loaders fill (RankData, DataQuality, ...): every stage imports its types and
# it imports nothing from the package, so it sits at the bottom, below discover (which records data-quality entries).
LAYERS = ["model", "discover", "loaders", "analysis", "rules", "charts", "site"]


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) < 2 or parts[0] != "reportgen":
        return None
    return parts[1] if parts[1] in LAYERS else None


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) for every import in the file, relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    here = _module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append((node.lineno, mod))
            # `from reportgen import site` names a layer too
            if mod == "reportgen":
                out += [(node.lineno, f"reportgen.{a.name}") for a in node.names]
    return out


def upward_imports(pkg: Path = PKG) -> list[str]:
    bad = []
    for path in sorted(pkg.rglob("*.py")):
        src = _layer(_module_name(path))
        if src is None:
            continue
        for line, mod in _imports(path):
            dst = _layer(mod)
            if dst is not None and LAYERS.index(dst) > LAYERS.index(src):
                bad.append(f"{path.relative_to(ROOT)}:{line} ({src}) imports {mod} ({dst})")
    return bad


def test_no_import_runs_back_up_the_pipeline():
    bad = upward_imports()
    assert not bad, "imports against the pipeline order:\n" + "\n".join(bad)


def test_the_checker_catches_an_upward_import(tmp_path):
    pkg = tmp_path / "reportgen"
    (pkg / "loaders").mkdir(parents=True)
    (pkg / "site").mkdir()
    for d in (pkg, pkg / "loaders", pkg / "site"):
        (d / "__init__.py").write_text("")
    (pkg / "loaders" / "bad.py").write_text("from ..site import builder\nimport reportgen.charts.x\n")
    (pkg / "site" / "ok.py").write_text("from reportgen.loaders import bad\n")
    global ROOT
    old = ROOT
    ROOT = tmp_path
    try:
        bad = upward_imports(pkg)
    finally:
        ROOT = old
    assert len(bad) == 2 and all(b.startswith("reportgen/loaders/bad.py") for b in bad), bad


def test_help_lists_the_sub_commands():
    out = subprocess.run([sys.executable, "-m", "reportgen", "--help"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0
    assert "msreport compare" in out.stdout and "msreport trend" in out.stdout


# --- templates see view-models only ---------------------------------------------------------------------------------

def _analysis_objects(obj, where: str, found: list[str], depth: int = 0) -> list[str]:
    """Paths inside a page context that hold a DataFrame/Series or an object of reportgen.model / reportgen.analysis."""
    import dataclasses

    import pandas as pd

    if depth > 16:
        return found
    mod = type(obj).__module__ or ""
    if isinstance(obj, (pd.DataFrame, pd.Series, pd.Index)) or mod.startswith(("reportgen.model", "reportgen.analysis")):
        found.append(f"{where}: {mod}.{type(obj).__name__}")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _analysis_objects(v, f"{where}.{k}", found, depth + 1)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for i, v in enumerate(obj):
            _analysis_objects(v, f"{where}[{i}]", found, depth + 1)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            _analysis_objects(getattr(obj, f.name), f"{where}.{f.name}", found, depth + 1)
    elif mod.startswith("reportgen") and hasattr(obj, "__dict__"):
        for k, v in vars(obj).items():
            _analysis_objects(v, f"{where}.{k}", found, depth + 1)
    return found


def test_page_contexts_hold_no_analysis_objects(tmp_path):
    from reportgen import report
    from reportgen.discover import discover
    from reportgen.progress import Progress
    from reportgen.site.pages import plan_pages
    from reportgen.synth import generate_run

    generate_run(tmp_path / "run", ranks=4, steps=3, inject=["slow-rank:1:compute:1.4"])
    layout = discover(tmp_path / "run")[0]
    opts = report.BuildOptions()
    run = report.load_phase(layout, opts, Progress(False))
    analysis, findings, thresholds = report.analyse_phase(run, opts)
    plan = plan_pages(analysis, findings, thresholds=thresholds)
    assert len(plan.pages) > 5
    found: list[str] = []
    for page in plan.pages:
        _analysis_objects(page.context, page.path, found)
    assert not found, "analysis objects reach a template:\n" + "\n".join(found[:40])
    # the walker does see them when they are there
    import pandas as pd

    planted = {"rows": [{"df": pd.DataFrame({"x": [1]})}], "an": analysis, "ok": [1.5, "s"]}
    hits = _analysis_objects(planted, "planted", [])
    assert len(hits) == 2 and hits[0].startswith("planted.rows[0].df") and "Analysis" in hits[1], hits
