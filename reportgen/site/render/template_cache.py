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
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import Optional

import jinja2
from jinja2.bccache import Bucket, BytecodeCache

from reportgen import rankcache

log = logging.getLogger("msreport")

FOLDER = "templates"  # under the rank cache folder


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
