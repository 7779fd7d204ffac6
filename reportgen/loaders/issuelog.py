"""The data-quality log of one loading job: every problem a loader meets becomes a `DataIssue` on it."""

from __future__ import annotations

from pathlib import Path, PosixPath
from typing import TYPE_CHECKING, Optional

from reportgen.model import DataIssue

if TYPE_CHECKING:
    from reportgen.dataquality import Coded


class IssueLog:
    """Collects the data-quality issues of one loading job, with paths relative to the run root. `root` is also
    the folder a symbolic link may not lead out of (`files.open_file(..., root=log.root)`)."""

    def __init__(self, root: Path, rank: Optional[int] = None) -> None:
        self.root = root
        self.rank = rank  # the rank being loaded (named in the door's entries: loaders.schema)
        self.shapes: dict[str, frozenset] = {}  # key paths of the small JSON files read (schema.json_shape)
        self.issues: list[DataIssue] = []
        self._rel: dict = {}  # (root, path) -> `rel`: a rank's loaders name each of its files ~3 times (~13 µs each)

    def rel(self, path: Path) -> str:
        key = (self.root, path)
        got = self._rel.get(key)
        if got is None:
            got = _below(path, self.root)
            if got is None:
                try:
                    got = Path(path).relative_to(self.root).as_posix()
                except ValueError:
                    got = Path(path).name
            self._rel[key] = got
        return got

    def add(self, path: Path, problem: "str | Coded", severity: str = "warning", kind: str = "",
            name_rank: bool = False) -> None:
        """One entry; with a problem class (`kind`, the door's entries: loaders.schema), or `name_rank` (a loader's
        entry about what the rank's numbers leave out, not damage), it names the rank loaded. `problem` is a coded
        problem (`dataquality.dq(code, **params)`) or, for call sites not given a code yet, English text."""
        ranks = (int(self.rank),) if (kind or name_rank) and self.rank is not None else ()
        self.issues.append(DataIssue(self.rel(path), problem, severity, ranks, kind=kind))


def _below(path: Path, root: Path) -> "str | None":
    """`path.relative_to(root).as_posix()` for a POSIX path object lying below the path object `root`, read off
    their texts (a path object's text is normalised: one separator between parts, none at the end, no "."), or
    None (then `relative_to` decides)."""
    if type(path) is not PosixPath or type(root) is not PosixPath:
        return None
    p, r = str(path), str(root)
    if len(p) > len(r) + 1 and p.startswith(r) and p[len(r)] == "/" and r != "/":
        return p[len(r) + 1:]
    return None
