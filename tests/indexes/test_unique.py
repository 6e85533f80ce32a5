"""``unique_ints`` gives exactly what ``np.unique`` gives, for every array kind."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from lakesieve.keys.unique import unique_ints

_DTYPES = [np.int8, np.int32, np.int64, np.uint8, np.uint64, np.float64]


@settings(max_examples=300, deadline=None)
@given(
    data=st.data(),
    dtype=st.sampled_from(_DTYPES),
    size=st.integers(0, 60),
)
def test_same_as_numpy(data: st.DataObject, dtype: type, size: int) -> None:
    values = data.draw(hnp.arrays(dtype, size, elements=None, unique=False))
    got, want = unique_ints(values), np.unique(values)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_extremes_and_repeats() -> None:
    values = np.array([2**63 - 1, -(2**63), 0, -(2**63), 5, 5, 2**63 - 1], dtype=np.int64)
    np.testing.assert_array_equal(unique_ints(values), [-(2**63), 0, 5, 2**63 - 1])
    hashes = np.array([2**64 - 1, 0, 2**64 - 1, 7], dtype=np.uint64)
    np.testing.assert_array_equal(unique_ints(hashes), np.array([0, 7, 2**64 - 1], np.uint64))
    nans = np.array([np.nan, 1.0, np.nan])  # np.unique's own NaN rule
    np.testing.assert_array_equal(unique_ints(nans), np.unique(nans))
    assert unique_ints(np.array([3], np.int64)).tolist() == [3]
