"""The small interface through which windows are profiled, and its default implementation.

Collectors do no statistics themselves: a :class:`ProfileBackend` learns column specs (bin edges,
categories), builds mergeable profiles on them and (de)serialises them. The default backend wraps
`monitor.profiles`; tests may inject another.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from collectors._monitor_profiles import MonitorProfileBackend

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray


class Profile(Protocol):
    """A mergeable per-column summary."""

    @property
    def n(self) -> int: ...

    def merge(self, other: Any) -> Any: ...

    def to_bytes(self) -> bytes: ...


class ProfileBackend(Protocol):
    """Learns specs, profiles values on a spec, and reads stored profiles.

    - `learn(column, values)`: a spec from reference values (used when no baseline exists; the
      collector learns it from the first batch of a model version's first window).
    - `spec_of(payload)`: the spec a stored profile (baseline or window) was built on, so window
      profiles share the baseline's edges and categories.
    - `build(spec, values, subsets)`: one profile of `values` (None is a null; a numeric
      column may come as a float64 array with NaN for null) on `spec` per
      subset of positions (None: every value) — a window's overall and per-slice profiles, so an
      implementation can bucket the values once.
    - `load(payload)`: a stored profile, ready to merge.
    - `kind(spec)`: "numeric" or "categorical", stored next to each window profile.
    - `warm_up()`: load whatever the first build would load (imports), ahead of time.
    """

    def learn(self, column: str, values: Sequence[Any]) -> Any: ...

    def spec_of(self, payload: bytes) -> Any: ...

    def build(
        self,
        spec: Any,
        values: Sequence[Any] | NDArray[np.float64],
        subsets: Sequence[NDArray[np.intp] | None],
    ) -> Sequence[Profile]: ...

    def load(self, payload: bytes) -> Profile: ...

    def kind(self, spec: Any) -> str: ...

    def warm_up(self) -> None: ...


def default_backend() -> ProfileBackend:
    """The backend built on `monitor.profiles`."""
    return MonitorProfileBackend()
