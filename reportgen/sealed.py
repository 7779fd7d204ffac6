"""Objects kept pickled until they are read (issue 33): what a rank holds that a rebuild's main process may never
read stays bytes there (`Sealed`), opened where it is read (a forked page writer) or never.

`Sealed.of(obj)` pickles `obj` with its frames packed (`framepack.dumps`), compressed (LZ4, pyarrow's) when large;
`open()` gives the object back. A `Sealed` pickles as its bytes: a rank cache entry holds it as it is, checked by
the entry's CRC with the rest of the entry. `SealedField` opens a field an object holds sealed when it is read.
"""

from __future__ import annotations

import functools
import hashlib
import pickle
from typing import Any, Optional

from reportgen.framepack import dumps

SEAL_COMPRESS_BYTES = 32 * 1024  # a sealed object's pickle is compressed from this size (a smaller one: the rank
# cache entry holding it is compressed whole)


class Sealed:
    """An object kept pickled until it is opened (`open`): `model.Communication`'s operators, links and instances
    (~390 KB a rank pickled, ~70 % of a rank cache entry: read back from the cache, a 1,024-rank rebuild revived
    ~400 MB of them only to release them), `model.RankData`'s operators and memory (read by the rank pages' writers
    only)."""

    __slots__ = ("codec", "size", "blob")

    def __init__(self, codec: str, size: int, blob: bytes) -> None:
        self.codec, self.size, self.blob = codec, size, blob

    @classmethod
    def of(cls, obj: Any) -> "Sealed":
        body = dumps(obj)
        if len(body) >= SEAL_COMPRESS_BYTES:
            try:
                return cls("lz4", len(body), codec("lz4").compress(body, asbytes=True))
            except Exception:  # noqa: BLE001  # a pyarrow without the codec: the pickle as it is
                pass
        return cls("raw", len(body), body)

    def open(self) -> Any:
        body = self.blob if self.codec == "raw" else codec(self.codec).decompress(self.blob, decompressed_size=self.size,
                                                                                  asbytes=True)
        if len(body) != self.size:
            raise ValueError("a sealed object of another size")
        return pickle.loads(body)

    def digest(self) -> bytes:
        """SHA-256 of what this holds, exactly (its codec, size and bytes): two `Sealed` of one digest open to
        equal objects (unpickling is a function of the bytes). A key for what is made from the object alone
        (`csv_store`: a rank's operator CSV), read without opening it."""
        return hashlib.sha256(b"%s\0%d\0" % (self.codec.encode(), self.size) + self.blob).digest()

    def __reduce__(self):
        return (Sealed, (self.codec, self.size, self.blob))


@functools.lru_cache(maxsize=4)
def codec(name: str):
    """pyarrow's compression codec `name` (one per process): a sealed object's, a rank cache entry's (`rankcache`)."""
    import pyarrow

    return pyarrow.Codec(name)


class SealedField:
    """A field an object may hold sealed (`model.Communication`'s frames, `model.RankData`'s operators and memory),
    set on the class after the dataclass is made: read while the object still holds it sealed, it is opened (the
    object's `_opened(name)`) and set on the object, which shadows this from then on (a field set as usual, by
    `__init__` or later, is the object's own and never comes here)."""

    NONE = object()  # (no default: reading the field of an object without it raises AttributeError)

    def __init__(self, name: str, default: Any = NONE) -> None:
        self.name, self.default = name, default

    def __get__(self, obj, owner=None):
        if obj is None:
            return self.default if self.default is not SealedField.NONE else self
        own = obj._opened(self.name)
        if self.name in own:
            return own[self.name]
        if self.default is SealedField.NONE:
            raise AttributeError(self.name)
        return self.default


def held(obj: Any, name: str) -> Optional[Sealed]:
    """The `Sealed` that `obj` still holds for its field `name` (a `SealedField` not read yet: the object keeps its
    sealed fields in `_sealed`, `model.RankData`), else None (never sealed, opened, or set since). Read before the
    field: reading it opens it."""
    own = getattr(obj, "__dict__", None)
    if own is None or name in own:
        return None
    got = (own.get("_sealed") or {}).get(name)
    return got if isinstance(got, Sealed) else None


__all__ = ["Sealed", "SealedField", "SEAL_COMPRESS_BYTES", "codec", "held"]
