"""What msreport ships as its compiled templates (`template_cache.SHIPPED`, read there): every template the site's
environment compiles, in every language, as the Python source Jinja generates (`compile_all`), stored by
`shipped_bytes`. Written by `scripts/compile_templates.py`; tests/test_write_cache.py checks it is up to date."""

from __future__ import annotations

import gzip

import jinja2
import orjson

from reportgen import i18n
from reportgen.site.render.jinja_env import make_env
from reportgen.site.render.template_cache import CACHE, shipped_key


def compile_all() -> dict:
    """What `template_cache.SHIPPED` holds: every template the site's environment compiles, in every language, as
    the Python source Jinja generates, with its source's checksum (`scripts/compile_templates.py` writes it)."""
    out: dict = {}
    for lang in i18n.LANGUAGES:
        with i18n.use(lang):
            env = make_env()
            for name in env.list_templates(extensions=["html"]):
                source, filename, _ = env.loader.get_source(env, name)
                try:
                    code = env.compile(source, name, filename, raw=True)
                except jinja2.TemplateError:  # (another environment's template: `compare`'s, with filters of its own)
                    continue
                out[shipped_key(name, env.folded_key)] = {"checksum": CACHE.get_source_checksum(source),
                                                           "code": code}
    return {"jinja": jinja2.__version__, "templates": dict(sorted(out.items()))}


def shipped_bytes(data: dict) -> bytes:
    """`compile_all`'s answer as `SHIPPED` stores it (gzip without a timestamp: the same templates, the same
    bytes)."""
    return gzip.compress(orjson.dumps(data, option=orjson.OPT_SORT_KEYS), 9, mtime=0)
