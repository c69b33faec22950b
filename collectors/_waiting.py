"""How the label join's waiting rooms store values: typed columns, JSON only where needed.

A prediction (or label) is stored in three nullable columns, by what it is: `<name>_num` holds a
number (a float, or an int of at most 2**53 in magnitude, which every outcome metric reads as
the same float), `<name>_text` a string, and the JSON column `<name>` anything else (maps,
lists, booleans, larger ints); all three NULL is None. A non-finite float stays a number
(SQLite stores NaN as NULL: None, which metrics count as "no score" like NaN). Event times are
integer microseconds since the epoch. A prediction's slice values are the JSON text of
{slice column: value} in a TEXT column, encoded and decoded once per distinct combination (a
batch has few), so odd characters and any value kind round-trip, and a slice added to the
config later reads as None for rows stored before.

Everything here works on whole columns: a waiting room is written and taken a batch at a time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from collectors._bulk import json_text, json_value

_EXACT = 2**53
_NONE = type(None)
_FLOATS = frozenset({float, _NONE})
_NUMBERS = frozenset({float, int})
_TEXT = frozenset({str, _NONE})


def split_values(values: Sequence[Any]) -> tuple[list[Any], list[Any], list[Any]]:
    """Values -> (numbers, strings, JSON texts) columns, each None where the value is not one."""
    n = len(values)
    kinds = set(map(type, values))
    if kinds <= _FLOATS:
        return list(values), [None] * n, [None] * n
    if kinds <= _NUMBERS and -_EXACT <= min(values) and max(values) <= _EXACT:
        return list(map(float, values)), [None] * n, [None] * n  # e.g. 0/1 labels
    num: list[Any] = [None] * n
    txt: list[Any] = [None] * n
    doc: list[Any] = [None] * n
    for i, v in enumerate(values):
        if type(v) is float or (type(v) is int and -_EXACT <= v <= _EXACT):
            num[i] = float(v)
        elif type(v) is str:
            txt[i] = v
        elif v is not None:
            doc[i] = json_text(v)
    return num, txt, doc


def join_values(num: Sequence[Any], txt: Sequence[Any], doc: Sequence[Any]) -> list[Any]:
    """Inverse of `split_values` on the columns as the driver returns them."""
    n = len(num)
    if txt.count(None) == n and doc.count(None) == n:
        return list(num)
    return [
        x if x is not None else t if t is not None else None if d is None else json_value(d)
        for x, t, d in zip(num, txt, doc, strict=True)
    ]


def micros(seconds: NDArray[np.float64]) -> list[int]:
    """Epoch seconds -> integer epoch microseconds, as stored."""
    out: list[int] = np.round(seconds * 1e6).astype(np.int64).tolist()
    return out


def seconds(stored: Sequence[int]) -> NDArray[np.float64]:
    """Stored epoch microseconds -> epoch seconds."""
    return np.asarray(stored, dtype=np.int64) / 1e6


def slice_texts(columns: Mapping[str, Sequence[Any]], rows: Sequence[int]) -> list[str]:
    """The stored slice values of `rows` (indexes into each column): JSON of {column: value}."""
    names = list(columns)
    if not names:
        return ["{}"] * len(rows)
    picked = [[values[i] for i in rows] for values in columns.values()]
    combos = list(zip(*picked, strict=True))
    if all(set(map(type, col)) <= _TEXT for col in picked):
        memo = {c: json_text(dict(zip(names, c, strict=True))) for c in dict.fromkeys(combos)}
        return list(map(memo.__getitem__, combos))
    # Other kinds (True == 1 as dict keys, NaN != NaN) each take their own text.
    return [json_text(dict(zip(names, c, strict=True))) for c in combos]


def slice_columns(texts: Sequence[Any], slices: Sequence[str]) -> dict[str, list[Any]]:
    """Stored slice values -> {slice column: each row's value, None where it has none}."""
    docs = {t: json_value(t) if t is not None else {} for t in dict.fromkeys(texts)}
    for t, d in docs.items():
        if not isinstance(d, dict):
            raise ValueError(f"waiting room: slice values {t!r} are not a JSON object")
    return {c: [docs[t].get(c) for t in texts] for c in slices}
