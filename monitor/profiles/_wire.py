"""The profile wire format's writing half: ``MWP1 | u32 header length | JSON header | int64
counts | float64 sums (numeric)``. Profiles call it from `to_bytes`; `codec` reads it back.

It takes a profile's parts, not a profile, so the profile modules import it without a cycle.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

import numpy as np
import orjson
from numpy.typing import NDArray

from monitor.profiles._binning import Binning

MAGIC = b"MWP1"
LENGTH = struct.Struct("<I")
_BOUNDS = ("minimum", "maximum")


def encode_parts(
    spec: Binning,
    null_count: int,
    counts: NDArray[np.int64],
    moments: Mapping[str, float] | None = None,
    sums: NDArray[np.float64] | None = None,
) -> bytes:
    """Encode a profile from its parts; `moments` and `sums` only for a numeric profile."""
    header: dict[str, object] = {"spec": spec.to_dict(), "null_count": null_count}
    # JSON has no infinity; an empty profile's minimum and maximum are ±inf.
    header.update({k: _finite_or_str(v) if k in _BOUNDS else v for k, v in (moments or {}).items()})
    arrays = [counts.astype("<i8").tobytes()]
    if sums is not None:
        arrays.append(sums.astype("<f8").tobytes())
    head = orjson.dumps(header)
    return MAGIC + LENGTH.pack(len(head)) + head + b"".join(arrays)


def _finite_or_str(value: float) -> float | str:
    return value if np.isfinite(value) else str(value)
