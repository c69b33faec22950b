"""The profile backend on `monitor.profiles` (numpy-based; imported only when ingesting)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.profiles import (
    ColumnSpec,
    Profile,
    profile_from_bytes,
    profile_spec,
    profile_subsets,
    spec_from_reference,
)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class MonitorProfileBackend:
    """Histograms on quantile edges (numeric) and top-K counts (categorical) from the monitor.

    A learned column is numeric only when every non-null value of the sample is a number; a
    column with no non-null value yet gets an empty categorical spec (everything later counts
    as "unseen") — a baseline avoids both.
    """

    def learn(self, column: str, values: Sequence[Any]) -> ColumnSpec:
        present = [v for v in values if v is not None]
        if not present:
            return ColumnSpec(column, "categorical")
        numeric = all(_is_number(v) for v in present)
        return spec_from_reference(column, present, kind="numeric" if numeric else "categorical")

    def spec_of(self, payload: bytes) -> ColumnSpec:
        return profile_spec(payload)

    def build(
        self,
        spec: ColumnSpec,
        values: Sequence[Any] | NDArray[np.float64],
        subsets: Sequence[NDArray[np.intp] | None],
    ) -> list[Profile]:
        return profile_subsets(spec, values, subsets)

    def load(self, payload: bytes) -> Profile:
        return profile_from_bytes(payload)

    def kind(self, spec: ColumnSpec) -> str:
        return spec.kind

    def warm_up(self) -> None:
        import pandas  # noqa: F401 - categorical profiles factorize with it
