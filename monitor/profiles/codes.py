"""Category codes of any column (pandas, numpy or `Coded`; monitor.common.columns) without
pandas where the column is not a pandas one: what `modelwatch drift` profiles text through."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.common.columns import Coded, factorize
from monitor.profiles._binning import Binning
from monitor.profiles.categorical import buckets_of, category_label, encode_categorical


def native(values: Any) -> bool:
    """True for columns factorized without pandas: `Coded`, numeric or empty numpy arrays."""
    if isinstance(values, Coded):
        return True
    return isinstance(values, np.ndarray) and (values.dtype.kind in "biuf" or values.size == 0)


def label_codes(values: Any, dense: bool = True) -> tuple[NDArray[np.intp], list[str]]:
    """Codes (-1: null) and the canonical label of each code (`category_label`); `dense` as
    in `factorize`."""
    codes, uniques = factorize(values, dense)
    if isinstance(values, Coded) and values.text:
        return codes, uniques  # the label of a str is itself
    return codes, [category_label(u) for u in uniques]


def encode_categories(spec: Binning, values: Any) -> NDArray[np.intp]:
    """`encode_categorical` of `values`; numpy and `Coded` columns without pandas.

    Both map labels to buckets through `categorical.buckets_of`, the rule's one owner.
    """
    if not native(values):
        return encode_categorical(spec, values)
    codes, labels = label_codes(values, dense=False)
    return buckets_of(spec, codes, labels)
