"""The cluster communication analysis reads the ranks' sealed operators and links without opening them
(`analysis.comm_inputs`, issue 33): the same analysis, to the last digit, as from the opened frames; the packed-frame
readers it uses (`framepack.chunks`, `table`'s `need`, `columns_of`, `stack`, `codes.codes_of_chunks`) give what the
built frames give."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

from reportgen import framepack
from reportgen.analysis.codes import codes_of_chunks, codes_of_parts
from reportgen.analysis.communication import analyze_communication, release_comm_inputs
from reportgen.analysis.per_rank import rank_figures
from reportgen.layouts import discover, load_run
from reportgen.synth import generate_run

FRAMES = ("per_rank", "per_rank_step", "per_group_rank", "ops", "rank_ops", "links", "pairs", "link_ops")


def _sealed(run):
    """The run as a worker or the rank cache hands it over: every rank's communication frames sealed."""
    out = pickle.loads(pickle.dumps(run, protocol=pickle.HIGHEST_PROTOCOL))
    assert all("_sealed" in vars(d.communication) and "ops" not in vars(d.communication) for d in out.ranks.values())
    return out


@pytest.mark.parametrize("kw", [dict(ranks=4, steps=2), dict(ranks=8, steps=2, tp=4, comm_ops_per_step=12)])
def test_sealed_ranks_give_the_analysis_of_opened_ones_without_opening_them(tmp_path, kw):
    lay = discover(generate_run(tmp_path / "run", **kw))[0]
    run = load_run(lay, derive=rank_figures)
    want = analyze_communication(run)
    sealed = _sealed(run)
    got = analyze_communication(sealed)
    for name in FRAMES:
        assert_frame_equal(getattr(got, name), getattr(want, name), check_exact=True)
    assert repr(got.groups) == repr(want.groups) and got.transport_medians == want.transport_medians
    # read, not opened: the frames are still sealed (a later reader opens them as before)
    for r, d in sealed.ranks.items():
        c = d.communication
        assert "_sealed" in vars(c) and "ops" not in vars(c) and "links" not in vars(c)
        assert_frame_equal(c.ops, run.ranks[r].communication.ops, check_exact=True)
    # released (the build): emptied without opening, the columns and dtypes kept
    sealed = _sealed(run)
    got = analyze_communication(sealed, release_inputs=True)
    for name in FRAMES:
        assert_frame_equal(getattr(got, name), getattr(want, name), check_exact=True)
    for r, d in sealed.ranks.items():
        c, o = d.communication, run.ranks[r].communication
        assert "ops" in vars(c) and "links" in vars(c) and not len(c.ops) and not len(c.links)
        assert c.ops.dtypes.equals(o.ops.dtypes) and c.links.dtypes.equals(o.links.dtypes)
        assert d.figures.comm is None and "instances" not in vars(c)  # (the instances left sealed)
    release_comm_inputs(sealed)  # (again: nothing left to do)


def _frames(rng, n_frames, layout_of=lambda k: 0):
    words = [f"w{i}" for i in range(12)] + ["é", ""]
    out = []
    for k in range(n_frames):
        n = int(rng.integers(0, 9))
        f = pd.DataFrame({
            "step": pd.array(rng.integers(0, 4, n), dtype="Int64"),
            "group": pd.Series([words[i] for i in rng.integers(0, len(words), n)], dtype=object),
            "src": rng.integers(0, 8, n), "x": rng.random(n), "op": pd.Series(
                [None if i == 0 else float("nan") if i == 1 else words[i] for i in rng.integers(0, 6, n)], dtype=object),
            "y": rng.random(n), "z": rng.random(n)})  # (y and z: adjacent columns of one block)
        if n:
            f.loc[0, "step"] = pd.NA
        if layout_of(k):
            f["src"] = f["src"].astype(float)
        out.append(f)
    return out


def test_stack_is_pd_concat_of_the_frames_blocks_and_all():
    rng = np.random.default_rng(3)

    def blocks(f):
        return sorted((tuple(b.mgr_locs.as_array.tolist()), str(b.dtype)) for b in f._mgr.blocks)
    for trial in range(30):
        frames = _frames(rng, int(rng.integers(1, 6)))
        texts = framepack.Texts()
        packed = [framepack.pack(f, texts) for f in frames]
        tab = framepack.table(texts.payload())
        got = framepack.stack([framepack.pieces(p, tab) for p in packed])
        want = pd.concat([framepack.unpack(p, tab) for p in packed], ignore_index=True)
        assert_frame_equal(got, want, check_exact=True)
        assert blocks(got) == blocks(want) == blocks(pd.concat(frames, ignore_index=True))
    frames = _frames(rng, 3, layout_of=lambda k: k == 1)  # (another layout: left to pd.concat)
    texts = framepack.Texts()
    packed = [framepack.pack(f, texts) for f in frames]
    tab = framepack.table(texts.payload())
    assert framepack.stack([framepack.pieces(p, tab) for p in packed]) is None


