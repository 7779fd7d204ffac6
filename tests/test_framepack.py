"""Frames in their packed pickled form (reportgen.framepack, issue 33): every value, dtype and missing marker comes
back exactly; a frame it cannot represent is kept as it is; texts are shared between ranks after unpickling."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

from reportgen import framepack
from reportgen.sealed import Sealed
from reportgen.model import Communication


def _round(frame: pd.DataFrame):
    texts = framepack.Texts()
    packed = framepack.pack(frame, texts)
    packed, payload = pickle.loads(pickle.dumps((packed, texts.payload()), protocol=pickle.HIGHEST_PROTOCOL))
    return packed, framepack.unpack(packed, framepack.table(payload))


def _mixed() -> pd.DataFrame:
    return pd.DataFrame({
        "step": pd.array([1, None, 3, 4], dtype="Int64"),
        "op": pd.Series(["a", math.nan, "b", None], dtype=object),
        "x": np.array([0.1, math.nan, -0.0, 1e300]),
        "n": np.array([1, -2, 2 ** 62, 0], dtype=np.int64),
        "ok": np.array([True, False, True, False]),
        "group": pd.Series(["g", "g", "", "g"], dtype=object),
        "label": pd.array(["p", None, "q", "p"], dtype="str"),
        "y": np.array([1.5, 2.5, math.inf, -1.0]),
    })


def test_every_kind_of_column_comes_back_exactly():
    f = _mixed()
    packed, g = _round(f)
    assert isinstance(packed, tuple) and packed[0] == "framepack"  # packed, not kept as it is
    assert_frame_equal(f, g, check_exact=True)
    assert list(f.dtypes) == list(g.dtypes) and f.columns.equals(g.columns) and f.columns.dtype == g.columns.dtype
    assert isinstance(g.index, pd.RangeIndex) and len(g) == 4
    # the missing markers keep their kind: NaN stays a float NaN, None stays None
    assert isinstance(g["op"][1], float) and math.isnan(g["op"][1]) and g["op"][3] is None
    assert math.copysign(1.0, g["x"][2]) == -1.0  # -0.0 stays -0.0
    assert g["n"][2] == 2 ** 62 and g["step"].isna().tolist() == [False, True, False, False]
    # the frame is writable (its own arrays), column by column
    g.loc[0, "x"] = 7.0
    g.loc[1, "n"] = 9
    g.loc[2, "op"] = "c"
    g.loc[1, "step"] = 5
    g.loc[0, "ok"] = False
    assert (g["x"][0], g["n"][1], g["op"][2], g["step"][1], g["ok"][0]) == (7.0, 9, "c", 5, False)
    g["x"] += 1.0
    assert g["x"][0] == 8.0


def test_empty_frames():
    for f in (pd.DataFrame({"a": pd.Series([], dtype=float), "t": pd.Series([], dtype=object)}),
              pd.DataFrame(columns=["step", "op"]), pd.DataFrame()):
        _, g = _round(f)
        assert_frame_equal(f, g, check_exact=True)
        assert list(f.dtypes) == list(g.dtypes)


@pytest.mark.parametrize("case", ["index", "int in texts", "pd.NA in texts", "numpy NaN in texts", "datetime",
                                  "duplicate names", "number as name", "category", "lists in texts"])
def test_what_cannot_be_packed_is_kept_as_it_is(case):
    f = pd.DataFrame({"a": [1.0, 2.0], "t": pd.Series(["x", "y"], dtype=object)})
    if case == "index":
        f.index = [5, 6]
    elif case == "int in texts":
        f["t"] = pd.Series(["x", 3], dtype=object)
    elif case == "pd.NA in texts":
        f["t"] = pd.Series(["x", pd.NA], dtype=object)
    elif case == "numpy NaN in texts":
        f["t"] = pd.Series(["x", np.float64("nan")], dtype=object)
    elif case == "datetime":
        f["d"] = pd.to_datetime(["2024-01-01", "2024-01-02"])
    elif case == "duplicate names":
        f.columns = ["a", "a"]
    elif case == "number as name":
        f.columns = ["a", 1]
    elif case == "category":
        f["t"] = f["t"].astype("category")
    elif case == "lists in texts":  # (cannot be hashed: the MindInsight data pipeline's children ids)
        f["t"] = pd.Series([[1], [2, 3]], dtype=object)
    packed, g = _round(f)
    assert isinstance(packed, pd.DataFrame)
    assert_frame_equal(f, g, check_exact=True)


def test_not_a_frame_passes_through():
    assert framepack.pack(None, framepack.Texts()) is None
    assert framepack.unpack(None, None) is None
    assert framepack.unpack(("framepack", 99), None) == ("framepack", 99)  # another version: not read as a frame


def _comm(tag: str) -> Communication:
    ops = pd.DataFrame({"step": pd.array([1, 1], dtype="Int64"),
                        "op": pd.Series([f"hcom_allReduce__{tag}_0", "hcom_send__1"], dtype=object),
                        "group": pd.Series(["123", "123"], dtype=object),
                        "communication_ms": [1.0, 2.0]})
    inst = pd.DataFrame({"step": pd.array([1], dtype="Int64"), "key": pd.Series(["1:hcom_send__1"], dtype=object),
                         "name": pd.Series(["hcom_send__1"], dtype=object), "start_ms": [5.0]})
    return Communication(source="x", producer="communication.json", steps=pd.DataFrame({"step": [1]}), ops=ops,
                         links=pd.DataFrame(), instances=inst, self_local={"123": 0}, unit_note="u")


def test_communication_pickles_packed_and_shares_texts_between_ranks():
    a, b = _comm("1"), _comm("2")
    a2, b2 = pickle.loads(pickle.dumps(a)), pickle.loads(pickle.dumps(b))
    for x, y in ((a, a2), (b, b2)):
        for k in ("steps", "ops", "links", "instances"):
            assert_frame_equal(getattr(x, k), getattr(y, k), check_exact=True)
        assert (y.source, y.producer, y.self_local, y.unit_note) == (x.source, x.producer, x.self_local, x.unit_note)
    # one object per text: within a rank (its operators and its instances) and across ranks
    assert a2.ops["op"][1] is a2.instances["name"][0] is b2.ops["op"][1]
    assert a2.ops["group"][0] is b2.ops["group"][1]
    assert a2.ops["op"][0] != b2.ops["op"][0]
    state = a.__getstate__()
    frames, payload = state["_sealed"][0].open()
    assert frames["ops"][0] == "framepack" and any("hcom_send__1" in p for p in payload)
    assert not {"ops", "links", "instances"} & set(state)  # (sealed, not beside the rest)
    c = Communication(source="x", producer="p", steps=pd.DataFrame(), ops=pd.DataFrame(), links=pd.DataFrame())
    assert pickle.loads(pickle.dumps(c)).instances is None


def test_text_chunks_read_back_and_decoded_once():
    t = framepack.Texts()
    t.add_chunk(["a", "b"])
    t.add_chunk(["b", "c"])  # a chunk keeps every text of its group, even one an earlier chunk has
    t.add_chunk([])
    t.add_chunk(["x\x00y", ""])  # a NUL inside a text: the chunk is kept as a tuple
    assert [t.code(x) for x in ("d", "b", "c", "")] == [6, 1, 3, 5]
    payload = t.payload()
    assert payload == ["a\x00b", "b\x00c", (), ("x\x00y", ""), "d"]
    got = framepack.table(pickle.loads(pickle.dumps(payload)))
    assert math.isnan(got[0]) and got[1] is None
    assert got[2:].tolist() == ["a", "b", "b", "c", "x\x00y", "", "d"]
    again = framepack.table(pickle.loads(pickle.dumps(payload)))
    assert again[3] is got[3] is got[4] and again[7] is got[7]  # one object per text, whichever copy
    assert framepack.table([""]).tolist()[2:] == [""]  # a chunk of one empty text
    f = pd.DataFrame({"t": pd.Series(["c", None, "x\x00y", "zz"], dtype=object)})
    packed = framepack.pack(f, t)
    assert_frame_equal(framepack.unpack(packed, framepack.table(t.payload())), f, check_exact=True)


def test_texts_add_chunks_equals_add_chunk():
    """`Texts.add_chunks` (the index built in one pass) gives the table `add_chunk` one by one gives: every text of
    every chunk in order, a text's code its first place, the same payload."""
    chunks = [["a", "b"], ["b", "c"], [], ["x\x00y", ""], ["c", "a", "d"]]
    one, many = framepack.Texts(), framepack.Texts()
    for c in chunks:
        one.add_chunk(c)
    many.add_chunks(chunks)
    assert many.texts == one.texts and many.cuts == one.cuts and many.index == one.index
    assert many.index == {"a": 0, "b": 1, "c": 3, "x\x00y": 4, "": 5, "d": 8}
    assert many.payload() == one.payload()
    many.add_chunks([["e", "a"]])  # on a table that holds texts already: one by one
    one.add_chunk(["e", "a"])
    assert many.index == one.index and many.payload() == one.payload()


