"""Data-quality problems in the report's language.

Loaders, discovery and analysis write each problem as English text (that is what `summary.json` stores, whatever the
report language). `problem_texts.TEMPLATES` lists every such message as a template with named placeholders (generated
from the source by `scripts/problem_texts.py`), each one a catalog msgid. A stored text is matched against the
templates (most specific first); the placeholders' values (file names, numbers, operator names) are put into the
translated template. Text that matches no template, or whose template has no translation, is shown as written.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Optional

from reportgen import i18n
from reportgen.site.views.problem_texts import TEMPLATES

_FIELD = re.compile(r"\{\{|\}\}|\{(\w+)\}")


def _regex(template: str) -> re.Pattern:
    parts, pos = [], 0
    for m in _FIELD.finditer(template):
        parts.append(re.escape(template[pos:m.start()]))
        parts.append(f"(?P<{m[1]}>.+?)" if m[1] else re.escape(m[0][0]))
        pos = m.end()
    parts.append(re.escape(template[pos:]))
    return re.compile("".join(parts), re.S)


@lru_cache(maxsize=1)
def _compiled() -> list[tuple[str, re.Pattern]]:
    # the template with the most literal text first: "file is empty" must not be read as "{kind}, not a ..."
    literal = lambda t: len(_FIELD.sub("", t))  # noqa: E731
    return [(t, _regex(t)) for t in sorted(set(TEMPLATES), key=literal, reverse=True)]


@lru_cache(maxsize=4096)
def _translate(text: str, lang: str) -> str:
    tr = i18n.translations(lang)
    for template, rx in _compiled():
        m = rx.fullmatch(text)
        if m is None:
            continue
        target = tr.gettext(template)
        if target == template:
            return text
        try:  # a value that is itself a message (the door's "{n} {problem}; e.g. {example}") in `lang` too
            return target.format(**{k: (_translate(v, lang) if k == "problem" else v)
                                    for k, v in m.groupdict().items()})
        except (KeyError, IndexError, ValueError):
            return text
    return text


def translate_problem(text: object, lang: Optional[str] = None) -> str:
    """A stored data-quality problem in `lang` (default: the language of the build)."""
    s = "" if text is None else str(text)
    lang = lang or i18n.current()
    if lang == i18n.DEFAULT or not s:
        return s
    return _translate(s, lang)


i18n.set_problem_translator(translate_problem)
