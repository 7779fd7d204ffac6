"""`framestack.stack` stacks frames exactly as `pd.concat(frames, ignore_index=True)` does: the same columns, dtypes,
values and index, whichever way it takes (column by column, or pandas' own concat for frames it cannot join)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from reportgen import framestack


def _frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    texts = np.array([f"op{int(x)}" for x in rng.integers(0, 5, n)], dtype=object)
    return pd.DataFrame({
        "texts": pd.Series(texts, dtype=object),  # an object column of texts stays object (pandas 3 would infer str)
        "str": pd.array(texts.tolist(), dtype="str"),
        "gaps": pd.array([None if i % 3 == 0 else "x" for i in range(n)], dtype="str"),
        "f": rng.random(n), "i": rng.integers(0, 9, n), "b": rng.random(n) > 0.5,
        "I": pd.array([None if i % 4 == 0 else i for i in range(n)], dtype="Int64"),
        "cat": pd.Categorical(["p" if i % 2 else "q" for i in range(n)], categories=["p", "q"]),
        "t": pd.to_datetime(rng.integers(0, 10**6, n), unit="s"),
        "mixed": pd.Series([None, 1, "z", 2.5, float("nan")][:n % 5] + ["a"] * (n - n % 5), dtype=object),
    })


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert list(a.dtypes) == list(b.dtypes)
    assert a.columns.dtype == b.columns.dtype and type(a.index) is type(b.index)


@pytest.mark.parametrize("sizes", [(3, 4), (0, 5, 0, 2), (7, 1, 2, 0, 9, 4), (0, 0)])
def test_stack_is_pandas_concat(sizes):
    frames = [_frame(n, seed) for seed, n in enumerate(sizes)]
    want = pd.concat(frames, ignore_index=True)
    _same(framestack.stack(frames), want)
    _same(framestack.stack(frames, columns=("f", "texts", "cat")), want[["texts", "f", "cat"]])


def test_frames_it_cannot_join_take_pandas_concat():
    a, b = _frame(4, 1), _frame(5, 2)
    cases = [
        [a, b[list(reversed(b.columns))]],  # other column order: pandas aligns them
        [a, b.drop(columns="f")],  # a column missing in one frame: NaN there
        [a, b.assign(f=b["f"].astype("float32"))],  # mixed dtypes in a column: pandas' common type
        [a, b.assign(cat=pd.Categorical(b["cat"], categories=["q", "p"]))],  # other categories: object
        [a.set_axis(["x"] * a.shape[1], axis=1), b.set_axis(["x"] * b.shape[1], axis=1)],  # duplicate names
        [a],  # one frame
    ]
    for frames in cases:
        _same(framestack.stack(frames), pd.concat(frames, ignore_index=True))


def test_the_stacked_frame_owns_no_view_of_the_inputs():
    a, b = _frame(3, 1), _frame(2, 2)
    out = framestack.stack([a, b])
    out.loc[0, "f"] = -1.0
    assert a.loc[0, "f"] != -1.0
