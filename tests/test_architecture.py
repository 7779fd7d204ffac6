"""The tree read top-down is the pipeline: no module imports a layer above its own (issue 15).

discover -> loaders -> analysis -> rules -> charts -> site -> report -> commands. The foundation modules (model,
numbers, fmt, errors, urls, intervals, progress, dataquality) import no pipeline layer. Late imports inside functions
count too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import reportgen

ROOT = Path(reportgen.__file__).parent
LAYERS = [
    {"__init__", "errors", "numbers", "fmt", "jsonguard", "intervals", "urls", "progress", "i18n", "model", "pools",
     "framepack",  # frames in a compact pickled form (model.Communication's frames, across processes and the cache)
     "sealed",  # objects kept pickled until read (a rank's fields a rebuild's main process may never read)
     "idle",  # idle time by cause: the Kineto loader computes it per rank where the kernel arrays are
     "dataquality",  # the data-quality codes and their templates: every layer writes them (imports i18n only)
     "collectives",  # collective naming (kinds, display names, op classes): loaders, model and summary share it
     "groupsum",  # pandas' groupby sums and means without its per-call cost: the loaders and the analyses use them
     "framestack"},  # per-rank frames stacked as pd.concat stacks them, column by column (the operator totals)
    {"discover"},
    {"loaders", "rankcache"},  # rankcache: loaders.dispatch.map_ranks through the per-rank summaries cached on disk
    {"layouts"},  # one object per profiler family: detection, per-rank and run-level loading (issue 31)
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
    assert upward == [], "\n".join(sorted(upward))


def test_tests_find_the_real_samples_through_one_place():
    """A plain clone has no ../shared/samples: every test reaches the samples through tests/conftest.py (SAMPLES,
    sample(), samples_root), which skips when they are absent and which MSREPORT_SAMPLES redirects (CI hides them
    that way). A literal path in a test failed instead of skipping on a fresh clone (issue 31)."""
    tests = Path(__file__).parent
    allowed = {"conftest.py", "test_fuzz.py", Path(__file__).name}  # test_fuzz.py runs standalone too: same rule
    spelled = [p.name for p in sorted(tests.glob("*.py"))
               if p.name not in allowed and re.search(r'/ "shared"|"(\.\./)?shared/samples/', p.read_text())]
    assert spelled == [], spelled


# --- import cycles and module size (issue 31) ------------------------------------------------------------


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in ROOT.rglob("*.py")}


def _module_imports(path: Path) -> set[str]:
    """The reportgen modules `path` imports, late imports inside functions included, those under
    `if TYPE_CHECKING:` not (they never run). `from package import name` counts as the submodule `package.name`
    when there is one, else as the package."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(k) for n in ast.walk(tree) if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)
                   for m in n.body for k in ast.walk(m)}
    out: set[str] = set()
    for n in ast.walk(tree):
        if id(n) in typing_only:
            continue
        if isinstance(n, ast.Import):
            out.update(a.name for a in n.names if a.name in MODULES)
        elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
            for a in n.names:
                sub = f"{n.module}.{a.name}"
                out.add(sub if sub in MODULES else n.module)
    out.discard(_module_name(path))
    return out & set(MODULES)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


# Circles known and not yet broken, each with where it is (remove the entry when it is gone).
KNOWN_CYCLES: list[list[str]] = []


def test_no_import_cycle_inside_reportgen():
    """No circle of modules importing each other, late imports included (a circle works in one import order only
    and says the concerns are not separated: loaders.common and loaders.columnar imported each other, issue 31)."""
    graph = {name: _module_imports(path) for name, path in MODULES.items()}
    assert [c for c in _cycles(graph) if c not in KNOWN_CYCLES] == []


MAX_LINES = 500
REASON = re.compile(r"^\s*(Over|Longer than) \d+ lines\b", re.I | re.M)


# Long modules waiting for a split (none: site/ and compare/ were split or state their reason, issue 31).
LONG_PENDING: set[str] = set()


def test_no_module_over_500_lines_without_a_stated_reason():
    """A module past ~500 lines holds several concerns, unless its first docstring says why it does not (a line
    starting "Over 500 lines:" or "Longer than 500 lines:" in the docstring's first 12 lines)."""
    long = []
    for name, path in sorted(MODULES.items()):
        if name in LONG_PENDING:
            continue
        text = path.read_text(encoding="utf-8")
        if text.count("\n") <= MAX_LINES:
            continue
        doc = ast.get_docstring(ast.parse(text)) or ""
        if not REASON.search("\n".join(doc.splitlines()[:12])):
            long.append(f"{name}: {text.count(chr(10))} lines")
    assert long == [], "split these or state the reason at the top:\n" + "\n".join(long)


