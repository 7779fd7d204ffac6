"""The tree read top-down is the pipeline: no module imports a layer above its own (issue 15).

discover -> loaders -> analysis -> rules -> charts -> site -> report -> commands. The foundation modules (model,
numbers, fmt, errors, urls, intervals, progress) import no pipeline layer. Late imports inside functions count too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import reportgen

ROOT = Path(reportgen.__file__).parent
LAYERS = [
    {"__init__", "errors", "numbers", "fmt", "jsonguard", "intervals", "urls", "progress", "i18n", "model", "pools",
     "idle"},  # idle time by cause: the Kineto loader computes it per rank where the kernel arrays are
    {"discover"},
    {"loaders"},
    {"synth"},  # writes profiler files with the loaders' formats (for tests and --example)
    {"analysis"},
    {"rules"},
    {"charts"},
    {"site"},
    {"report"},
    {"cliutil"},
    {"compare"},
    {"cli", "__main__", "entry"},
]
LEVEL = {name: i for i, names in enumerate(LAYERS) for name in names}


def _imports(path: Path) -> set[str]:
    out = set()
    for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(n, ast.ImportFrom) and n.module and (n.module == "reportgen" or n.module.startswith("reportgen.")):
            parts = n.module.split(".")
            out |= {a.name for a in n.names} if len(parts) == 1 else {parts[1]}
        elif isinstance(n, ast.Import):
            out |= {a.name.split(".")[1] for a in n.names if a.name.startswith("reportgen.")}
    return out


def test_every_module_has_a_layer():
    tops = {p.stem if p.is_file() else p.name for p in ROOT.iterdir()
            if (p.suffix == ".py") or (p.is_dir() and (p / "__init__.py").exists())}
    assert tops <= set(LEVEL), f"place these in LAYERS: {sorted(tops - set(LEVEL))}"


def test_no_import_runs_back_up():
    upward = []
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT).parts
        src = rel[0].removesuffix(".py")
        for dst in _imports(path):
            if dst in LEVEL and dst != src and LEVEL[dst] > LEVEL[src]:
                upward.append(f"{'/'.join(rel)} imports {dst}")
    assert not upward, "\n".join(sorted(upward))


def test_tests_find_the_real_samples_through_one_place():
    """A plain clone has no ../shared/samples: every test reaches the samples through tests/conftest.py (SAMPLES,
    sample(), samples_root), which skips when they are absent and which MSREPORT_SAMPLES redirects (CI hides them
    that way). A literal path in a test failed instead of skipping on a fresh clone (issue 31)."""
    tests = Path(__file__).parent
    allowed = {"conftest.py", "test_fuzz.py", Path(__file__).name}  # test_fuzz.py runs standalone too: same rule
    spelled = [p.name for p in sorted(tests.glob("*.py"))
               if p.name not in allowed and re.search(r'/ "shared"|"(\.\./)?shared/samples/', p.read_text())]
    assert spelled == [], spelled
