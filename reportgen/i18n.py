"""Languages of the report: `--lang zh|en`, Babel message catalogs, and Jinja2's i18n extension.

The catalogs are `reportgen/locale/<lang>/LC_MESSAGES/messages.po`, read at run time with `babel.messages.pofile`
(compiled in memory), so there is no `.mo` file to fall out of date. English is the source language: msgids are the
English texts, and `en` uses no catalog.

Python code marks text with `_()` (translated now, in the language of the build) or `lazy()` (a message object
rendered later in either language: findings keep their English title for `summary.json`'s `title_en`).
Format strings keep named placeholders inside the message (`_("{n} ranks").format(n=...)`) so a translation can move
them.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
from contextvars import ContextVar
from decimal import Decimal
from functools import lru_cache
from importlib import resources
from typing import Any, Iterator, Mapping, Optional

from babel.messages import mofile, pofile
from babel.support import NullTranslations, Translations

LANGUAGES = ("en", "zh")
LANGUAGE_NAMES = {"en": "English", "zh": "中文"}  # each language in itself: the language switch's link text
DEFAULT = "en"
DOMAIN = "messages"
_BABEL_LOCALE = {"en": "en_US", "zh": "zh_Hans_CN"}

_current: ContextVar[str] = ContextVar("msreport_lang", default=DEFAULT)


def default_language(environ: Optional[Mapping[str, str]] = None) -> str:
    """`zh` when the locale (LC_ALL, then LC_MESSAGES, then LANG, as gettext reads them) starts with `zh`, else `en`."""
    env = os.environ if environ is None else environ
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = (env.get(var) or "").strip()
        if value:
            return "zh" if value.lower().startswith("zh") else DEFAULT
    return DEFAULT


def parse_languages(text: str) -> tuple[str, ...]:
    """`--lang` values: "zh", "en" or two of them, "zh,en" (the first is the primary language)."""
    langs = tuple(x.strip().lower() for x in str(text).split(",") if x.strip())
    bad = [x for x in langs if x not in LANGUAGES]
    if not langs or bad or len(set(langs)) != len(langs):
        raise ValueError(gettext("invalid language {value!r}: give {choices}, or two of them separated by a comma "
                                 "(zh,en)").format(value=text, choices=" / ".join(LANGUAGES)))
    return langs


def catalog_path(lang: str):
    return resources.files("reportgen") / "locale" / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


@lru_cache(maxsize=None)
def translations(lang: str) -> NullTranslations:
    """The gettext translations of `lang` (English and unknown languages: the identity)."""
    if lang == DEFAULT or lang not in LANGUAGES:
        return NullTranslations()
    with catalog_path(lang).open("rb") as f:
        catalog = pofile.read_po(f, locale=_BABEL_LOCALE[lang], domain=DOMAIN)
    buf = io.BytesIO()
    mofile.write_mo(buf, catalog, use_fuzzy=False)
    buf.seek(0)
    return Translations(fp=buf, domain=DOMAIN)


@lru_cache(maxsize=None)
def catalog_key(lang: str) -> str:
    """`lang` and a digest of its catalog: what text its translations give (compiled templates are keyed by it)."""
    if lang == DEFAULT or lang not in LANGUAGES:
        return DEFAULT
    return f"{lang}-{hashlib.sha256(catalog_path(lang).read_bytes()).hexdigest()[:16]}"


def current() -> str:
    return _current.get()


@contextlib.contextmanager
def use(lang: str) -> Iterator[str]:
    """Build in `lang` inside the block (the page planning and rules read it through `_()`)."""
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}; choose one of {', '.join(LANGUAGES)}")
    token = _current.set(lang)
    try:
        yield lang
    finally:
        _current.reset(token)


def gettext(message: str) -> str:
    return translations(current()).gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    return translations(current()).ngettext(singular, plural, n)


_ = gettext


def translate(value: Any) -> str:
    """The `|t` template filter: a data value (a label, a severity) in the current language, as plain text that
    autoescaping escapes. Values without a catalog entry are shown unchanged."""
    if isinstance(value, Msg):
        return value.render()
    if value in (None, ""):
        return ""
    s = str(value)
    t = gettext(s)
    if t == s:
        m = _UNIT.match(s)  # "Computing (ms)": the label translated, the unit kept
        if m and gettext(m[1]) != m[1]:
            return gettext("{label} ({unit})").format(label=gettext(m[1]), unit=m[2])
    return t


_UNIT = re.compile(r"^(.+) \((ms|MB|GB/s|GB|%|MFLOPs|GFLOPS)\)$")


def N_(message: str) -> str:
    """Mark a string for extraction only; it is translated where it is shown."""
    return message


class Msg:
    """A message rendered late: msgid with named placeholders plus its parameters, in any language.

    `str(msg)` renders in the current language; `msg.render("en")` in a given one. Parameters that are `Msg`
    themselves are rendered in the same language."""

    __slots__ = ("msgid", "params")

    def __init__(self, msgid: str, **params: Any) -> None:
        self.msgid = msgid
        self.params = params

    def render(self, lang: Optional[str] = None) -> str:
        lang = lang or current()
        text = translations(lang).gettext(self.msgid)
        if not self.params:
            return text
        params = {k: (v.render(lang) if isinstance(v, Msg) else v) for k, v in self.params.items()}
        try:
            return text.format(**params)
        except (KeyError, IndexError, ValueError):  # a broken translation must not cost the report: use English
            return self.msgid.format(**params)

    @property
    def en(self) -> str:
        return self.render(DEFAULT)

    def __str__(self) -> str:
        return self.render()

    def __repr__(self) -> str:
        return f"Msg({self.msgid!r}, {self.params!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Msg):
            return (self.msgid, self.params) == (other.msgid, other.params)
        return str(self) == other

    def __hash__(self) -> int:
        return hash(self.msgid)

    # A message stands in for the text it renders to (in the current language) where analysis results used to be
    # plain strings: `"x" in msg`, `msg.startswith(...)`, `len(msg)`, `msg + "..."`.
    def __contains__(self, item: object) -> bool:
        return item in self.render()

    def __len__(self) -> int:
        return len(self.render())

    def __add__(self, other: object) -> str:
        return self.render() + str(other)

    def __radd__(self, other: object) -> str:
        return str(other) + self.render()

    def __getattr__(self, name: str):
        if name.startswith("__") or name in ("msgid", "params"):
            raise AttributeError(name)
        return getattr(self.render(), name)


_problem_translator = None


def set_problem_translator(fn) -> None:
    """The site registers how a stored data-quality problem is shown in a language (`site.problems`)."""
    global _problem_translator
    _problem_translator = fn


class Problem(Msg):
    """A data-quality problem as the loaders wrote it (English, language-neutral in `summary.json`), rendered in a
    language through the translator the site registers; as written when none is registered."""

    def render(self, lang: Optional[str] = None) -> str:
        lang = lang or current()
        if lang == DEFAULT or _problem_translator is None:
            return self.msgid
        return _problem_translator(self.msgid, lang)


class Percent(Msg):
    """A percentage rendered late in the language's style (`format_percent`): "+12.3 %" in English, "+12.3%" in
    Chinese. `signed`: with its sign (a change)."""

    def __init__(self, value: float, digits: int = 1, signed: bool = False) -> None:
        super().__init__("{pct}", value=value, digits=digits, signed=signed)

    def render(self, lang: Optional[str] = None) -> str:
        v, digits = self.params["value"], self.params["digits"]
        text = format_percent(abs(v) if self.params["signed"] else v, digits, lang or current())
        return ("-" if v < 0 else "+") + text if self.params["signed"] else text


class Joined(Msg):
    """Messages joined by a separator, each rendered in the same language; the separator is a catalog message too
    ("; " is "；" in Chinese)."""

    def __init__(self, parts: list, sep: str = "; ") -> None:
        super().__init__(sep, parts=list(parts))

    def render(self, lang: Optional[str] = None) -> str:
        lang = lang or current()
        return translations(lang).gettext(self.msgid).join(text(p, lang) for p in self.params["parts"])


def lazy(msgid: str, **params: Any) -> Msg:
    return Msg(msgid, **params)


def text(value: Any, lang: Optional[str] = None) -> str:
    """`value` as text in `lang` (a `Msg` is translated; anything else is `str()`)."""
    return value.render(lang) if isinstance(value, Msg) else ("" if value is None else str(value))


def html_lang(lang: Optional[str] = None) -> str:
    return {"zh": "zh-CN"}.get(lang or current(), "en")


def format_number(value: float, digits: int = 0, lang: Optional[str] = None) -> str:
    """A number with the locale's grouping and decimal signs (Babel's text; `_as_python`)."""
    lang = lang or current()
    if _as_python(lang) and _plain(value):
        return f"{Decimal(str(value)):,.{digits}f}"
    fmt = "#,##0" + ("." + "0" * digits if digits > 0 else "")
    return _babel_pattern(fmt).apply(value, _babel_locale(_BABEL_LOCALE.get(lang, "en_US")))


def format_percent(value: float, digits: int = 1, lang: Optional[str] = None) -> str:
    """A percentage (already ×100) as the language writes it: "12.5 %" in English (the report's house style),
    Babel's locale pattern otherwise (zh: "12.5%")."""
    lang = lang or current()
    if lang == DEFAULT:
        return f"{value:.{digits}f} %"
    if _as_python(lang) and _plain(value):
        return f"{Decimal(str(value / 100.0)).scaleb(2):,.{digits}f}%"
    fmt = "#,##0" + ("." + "0" * digits if digits > 0 else "") + "%"
    return _babel_pattern(fmt).apply(value / 100.0, _babel_locale(_BABEL_LOCALE.get(lang, "en_US")))


# Babel's `NumberPattern.apply` of the two patterns above is, for a locale whose symbols are ".", "," and "-" and whose
# percent sign follows the number (zh), Python's own formatting of the same Decimal (`Decimal(str(value))`, the
# quantizing to `digits` decimals in the current decimal context, the sign kept on a value that rounds to zero, groups
# of three): ~3 instead of ~12 us a number (a Chinese rank page formats some hundred). Used for a language only when
# Babel writes every one of `_PROBES` the same (else Babel, always); for finite values below 1e15 (Babel's quantize
# fails past the context's precision); tests/test_i18n.py compares the two on many values.
_PROBES = (0.0, -0.0, 0.05, -0.05, 0.15, 0.25, 2.675, 1.005, 99.95, 100.0, 1e-9, -1e-9, -0.04, 12345.675, 1234567.5,
           -9876543.21, 5e-324, 0.5, 1.5, 2.5, 999.9999, 123456789012.125)


def _plain(value) -> bool:
    return type(value) in (float, int) and -1e15 < value < 1e15


@lru_cache(maxsize=None)
def _as_python(lang: str) -> bool:
    if lang not in _BABEL_LOCALE:
        return False
    locale = _babel_locale(_BABEL_LOCALE[lang])
    for digits in (0, 1, 2):
        pattern = "#,##0" + ("." + "0" * digits if digits > 0 else "")
        for v in _PROBES:
            if (_babel_pattern(pattern).apply(v, locale) != f"{Decimal(str(v)):,.{digits}f}" or
                    _babel_pattern(pattern + "%").apply(v / 100.0, locale)
                    != f"{Decimal(str(v / 100.0)).scaleb(2):,.{digits}f}%"):
                return False
    return True


# Babel's format_decimal / format_percent parse the locale and the pattern on every call (~15 µs; a Chinese
# 1,024-rank site formats some 100,000 numbers); the parsed ones are kept, and `NumberPattern.apply` is what those
# functions call with them (the same text: tests/test_i18n.py).
@lru_cache(maxsize=None)
def _babel_locale(name: str):
    from babel import Locale

    return Locale.parse(name)


@lru_cache(maxsize=None)
def _babel_pattern(fmt: str):
    from babel.numbers import parse_pattern

    return parse_pattern(fmt)


def install(env) -> None:
    """Add Jinja2's i18n extension to `env`, bound to the current language at call time."""
    if "jinja2.ext.InternationalizationExtension" not in env.extensions:
        env.add_extension("jinja2.ext.i18n")
    env.install_gettext_translations(translations(current()), newstyle=True)
    env.globals["code_tag"] = code_tag


def code_tag(value: Any):
    """`<code>value</code>` (escaped) for a file name or an option placed into a translated sentence."""
    from markupsafe import Markup

    return Markup("<code>{}</code>").format(value)


# Words the templates translate from data (`{{ _(f.severity) }}`, coverage status): listed here for extraction.
VOCABULARY = (N_("{label} ({unit})"), N_("critical"), N_("warning"), N_("info"), N_("read"), N_("partial"), N_("absent"),
              N_("unsupported"), N_("per step"), N_("profiled window"), N_("group"),
              # values of findings' evidence shown on the finding pages
              N_("tail"), N_("operator"), N_("queue_drop"), N_("consumer"), N_("slow rank"), N_("default"),
              N_("data_process"), N_("data_transmission"),
              # MindSpore context modes and version keys shown as rank facts
              N_("graph"), N_("pynative"), N_("context mode"),
              # separators of joined messages (`Joined`)
              N_("; "))