def test_packed_columns_keep_their_dtype_and_are_shared():
    """A packed frame's column names come back with their own dtype (the default text dtype, object), and frames
    with the same names share one Index object (read once per process, not per frame)."""
    a = pd.DataFrame({"x": [1.0, 2.0], "y": ["p", "q"]})
    b = a.copy()
    b.columns = pd.Index(["x", "y"], dtype=object)
    back = []
    for f in (a, b, a.copy()):
        t = framepack.Texts()
        packed = pickle.loads(pickle.dumps(framepack.pack(f, t), protocol=pickle.HIGHEST_PROTOCOL))
        got = framepack.unpack(packed, framepack.table(t.payload()))
        assert got.columns.dtype == f.columns.dtype and list(got.columns) == ["x", "y"]
        assert_frame_equal(got, f, check_exact=True)
        back.append(got)
    assert back[0].columns is back[2].columns and back[0].columns is not back[1].columns
    assert back[0].index is back[2].index  # the same RangeIndex(2)


def test_rank_infos_read_back_share_their_group_rank_lists():
    """Ranks read back from a worker or the rank cache hold one list object for an equal group (the world group,
    named by every rank's metadata), the values unchanged; short lists and other fields as they were."""
    from reportgen.model import RankInfo

    world = list(range(300, 1324))
    a = RankInfo(rank=0, source_dir="a", parallel_groups={"g0": {"group_name": "default_group",
                                                                 "global_ranks": list(world), "group_rank": 0},
                                                          "g1": {"group_name": "tp", "global_ranks": [0, 1]}})
    b = RankInfo(rank=1, source_dir="b", parallel_groups={"g0": {"group_name": "default_group",
                                                                 "global_ranks": list(world), "group_rank": 1},
                                                          "g1": {"group_name": "tp", "global_ranks": [0, 1]}})
    ra, rb = (pickle.loads(pickle.dumps(x, protocol=pickle.HIGHEST_PROTOCOL)) for x in (a, b))
    assert vars(ra) == vars(a) and vars(rb) == vars(b)
    assert ra.parallel_groups["g0"]["global_ranks"] is rb.parallel_groups["g0"]["global_ranks"]
    assert ra.parallel_groups["g0"]["global_ranks"] == world and type(ra.parallel_groups["g0"]["global_ranks"]) is list
    assert ra.parallel_groups["g0"]["group_rank"] == 0 and rb.parallel_groups["g0"]["group_rank"] == 1


