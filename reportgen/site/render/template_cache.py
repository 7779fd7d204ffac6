"""The templates' compiled code, kept between builds (issue 33): Jinja compiles each template from source the first
time an environment loads it, ~0.7 s for the site's templates (parsing is most of it), on every build and in every
forked page writer. `TemplateCache` is Jinja's bytecode cache: in memory for the build (a second language's
environment, the single file) and, when the build has a rank cache folder (`rankcache.active()`), on disk under
it, so a rebuild loads the code instead of compiling it.

An entry is a rank cache entry (`rankcache.write_entry` / `read_entry`: atomic writes, a CRC, read only from a
folder and files owned by this user and not writable by others, since loading one runs its code) keyed by this
msreport, Python and Jinja (`_key`: the rank cache's environment key, which hashes msreport's own source, and
Jinja's version); Jinja's own checksum of the template's source is in the bytecode, and the bucket's key names the
language and catalog the template was compiled in (`get_bucket`: its `_("literal")` calls are translated then,
`jinja_env.FoldedGettext`). Anything wrong with an entry makes it a miss: the template is compiled again.

A first build has no such folder yet: msreport ships its templates compiled (`SHIPPED`, made by
`scripts/compile_templates.py` with `template_ship`: the Python source Jinja generates for each template in each
language), so a template whose source, language catalog and Jinja version are those it was compiled from is only
given to Python's `compile` (~1.5 ms, not Jinja's ~12 ms: ~0.5 s of a first build's CPU); any other is compiled by
Jinja as before. tests/test_write_cache.py fails when a template changes without the file being made again.
"""

from __future__ import annotations

import functools
import gzip
import logging
from pathlib import Path
from typing import Optional

import jinja2
import orjson
from jinja2.bccache import Bucket, BytecodeCache

from reportgen import rankcache

log = logging.getLogger("msreport")

FOLDER = "templates"  # under the rank cache folder
SHIPPED = Path(__file__).resolve().parents[2] / "templates" / "compiled.json.gz"  # (`template_ship`)


@functools.lru_cache(maxsize=1)
def _key() -> tuple:
    return ("jinja template", rankcache.environment_key(), jinja2.__version__)


class TemplateCache(BytecodeCache):
    """Compiled templates by Jinja's bucket key: in memory, and in the active rank cache folder when there is one."""

    def __init__(self) -> None:
        self.mem: dict[str, bytes] = {}

    def get_bucket(self, environment: jinja2.Environment, name: str, filename: Optional[str], source: str) -> Bucket:
        """Jinja's bucket, its key also naming the language and catalog the template was compiled with
        (`jinja_env.FoldedGettext`: its messages are translated then)."""
        key = f"{self.get_cache_key(name, filename)}-{getattr(environment, 'folded_key', '')}"
        bucket = Bucket(environment, key, self.get_source_checksum(source))
        self.load_bytecode(bucket)
        if bucket.code is None:
            raw = shipped_source(name, getattr(environment, "folded_key", ""), bucket.checksum)
            if raw is not None:  # (as Jinja's own `compile` ends: the same code object)
                bucket.code = environment._compile(raw, filename or "<template>")
                self.dump_bytecode(bucket)
        return bucket

    @staticmethod
    def _path(key: str) -> Optional[Path]:
        folder = rankcache.active()
        return folder / FOLDER / f"{key}.jinja" if folder is not None else None

    def load_bytecode(self, bucket: Bucket) -> None:
        data = self.mem.get(bucket.key)
        if data is None:
            data = self._read(bucket.key)
            if data is None:
                return
        try:
            bucket.bytecode_from_string(data)  # (a changed source, another Jinja or Python: a reset bucket)
        except Exception as e:  # noqa: BLE001  # a damaged entry is a miss, whatever it raises
            log.debug("template cache entry %s ignored: %s: %s", bucket.key, type(e).__name__, e)
            bucket.reset()

    def _read(self, key: str) -> Optional[bytes]:
        path = self._path(key)
        data = rankcache.read_entry(path, _key()) if path is not None else None
        return data if isinstance(data, bytes) else None

    def dump_bytecode(self, bucket: Bucket) -> None:
        data = bucket.bytecode_to_string()
        self.mem[bucket.key] = data
        path = self._path(bucket.key)
        if path is not None:  # the cache is optional: write_entry never raises
            rankcache.write_entry(path, _key(), data)

    def clear(self) -> None:
        self.mem.clear()


CACHE = TemplateCache()  # one per process: the environments of a build (each language, the single file) share it


def shipped_key(name: str, folded_key: str) -> str:
    return f"{folded_key}|{name}"


@functools.lru_cache(maxsize=1)
def _shipped() -> dict:
    """The shipped compiled templates of this Jinja ({} when they were made with another, or cannot be read)."""
    try:
        data = orjson.loads(gzip.decompress(SHIPPED.read_bytes()))
    except (OSError, ValueError, EOFError) as e:
        log.debug("shipped templates not read: %s: %s", type(e).__name__, e)
        return {}
    if not isinstance(data, dict) or data.get("jinja") != jinja2.__version__:
        return {}
    found = data.get("templates")
    return found if isinstance(found, dict) else {}


def shipped_source(name: str, folded_key: str, checksum: str) -> Optional[str]:
    """The Python source Jinja generated for template `name` compiled in the language `folded_key`, when msreport
    ships it for this Jinja and for a template source of this `checksum` (Jinja's, `get_source_checksum`)."""
    entry = _shipped().get(shipped_key(name, folded_key))
    if isinstance(entry, dict) and entry.get("checksum") == checksum and isinstance(entry.get("code"), str):
        return entry["code"]
    return None
