"""The column-wise event table: taking rows keeps what those rows hold, and only that."""

from __future__ import annotations

import numpy as np

from collectors._table import EventTable


def table() -> EventTable:
    amount = [1.0, "n/a", 3.0]
    return EventTable(
        origin=[0, 1, 2], request_id=["a", "b", "c"], model=["m"] * 3, version=["1"] * 3,
        ts=np.array([1.0, 2.0, 3.0]), prediction=[0.1, 0.2, 0.3],
        columns={"amount": amount}, types={"amount": set(map(type, amount))},
    )  # fmt: skip


def test_taken_rows_carry_their_own_value_types_only() -> None:
    """A string only in a row not taken must not make the kept rows' column look mixed (the
    types decide a column's kind and whether strings in a numeric column are dead letters)."""
    kept = table().take([0, 2])
    assert kept.columns["amount"] == [1.0, 3.0]
    assert kept.types["amount"] == {float}
    assert table().take([1]).types["amount"] == {str}
    assert table().take([]).types["amount"] == set()