# --- public names: every import names the module that defines the name (issue 31) -------------------------


def _own_names(path: Path) -> tuple[set[str], set[str]]:
    """(names `path` defines, names it lists in `__all__`): a module's top-level functions, classes and
    assignments, and the names it binds by a renaming import (`finite as num`: its own word for it)."""
    own: set[str] = set()
    listed: set[str] = set()
    todo = list(ast.parse(path.read_text(encoding="utf-8")).body)
    while todo:  # the module's own statements, those under `if` and `try` included, not those inside functions
        n = todo.pop()
        if isinstance(n, (ast.If, ast.Try)):
            todo += [*n.body, *n.orelse, *getattr(n, "finalbody", []), *(h for x in getattr(n, "handlers", [])
                                                                          for h in x.body)]
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            own.add(n.name)
        elif isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                own |= {x.id for x in ast.walk(t) if isinstance(x, ast.Name)}
                if isinstance(t, ast.Name) and t.id == "__all__" and isinstance(n.value, (ast.List, ast.Tuple)):
                    listed |= {e.value for e in n.value.elts if isinstance(e, ast.Constant)}
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            own |= {a.asname for a in n.names if a.asname and a.asname != a.name.split(".")[-1]}
    return own, listed


_FROM = re.compile(r"^[ \t]*(from reportgen[\w.]* import (?:\([^)]*\)|[^\n]*))", re.M)


def _borrowed(paths) -> list[str]:
    """`from reportgen.X import name` where X neither defines `name` nor lists it in `__all__`.
    (The import lines are found by pattern and parsed alone: parsing every test file whole takes seconds.)"""
    cache: dict[str, tuple[set[str], set[str]]] = {}
    out = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        for m in _FROM.finditer(text):
            try:
                n = ast.parse(m[1]).body[0]
            except SyntaxError:  # a line of a docstring that starts like an import
                continue
            if not (isinstance(n, ast.ImportFrom) and n.module in MODULES):
                continue
            home = MODULES[n.module]
            if n.module not in cache:
                cache[n.module] = _own_names(home)
            own, listed = cache[n.module]
            for a in n.names:
                if f"{n.module}.{a.name}" in MODULES or a.name in own:
                    continue
                if a.name in listed:
                    continue  # a module's (a package's) declared public names
                out.append(f"{path.name}:{text.count(chr(10), 0, m.start()) + 1}: {n.module}.{a.name}")
    return out


def test_borrowed_names_are_found(tmp_path):
    src = tmp_path / "borrows.py"
    src.write_text("from reportgen.rules.base import Finding, Threshold\n"  # base imports Threshold from thresholds
                   "from reportgen.rules.thresholds import th\n"
                   "from reportgen.layouts import load_run\n"  # declared public (the package's __all__)
                   "from reportgen.site.views.values import num\n"  # its own word (numbers.finite as num)
                   "from reportgen.loaders import kineto\n", encoding="utf-8")  # a submodule
    assert _borrowed([src]) == ["borrows.py:1: reportgen.rules.base.Threshold"]


def test_every_import_names_the_module_that_defines_the_name():
    """Tests, scripts and the product import a name from its home (or from a module or package that declares it
    public in `__all__`), never through a module that happens to import it: a re-export kept for old callers hides
    where the code is and breaks when the module stops importing it (loaders/common.py and the aliases in discover/
    and loaders/ were such shims until issue 31)."""
    repo = ROOT.parent
    paths = [*ROOT.rglob("*.py"), *(repo / "tests").glob("*.py"), *(repo / "scripts").glob("*.py")]
    assert _borrowed(paths) == []


# CI's plain-clone stage runs only the tests that can reach the samples (tests/conftest.py, MSREPORT_SAMPLES_ONLY):
# the selection must see a sample read through a helper, a path held in a module constant, and nothing else.
def _reads_a_sample():
    from tests.conftest import sample

    return sample("real")


def _through_a_helper():
    return _reads_a_sample()


_SAMPLE_DIRS = []


def _holds_a_sample_path():
    return list(_SAMPLE_DIRS)


def _never_looks():
    return sorted(LEVEL)


def test_the_plain_clone_stage_selects_every_test_that_can_reach_the_samples():
    from tests.conftest import SAMPLES, _reaches_samples

    _SAMPLE_DIRS[:] = [SAMPLES / "real"]
    assert _reaches_samples(_reads_a_sample, set()) and _reaches_samples(_through_a_helper, set())
    assert _reaches_samples(_holds_a_sample_path, set())
    assert not _reaches_samples(_never_looks, set())