def test_columns_of_and_a_table_of_the_chunks_needed():
    rng = np.random.default_rng(5)
    frames = _frames(rng, 4)
    texts = framepack.Texts()
    texts.add_chunks([["a", "b", "w1"], ["c\x00d", "e"], ["f"]])  # (the second: a tuple in the payload)
    packed = [framepack.pack(f, texts) for f in frames]
    payload = texts.payload()
    full = framepack.table(payload)
    for p, f in zip(packed, frames):
        cols = framepack.columns_of(p)
        assert list(cols) != [] and set(cols) == set(f.columns)
        assert cols["x"][0] == "plain" and np.array_equal(cols["x"][1], f["x"].to_numpy())
        assert cols["step"][0] == "array" and cols["group"][0] == "coded"
        need = [cols["group"][1], cols["op"][1]]
        part = framepack.table(payload, need)
        assert len(part) == len(full)
        for c in need:
            assert part.take(c).tolist().__repr__() == full.take(c).tolist().__repr__()
        assert_frame_equal(framepack.unpack(p, part), f, check_exact=True)
    starts, got = framepack.chunks(payload, [np.array([2, 3], dtype=np.int32)])
    assert starts.tolist()[:4] == [2, 5, 7, 8] and got[0].tolist() == ["a", "b", "w1"] and got[1] is None
    with pytest.raises(ValueError):
        framepack.chunks(payload, [np.array([int(starts[-1])], dtype=np.int32)])
    assert framepack.columns_of(frames[0]) is None


def test_codes_of_chunks_is_codes_of_parts_of_the_texts():
    rng = np.random.default_rng(11)
    words = [f"op{i:03d}" for i in range(60)] + ["Ä", "a", "b\x00"]
    for trial in range(40):
        shared = [np.array([words[i] for i in rng.choice(len(words), int(rng.integers(1, 12)), replace=False)],
                           dtype=object) for _ in range(4)]
        parts, texts = [], []
        for _ in range(int(rng.integers(1, 6))):
            chunks = [shared[i] for i in rng.choice(4, int(rng.integers(1, 4)), replace=False)]
            starts = np.cumsum([2, *(len(c) for c in chunks)])
            table = np.concatenate([np.array([float("nan"), None], dtype=object), *chunks])
            c = rng.integers(0, int(starts[-1]), int(rng.integers(0, 30))).astype(np.int32)
            parts.append((starts, list(chunks), c))
            texts.append(table[c])
        got = codes_of_chunks(parts, dtype=np.int32)
        want = codes_of_parts(texts, dtype=np.int32)
        assert got is not None and got[0].dtype == np.int32
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
    odd = (np.array([2, 4]), [np.array(["a", 3], dtype=object)], np.array([2, 3], dtype=np.int32))
    assert codes_of_chunks([odd]) is None  # (a value that is not a `str`: the caller codes the texts)
    with pytest.raises(ValueError):
        codes_of_chunks([(np.array([2, 4, 5]), [np.array(["a", "b"], dtype=object), None],
                          np.array([4], dtype=np.int32))])


def test_names_coded_from_their_texts_where_the_chunks_cannot_be(tmp_path, monkeypatch):
    """Where the chunks cannot code the operators' names (`codes_of_chunks` None: a name that is not a `str`) nor the
    ranks' labels their groups and kinds, those columns are read from the seal again and coded as texts: the same
    analysis."""
    import reportgen.analysis.communication as comm

    lay = discover(generate_run(tmp_path / "run", ranks=4, steps=2))[0]
    run = load_run(lay, derive=rank_figures)
    want = analyze_communication(run)
    monkeypatch.setattr(comm, "codes_of_chunks", lambda parts, dtype=None: None)
    monkeypatch.setattr(comm, "_label_codes", lambda figs, order, name: None)
    got = analyze_communication(_sealed(run))
    for name in FRAMES:
        assert_frame_equal(getattr(got, name), getattr(want, name), check_exact=True)


def test_ranks_sealed_and_opened_together(tmp_path):
    """Some ranks opened (read before), some sealed, one without its figures: the same analysis."""
    lay = discover(generate_run(tmp_path / "run", ranks=4, steps=2, tp=2, comm_ops_per_step=6))[0]
    run = load_run(lay, derive=rank_figures)
    want = analyze_communication(run)
    mixed = _sealed(run)
    ranks = sorted(mixed.ranks)
    mixed.ranks[ranks[0]].communication.ops  # noqa: B018  # (opened)
    mixed.ranks[ranks[1]].communication.open_alone("instances")  # (the operators and links still sealed)
    mixed.ranks[ranks[2]].figures.comm = None  # (its figures made here: its frames opened)
    got = analyze_communication(mixed)
    for name in FRAMES:
        assert_frame_equal(getattr(got, name), getattr(want, name), check_exact=True)
