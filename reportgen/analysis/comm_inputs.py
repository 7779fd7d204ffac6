"""What the cluster communication analysis (`analysis.communication`) reads of each rank's operators and links.

A rank whose frames are still sealed (`model.Communication`, as a load worker or the rank cache hands it over) is
opened once, its frames not set on it (`Communication.sealed_frames`): its links are built with only the texts they
use (`framepack.table`'s `need`), and of its operators only what the analysis reads is taken, at its figures' rows
(`CommFigures.ops_at`): the numbers (`comm_rank.ops_numbers`, where the figures do not hold them) and the operators'
names as codes into their chunks of text, coded run-wide once a distinct chunk (`codes.codes_of_chunks`), not from
the text of every row. Opening every frame (texts, three frames built: ~1 ms a rank) was a third of the analysis at
1,024 ranks (issue 33). Any other rank (its frames opened already, its group inferred, its figures made here) is
read from its frames: the same numbers and codes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Optional

import numpy as np
import pandas as pd

from reportgen import framepack
from reportgen.analysis.comm_rank import CommFigures, comm_figures, numbers_of, ops_numbers
from reportgen.model import COMM_TIME_COLUMNS, Communication, Run


@dataclass
class RankOps:
    """One rank's operators as the cluster analysis reads them, at its figures' `ops_at` rows."""

    nums: np.ndarray  # `ops_numbers`
    op: tuple  # the operators' names: (starts, chunks, codes) for `codes.codes_of_chunks`
    source: Any  # where other columns' texts are read (`texts`): the operators' frame, or the sealed `Communication`
    at: np.ndarray

    def texts(self, name: str) -> np.ndarray:
        """Column `name` at the rows, as objects (a column missing: KeyError, as from the frame)."""
        if isinstance(self.source, pd.DataFrame):
            return self.source[name].to_numpy(dtype=object)[self.at]
        frames, payload = self.source.sealed_frames()
        c = framepack.columns_of(frames["ops"])[name][1][self.at]
        return framepack.table(payload, [c]).take(c)


@dataclass
class LinkPieces:
    """A rank's links as `framepack.pieces`, the frame not built: stacked with the other ranks' at once
    (`stack_links`: a frame a rank and pd.concat's planning per frame cost ~0.2 ms a rank)."""

    pieces: tuple

    def __len__(self) -> int:
        return self.pieces[0]


def stack_links(frames: list) -> pd.DataFrame:
    """`pd.concat(frames, ignore_index=True)` of the ranks' links (`rank_inputs`: frames or `LinkPieces`), built at
    once where they are all pieces of one layout (`framepack.stack`: the same frame)."""
    if all(isinstance(f, LinkPieces) for f in frames):
        got = framepack.stack([f.pieces for f in frames])
        if got is not None:
            return got
    return pd.concat([framepack.from_pieces(f.pieces) if isinstance(f, LinkPieces) else f for f in frames],
                     ignore_index=True)


def rank_inputs(run: Run, with_data: dict[int, Communication], inferred: dict[int, tuple[str, str]]
                ) -> tuple[dict[int, CommFigures], dict[int, RankOps], dict[int, Any]]:
    """Every rank's figures, in rank order, what `_rank_ops` reads of its operators (`RankOps`), and its links (in
    `with_data`'s order: a frame, or `LinkPieces` for `stack_links`). A rank whose group was inferred
    (`_infer_legacy_groups`): its operators with that group, the figures made again from them."""
    figs: dict[int, CommFigures] = {}
    ops: dict[int, RankOps] = {}
    links: dict[int, Any] = {}
    texts: dict = {}  # the chunks of text read (`framepack.chunks`: not interned; each decoded once here)
    for r in sorted(with_data):
        c = with_data[r]
        f = getattr(run.ranks[r].figures, "comm", None)
        frames, payload = c.sealed_frames() if f is not None and r not in inferred else ({}, [])
        lk = frames.get("links")
        cols = framepack.columns_of(lk) if lk is not None else None
        need = [v for kind, v in cols.values() if kind == "coded"] if cols is not None else []
        got = _packed_ops(frames.get("ops"), payload, f, c, need, texts)
        if got is None:
            if r in inferred:
                c = replace(c, ops=c.ops.assign(group=np.full(len(c.ops), inferred[r][0], dtype=object)))
                f = None
            f = f if f is not None else comm_figures(c)
            names = c.ops["op"].to_numpy(dtype=object)[f.ops_at] if len(f.ops_at) else np.zeros(0, dtype=object)
            got = RankOps(ops_numbers(f, c.ops), (np.array([2, 2 + len(names)]), [names],
                                                   np.arange(2, 2 + len(names), dtype=np.int64)), c.ops, f.ops_at)
        figs[r], ops[r] = f, got
        if lk is None:
            links[r] = c.links
        elif not framepack.is_packed(lk):
            links[r] = lk
        else:  # (the chunks its texts are in read with the operators' names where they were: `_packed_ops`)
            tab = framepack.table_of(*got.op[:2]) if need and isinstance(got.source, Communication) else \
                framepack.table(payload, need) if need else None
            links[r] = LinkPieces(framepack.pieces(lk, tab))
    return figs, ops, {r: links[r] for r in with_data}


def _packed_ops(p: Any, payload: list, f: Optional[CommFigures], c: Communication, need: list, texts: dict
                ) -> Optional[RankOps]:
    """`RankOps` read off the rank's packed operators `p` (`framepack.columns_of`), or None where they are not
    packed so (their key columns coded texts, the numbers float64 where the figures do not hold them); the
    chunks of the operators' names read with those of codes `need` (its links': one pass)."""
    cols = framepack.columns_of(p) if p is not None and f is not None else None
    if cols is None or any(cols.get(n, ("",))[0] != "coded" for n in ("op", "group", "kind")):
        return None
    if f.ops_nums is None:
        nums = {x: cols[x] for x in COMM_TIME_COLUMNS if x in cols}
        if any(kind != "plain" or v.dtype != np.float64 for kind, v in nums.values()):
            return None
        got = numbers_of(f, {x: v for x, (_, v) in nums.items()})
    else:
        got = f.ops_nums
    op = cols["op"][1][f.ops_at]
    starts, chunks = framepack.chunks(payload, [op, *need], texts)
    return RankOps(got, (starts, chunks, op), c, f.ops_at)