_FRAME_CASES = {
    "numbers, booleans, nullable integers": lambda: {
        "a": np.array([0.5, math.nan, -0.0]), "b": np.arange(3), "c": np.array([True, False, True]),
        "d": pd.array([1, None, 3], dtype="Int64"), "e": np.arange(3, dtype=np.int32)},
    "object Series (texts, NaN, None)": lambda: {
        "s": pd.Series(["x", math.nan, None], dtype=object), "f": np.arange(3.0)},
    "pandas text column": lambda: {"s": pd.Series(["a", None, "b"], dtype="str"), "x": np.arange(3.0)},
    "object array (the constructor infers)": lambda: {"s": np.array(["x", "y"], dtype=object)},
    "object arrays of texts (made as the constructor's)": lambda: {
        "s": np.array(["x", "é", "x", "", " a "], dtype=object), "f": np.arange(5.0),
        "t": np.array(["漢字", "b", "c", "d", "e\x00"], dtype=object)},
    "object array with NaN or None": lambda: {"s": np.array(["x", math.nan], dtype=object),
                                              "t": np.array(["x", None], dtype=object)},
    "object array with a number": lambda: {"s": np.array(["x", 1], dtype=object)},
    "object array of a str subclass": lambda: {"s": np.array([np.str_("x"), "y"], dtype=object)},
    "object array with a lone surrogate": lambda: {"s": np.array(["x", "\ud800"], dtype=object)},
    "empty object array": lambda: {"s": np.zeros(0, dtype=object), "f": np.arange(0.0)},
    "lists": lambda: {"s": ["x", "y"], "f": [1.0, 2.0]},
    "unequal lengths": lambda: {"a": np.arange(3.0), "b": np.arange(4.0)},
    "another index": lambda: {"a": pd.Series([1.0, 2.0], index=[5, 6])},
    "a named index": lambda: {"a": pd.Series([1.0, 2.0], index=pd.RangeIndex(2, name="k"))},
    "datetimes": lambda: {"t": np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[ns]")},
    "categories": lambda: {"c": pd.Categorical(["a", "b"])},
    "no row": lambda: {"e": np.arange(0.0), "o": pd.Series([], dtype=object)},
    "no column": lambda: {},
    "a 2-D array": lambda: {"a": np.zeros((2, 2))},
    "a name that is not text": lambda: {1: np.arange(2.0)},
}


@pytest.mark.parametrize("case", list(_FRAME_CASES))
def test_frame_from_columns_is_the_constructors_frame(case):
    """framepack.frame(columns) gives the frame pd.DataFrame(columns, copy=False) gives (values, dtypes, index,
    columns, one block per column), or raises what it raises."""
    cols = _FRAME_CASES[case]()
    try:
        want = pd.DataFrame(cols, copy=False)
    except Exception as e:  # noqa: BLE001 - the same error either way
        with pytest.raises(type(e)):
            framepack.frame(cols)
        return
    got = framepack.frame(cols)
    assert_frame_equal(got, want, check_exact=True)
    assert got.dtypes.tolist() == want.dtypes.tolist()
    assert got.columns.dtype == want.columns.dtype and type(got.index) is type(want.index)
    assert got.index.name == want.index.name
    assert [type(b) for b in got._mgr.blocks] == [type(b) for b in want._mgr.blocks]
    if "s" in cols and isinstance(cols["s"], pd.Series) and cols["s"].dtype == object:
        assert all(x is y for x, y in zip(got["s"].tolist(), cols["s"].tolist()))  # its objects, as they are


def test_texts_is_the_constructors_text_column_or_none():
    """framepack.texts(values) is the array pd.DataFrame makes of an object array of `str` (class, dtype, pyarrow
    type, values), made directly where this pandas infers pyarrow-backed `str` columns (pandas >= 3); None for
    what it does not take (no value, a value that is not a `str`)."""
    values = np.array(["b", "a", "b", "é"], dtype=object)
    want = pd.DataFrame({"c": values})["c"].array
    got = framepack.texts(values)
    if isinstance(want.dtype, pd.StringDtype) and want.dtype.storage == "pyarrow":
        assert got is not None
    if got is not None:
        assert type(got) is type(want) and repr(got.dtype) == repr(want.dtype) and got.equals(want)
        assert got.__arrow_array__().equals(want.__arrow_array__())
    for other in (np.zeros(0, dtype=object), np.array(["a", None], dtype=object),
                  np.array(["a", math.nan], dtype=object), np.array(["a", 1], dtype=object)):
        assert framepack.texts(other) is None


def test_codes_of_texts_in_the_table_are_their_places():
    """A text column whose texts are all in the table (a group's chunk) is coded by their places (+2), as a column
    with other texts, missing values or fewer rows is: the same codes either way, new texts appended in order."""
    texts = framepack.Texts()
    texts.add_chunks([["b", "a", "c"], ["d", "a"]])
    names = [("a", "b", "c", "d")[i % 4] for i in range(100)]
    col = np.array(names, dtype=object)
    want = np.array([{"b": 0, "a": 1, "c": 2, "d": 3}[t] + 2 for t in names], dtype=np.int32)
    got = framepack._codes(col, texts)
    assert got.dtype == np.int32 and np.array_equal(got, want)
    mixed = np.array([*names, "e", None, math.nan, "f"], dtype=object)  # a new text and missing ones
    got = framepack._codes(mixed, texts)
    assert np.array_equal(got[:100], want)
    assert got[100:].tolist() == [5 + 2, 1, 0, 6 + 2] and texts.texts[-2:] == ["e", "f"]  # (5 places before)
    small = np.array(names[:10], dtype=object)  # (few rows: the general path)
    assert np.array_equal(framepack._codes(small, texts), want[:10])


def test_chunks_by_gathers_each_groups_texts_in_order():
    """`chunks_by` against the plain reading (a dict per group, texts in the order of the pairs then the rows):
    groups and texts that are NaN, None, numbers or `str` subclasses left out, equal texts once per group, a text
    in two groups in both chunks, random data."""
    import random

    class Sub(str):
        pass

    def plain(columns):
        per: dict = {}
        for texts, groups in columns:
            for t, g in zip(texts.tolist(), groups.tolist()):
                if type(g) is not str:
                    continue
                d = per.setdefault(g, {})
                if type(t) is str:
                    d[t] = None
        return [list(d) for d in per.values()]

    rng = random.Random(2)
    for case in range(600):  # the first half without `str` subclasses (the sort's way), then with them
        pool_t = ["a", "b", "c", "ab", "", math.nan, None, 3] + ([Sub("a")] if case >= 300 else [])
        pool_g = ["g1", "g2", "", math.nan, None, 7] + ([Sub("g1")] if case >= 300 else [])
        columns = []
        for _ in range(rng.randint(0, 4)):
            n = rng.randint(0, 30)
            t = np.empty(n, dtype=object)
            t[:] = [rng.choice(pool_t) for _ in range(n)]
            g = np.empty(n, dtype=object)
            g[:] = [rng.choice(pool_g) for _ in range(n)]
            columns.append((t, g))
        got = framepack.chunks_by(columns)
        assert got == plain(columns)
        assert all(type(t) is str for chunk in got for t in chunk)


def test_chunks_and_codes_read_back_as_the_texts():
    """The codes `chunks_and_codes` reads off the chunks name each row's text in the table the chunks start (the
    same frame after the trip as with looked-up codes); codes only where every text and group is a `str`."""
    import random

    rng = random.Random(8)
    for _ in range(200):
        columns = []
        for _ in range(rng.randint(1, 4)):
            n = rng.randint(0, 40)
            t = np.empty(n, dtype=object)
            t[:] = [rng.choice(["a", "b", "", "long text", "b2"]) for _ in range(n)]
            g = np.empty(n, dtype=object)
            g[:] = [rng.choice(["g1", "g2", ""]) for _ in range(n)]
            columns.append((t, g))
        chunks, codes = framepack.chunks_and_codes(columns)
        assert chunks == framepack.chunks_by(columns)
        texts = framepack.Texts()
        texts.add_chunks(chunks)
        tab = framepack.table(texts.payload())
        if not any(len(t) for t, _ in columns):
            continue
        assert codes is not None and len(codes) == len(columns)
        for (t, _), c in zip(columns, codes):
            assert c.dtype == np.int32 and tab.take(c).tolist() == t.tolist()
    t = np.array(["a", math.nan], dtype=object)
    assert framepack.chunks_and_codes([(t, np.array(["g", "g"], dtype=object))])[1] is None
    frame = pd.DataFrame({"op": pd.Series(["x", "y", "x"], dtype=object), "group": pd.Series(["g"] * 3, dtype=object)})
    chunks, codes = framepack.chunks_and_codes([(frame["op"].to_numpy(), frame["group"].to_numpy())])
    texts = framepack.Texts()
    texts.add_chunks(chunks)
    packed = framepack.pack(frame, texts, {"op": codes[0]})
    assert_frame_equal(framepack.unpack(packed, framepack.table(texts.payload())), frame)


def test_chunks_and_codes_of_columns_sharing_a_group_array_equal_those_of_copies():
    """A group array paired with several text columns (a frame's group column with its names, labels and keys) is
    factorised once (`_group_codes`): the same chunks and codes as with a copy of it for each column, groups that
    are NaN, None or numbers included, the arrays shared in any order."""
    import random

    rng = random.Random(5)
    for case in range(300):
        shared = []
        for _ in range(rng.randint(1, 3)):
            n = rng.randint(0, 30)
            g = np.empty(n, dtype=object)
            g[:] = [rng.choice(["g1", "g2", "", "g3", math.nan, None, 7] if case % 2 else ["g1", "g2", "g3"])
                    for _ in range(n)]
            shared.append(g)
        columns = []
        for _ in range(rng.randint(1, 6)):
            g = rng.choice(shared)
            t = np.empty(len(g), dtype=object)
            t[:] = [rng.choice(["a", "b", "", "long text", "b2"]) for _ in range(len(g))]
            columns.append((t, g))
        copies = [(t, g.copy()) for t, g in columns]
        got, want = framepack.chunks_and_codes(columns), framepack.chunks_and_codes(copies)
        assert got[0] == want[0] == framepack.chunks_by(copies)
        assert (got[1] is None) == (want[1] is None)
        if got[1] is not None:
            assert all(np.array_equal(a, b) for a, b in zip(got[1], want[1]))
        if not any(len(t) for t, _ in columns):
            continue
        codes, uniques = framepack._group_codes([g for t, g in columns if len(t)],
                                                list({id(g): g for t, g in columns if len(t)}.values()))
        ref_codes, ref_uniques = pd.factorize(np.concatenate([g for t, g in copies if len(t)]), use_na_sentinel=True)
        assert codes.tolist() == ref_codes.tolist() and list(uniques) == list(ref_uniques)


def _counting_opens(monkeypatch) -> tuple[Communication, list]:
    """A rank's communication with operators, links and instances, and the list `Sealed.open` now appends to."""
    a = _comm("1")
    a.links = a.ops.assign(src=[0, 1])
    opened: list = []
    real = Sealed.open
    monkeypatch.setattr(Sealed, "open", lambda self: opened.append(1) or real(self))
    return a, opened


def test_sealed_communication_frames_are_opened_when_first_read(monkeypatch):
    """A rank's operators, links and instances come back sealed (`Sealed`): opened together when one of
    them is first read, each the frame it was; a frame set before any was read is kept as set."""
    a, opened = _counting_opens(monkeypatch)
    b = pickle.loads(pickle.dumps(a))
    assert opened == [] and "_sealed" in vars(b) and "ops" not in vars(b)
    assert (b.source, b.producer, b.self_local) == (a.source, a.producer, a.self_local)
    assert_frame_equal(b.steps, a.steps, check_exact=True)
    assert opened == []  # (the rest of the rank read without opening them)
    assert_frame_equal(b.links, a.links, check_exact=True)
    assert opened == [1] and "_sealed" not in vars(b)
    for k in ("ops", "instances"):
        assert_frame_equal(getattr(b, k), getattr(a, k), check_exact=True)
    assert opened == [1]
    c = pickle.loads(pickle.dumps(a))
    c.instances = None  # set while sealed: kept, the others opened as they were
    assert c.instances is None and opened == [1]
    assert_frame_equal(c.ops, a.ops, check_exact=True)
    assert c.instances is None and opened == [1, 1]
    d = pickle.loads(pickle.dumps(pickle.loads(pickle.dumps(a))))  # pickled again while sealed: the same frames
    assert_frame_equal(d.instances, a.instances, check_exact=True)
    assert Communication.instances is None  # (the field's default, as the dataclass made it)
    with pytest.raises(AttributeError):
        Communication.__new__(Communication).ops  # noqa: B018  # (a rank without the field: no default)


def test_a_sealed_frame_opened_alone_leaves_the_others_sealed(monkeypatch):
    """`open_alone("instances")` (the waits in a forked copy of the build's process) opens the instances, the frame
    they were, and leaves the operators and links sealed: opened when read, without the instances again; a rank
    already opened, or without the frame, is left as it is."""
    a, opened = _counting_opens(monkeypatch)
    b = pickle.loads(pickle.dumps(a))
    b.open_alone("instances")
    assert opened == [1] and "_sealed" in vars(b) and not {"ops", "links"} & set(vars(b))
    assert_frame_equal(b.instances, a.instances, check_exact=True)
    inst = b.instances
    for k in ("ops", "links"):
        assert_frame_equal(getattr(b, k), getattr(a, k), check_exact=True)
    assert opened == [1, 1] and "_sealed" not in vars(b) and b.instances is inst  # (not unpacked twice)
    b.open_alone("instances")
    c = pickle.loads(pickle.dumps(_comm("2")))
    c.instances = None
    c.open_alone("instances")  # (set since it was sealed: kept)
    assert opened == [1, 1] and c.instances is None


def test_released_sealed_frames_are_never_opened(monkeypatch):
    """`release_sealed` leaves an analysed rank as `release_comm_inputs` and `drop_instances` would (the operators and
    links without rows, their columns and dtypes kept; the instances None) without opening the seal; the instances
    kept (`instances=False`) are opened when read, the operators and links staying released."""
    a = _comm("1")
    a.links = _mixed()
    b, b2 = pickle.loads(pickle.dumps(a)), pickle.loads(pickle.dumps(a))
    monkeypatch.setattr(Sealed, "open", lambda self: pytest.fail("opened"))
    b.release_sealed(instances=True)
    b2.release_sealed(instances=True)
    assert "_sealed" not in vars(b) and b.instances is None
    for k in ("ops", "links"):
        got, want = getattr(b, k), getattr(a, k).iloc[:0]
        assert len(got) == 0 and list(got.columns) == list(want.columns) and list(got.dtypes) == list(want.dtypes)
        assert_frame_equal(got, want, check_exact=True, check_index_type=False)
        assert getattr(b2, k) is got  # (one frame per layout)
    monkeypatch.undo()
    c = pickle.loads(pickle.dumps(a))
    c.release_sealed(instances=False)
    assert "_sealed" in vars(c) and len(c.ops) == 0
    assert_frame_equal(c.instances, a.instances, check_exact=True)
    assert len(c.ops) == 0 and len(c.links) == 0
    plain = _comm("2")
    plain.release_sealed(instances=True)  # nothing sealed: left as it is
    assert len(plain.ops) == 2 and plain.instances is not None


def test_empty_frame_of_a_layout_has_the_columns_and_dtypes():
    for f in (_mixed(), pd.DataFrame({"a": [1.0]}), pd.DataFrame({"t": pd.Series(["x"], dtype=object)})):
        packed, _ = _round(f)
        lay = framepack.layout(packed)
        assert pickle.loads(pickle.dumps(lay)) == lay and hash(lay) == hash(pickle.loads(pickle.dumps(lay)))
        got = framepack.empty(pickle.loads(pickle.dumps(lay)))
        assert_frame_equal(got, f.iloc[:0], check_exact=True, check_index_type=False)
        assert list(got.dtypes) == list(f.dtypes) and got.columns.dtype == f.columns.dtype
    assert framepack.layout(None) is None and framepack.empty(None) is None


@pytest.mark.parametrize("size", [10, 100_000])
def test_sealed_object_round_trip(size):
    obj = {"x": list(range(size)), "t": "é" * 3, "f": _mixed()}
    s = pickle.loads(pickle.dumps(Sealed.of(obj)))
    got = s.open()
    assert got["x"] == obj["x"] and got["t"] == obj["t"] and s.codec == ("raw" if size == 10 else "lz4")
    assert_frame_equal(got["f"], obj["f"], check_exact=True)
    assert b"frame_from" in framepack.dumps(obj)  # (its frames packed)
    s.size -= 1  # (a size that does not fit: never another object)
    with pytest.raises(Exception):
        s.open()


def test_rank_fields_read_by_its_page_alone_are_sealed_until_read(monkeypatch):
    """A rank's operators and memory come back sealed, each opened when first read and then the object it was; a
    field set before it was read is kept; a rank pickled again with a field still sealed keeps it."""
    from reportgen.model import Memory, Operators, RankData, RankInfo

    ops = Operators(by_type=_mixed(), detail=pd.DataFrame({"a": [1.0]}), basis={"aicore": "per step"})
    d = RankData(info=RankInfo(rank=3, source_dir="r3"), operators=ops, memory=Memory(source="m", peak_mb=2.0))
    opened = []
    real = Sealed.open
    monkeypatch.setattr(Sealed, "open", lambda self: opened.append(1) or real(self))
    e = pickle.loads(pickle.dumps(d))
    assert e.info.rank == 3 and e.step_trace is None and opened == []
    assert e.memory.peak_mb == 2.0 and opened == [1] and "operators" not in vars(e)
    again = pickle.loads(pickle.dumps(e))  # (the operators pickled again as they were, still sealed)
    assert opened == [1] and "operators" not in vars(again)
    for x in (e, again):
        assert_frame_equal(x.operators.by_type, ops.by_type, check_exact=True)
        assert x.operators.basis == ops.basis and "operators" not in vars(x).get("_sealed", {})
    assert "_sealed" not in vars(e) and "memory" in vars(again)["_sealed"]
    g = pickle.loads(pickle.dumps(d))
    g.operators = None  # (set while sealed, then pickled: what it is now, not what was sealed)
    h = pickle.loads(pickle.dumps(g))
    assert list(vars(h)["_sealed"]) == ["memory"] and h.operators is None and len(opened) == 3
    f = pickle.loads(pickle.dumps(d))
    f.memory = None
    assert f.memory is None and len(opened) == 3  # (set before it was read: kept, never opened)
    assert RankData(info=d.info).memory is None and RankData.operators is None
    assert "_sealed" not in pickle.loads(pickle.dumps(RankData(info=d.info))).__dict__  # (nothing to seal)
