"""List the data-quality messages the loaders, discovery and analysis write, as message templates.

Data-quality problems are stored in English in `summary.json` (language-neutral: the same text whatever the report
language). The pages show them in the report's language: `reportgen/site/views/problem_texts.py` holds one template per
message (the f-string with its expressions turned into named placeholders), each a catalog msgid, and
`reportgen.site.views.problems.translate_problem` matches a stored text against them.

    python scripts/problem_texts.py            # rewrite reportgen/site/views/problem_texts.py
    python scripts/problem_texts.py --check    # exit 1 when the source has messages the module lacks

After rewriting, update the catalog (README, "Languages") and translate the new entries.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("reportgen/loaders", "reportgen/discover", "reportgen/layouts", "reportgen/analysis", "reportgen/model.py")
OUT = ROOT / "reportgen" / "site" / "views" / "problem_texts.py"


def _name(expr: ast.AST, used: set[str]) -> str:
    """A placeholder name from the expression: its first identifier (`size / 1e6` -> size), made unique."""
    ids = [n.id for n in ast.walk(expr) if isinstance(n, ast.Name)] + \
          [n.attr for n in ast.walk(expr) if isinstance(n, ast.Attribute)]
    ids = [i for i in ids if i not in ("len", "int", "float", "str", "join", "e", "self", "round", "sorted", "min",
                                       "max", "sum", "abs", "repr", "type")] or ["value"]
    base = re.sub(r"\W", "_", ids[0]).strip("_").lower() or "value"
    name, k = base, 2
    while name in used:
        name, k = f"{base}{k}", k + 1
    used.add(name)
    return name


def _template(node: ast.AST, used: set[str]):
    """The message as a `str.format` template, or None when it is not a string expression we can follow."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.replace("{", "{{").replace("}", "}}")
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value).replace("{", "{{").replace("}", "}}"))
            else:
                parts.append("{" + _name(v.value, used) + "}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = _template(node.left, used), _template(node.right, used)
        return None if a is None or b is None else a + b
    if isinstance(node, ast.IfExp):
        return None
    return "{" + _name(node, used) + "}"


def _branches(node: ast.AST) -> list[ast.AST]:
    """Both arms of conditional messages (`"a" if x else "b"`, also inside a `+`), each as its own message."""
    if isinstance(node, ast.IfExp):
        return _branches(node.body) + _branches(node.orelse)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return [ast.BinOp(l, ast.Add(), r) for l in _branches(node.left) for r in _branches(node.right)]
    return [node]


def templates() -> list[str]:
    found: list[str] = []
    files = []
    for src in SOURCES:
        p = ROOT / src
        files += sorted(p.rglob("*.py")) if p.is_dir() else [p]
    for f in files:
        for n in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if not isinstance(n, ast.Call) or len(n.args) < 2:
                continue
            fn = ast.unparse(n.func)
            # the loaders' door (loaders/schema.py `Door.note`): the problem is the first argument, the stored
            # entry "{n} {problem}; e.g. {example}" (its own template, written by Door.close)
            door = fn in ("door.note", "door.note_many") or \
                (f.name == "schema.py" and fn in ("self.note", "self.note_many"))
            if not (door or fn.endswith("DataIssue") or fn.endswith("log.add") or fn.endswith(".note")):
                continue
            for arm in _branches(n.args[0] if door else n.args[1]):
                t = _template(arm, set())
                # a message that is only placeholders (a text built elsewhere) cannot be matched
                if t and re.sub(r"\{\w+\}", "", t).strip(" :;,.()") and t not in found:
                    found.append(t)
    return found


def evidence_keys() -> list[str]:
    """The keys of the rules' `evidence` dicts as the finding pages show them (`_` -> space)."""
    keys: list[str] = []
    for f in sorted((ROOT / "reportgen" / "rules").glob("*.py")):
        for n in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            dicts = []
            if isinstance(n, ast.keyword) and n.arg == "evidence" and isinstance(n.value, ast.Dict):
                dicts.append(n.value)
            if isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple):  # (message, evidence) helpers
                dicts += [e for e in n.value.elts if isinstance(e, ast.Dict)]
            if isinstance(n, ast.FunctionDef) and (ast.get_docstring(n) or "").startswith("Evidence"):
                # helpers returning a finding's evidence as a dict (slow_rank.falls_behind)
                dicts += [r.value for r in ast.walk(n) if isinstance(r, ast.Return) and isinstance(r.value, ast.Dict)]
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Dict) and any(
                    isinstance(t, ast.Name) and t.id in ("ev", "evidence") for t in n.targets):
                dicts.append(n.value)
            for d in dicts:
                keys += [k.value for k in d.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    if (isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in ("ev", "evidence")
                            and isinstance(t.slice, ast.Constant) and isinstance(t.slice.value, str)):
                        keys.append(t.slice.value)
    out: list[str] = []
    for k in keys:
        label = k.replace("_", " ")
        if label not in out and k != "related":
            out.append(label)
    return out


def render(items: list[str], evidence: list[str]) -> str:
    lines = ['"""Catalog msgids for text made from data: generated by `scripts/problem_texts.py`, do not edit.',
             "",
             "TEMPLATES: the data-quality messages of loaders, discovery and analysis (`site.views.problems`).",
             "EVIDENCE: the keys of the findings' evidence as the finding pages show them.", '"""', "",
             "from reportgen.i18n import N_", "", "TEMPLATES = ("]
    lines += [f"    N_({t!r})," for t in items]
    lines += [")", "", "EVIDENCE = ("]
    lines += [f"    N_({t!r})," for t in evidence]
    lines += [")", ""]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    text = render(templates(), evidence_keys())
    if "--check" in argv:
        if OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT.relative_to(ROOT)} is out of date: run python scripts/problem_texts.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"{OUT.relative_to(ROOT)}: {text.count('N_(')} messages")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
