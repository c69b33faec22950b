"""What a profile needs of its column's spec: the buckets it counts and a fingerprint to merge by.

`ColumnSpec` (`monitor.profiles.spec`) is the one implementation. The profile modules see it
through this protocol because the spec builds their profiles (`ColumnSpec.profile`): they
cannot import it back without an import cycle.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

import numpy as np
from numpy.typing import NDArray

Kind = Literal["numeric", "categorical"]


class Binning(Protocol):
    """A column's buckets: quantile edges (numeric) or top-K categories (categorical)."""

    @property
    def column(self) -> str: ...

    @property
    def kind(self) -> Kind: ...

    @property
    def edges(self) -> tuple[float, ...]: ...

    @property
    def categories(self) -> tuple[str, ...]: ...

    @property
    def tail(self) -> frozenset[str]: ...

    @property
    def tail_complete(self) -> bool: ...

    @property
    def discrete(self) -> bool: ...

    @property
    def n_buckets(self) -> int: ...

    @property
    def edges_array(self) -> NDArray[np.float64]: ...

    @property
    def fingerprint(self) -> str: ...

    def to_dict(self) -> dict[str, Any]: ...
