"""The templates' compiled code, kept between builds (issue 33): Jinja compiles each template from source the first
time an environment loads it, ~0.7 s for the site's templates (parsing is most of it), on every build and in every
forked page writer. `TemplateCache` is Jinja's bytecode cache: in memory for the build (a second language's
environment, the single file) and, when the build has a rank cache folder (`rankcache.active()`), on disk under
it, so a rebuild loads the code instead of compiling it.

An entry is used only when it was written by this msreport, Python and Jinja (`_env_tag`: the rank cache's
environment key, which hashes msreport's own source, and Jinja's version) for this template's source (Jinja's own
checksum of the source); entries are read only from a folder and files owned by this user and not writable by
others (loading one runs its code). Anything wrong with an entry makes it a miss: the template is compiled again.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import tempfile
from pathlib import Path
from typing import Optional

import jinja2
from jinja2.bccache import Bucket, BytecodeCache

from reportgen import rankcache

log = logging.getLogger("msreport")

FOLDER = "templates"  # under the rank cache folder


@functools.lru_cache(maxsize=1)
def _env_tag() -> bytes:
    key = rankcache.environment_key() + "|jinja2 " + jinja2.__version__
    return hashlib.sha256(key.encode()).hexdigest().encode()


class TemplateCache(BytecodeCache):
    """Compiled templates by Jinja's bucket key: in memory, and in the active rank cache folder when there is one."""

    def __init__(self) -> None:
        self.mem: dict[str, bytes] = {}

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
        if path is None:
            return None
        try:
            if not (rankcache._trusted(path.parent) and rankcache._trusted(path)):
                return None
            raw = path.read_bytes()
        except OSError:
            return None
        tag = _env_tag()
        return raw[len(tag):] if raw.startswith(tag) else None

    def dump_bytecode(self, bucket: Bucket) -> None:
        data = bucket.bytecode_to_string()
        self.mem[bucket.key] = data
        path = self._path(bucket.key)
        if path is None:
            return
        tmp = None
        try:  # atomically (a temporary file renamed over the entry); the cache is optional: never raises
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
            with os.fdopen(fd, "wb") as f:
                f.write(_env_tag() + data)
            os.replace(tmp, path)
            tmp = None
        except Exception as e:  # noqa: BLE001
            log.debug("template cache entry %s not written: %s: %s", path, type(e).__name__, e)
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)

    def clear(self) -> None:
        self.mem.clear()


CACHE = TemplateCache()  # one per process: the environments of a build (each language, the single file) share it
