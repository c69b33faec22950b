"""Binary encoding of profiles: magic, JSON header (spec and scalars), raw arrays."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

import numpy as np
import orjson

from monitor.errors import InputError
from monitor.profiles.categorical import CategoricalProfile
from monitor.profiles.numeric import NumericProfile
from monitor.profiles.spec import spec_from_dict

if TYPE_CHECKING:
    from monitor.profiles.kinds import Profile

MAGIC = b"MWP1"
_LEN = struct.Struct("<I")


def encode(profile: Profile) -> bytes:
    """``MWP1 | u32 header length | JSON header | int64 counts | float64 sums (numeric)``."""
    header: dict[str, object] = {"spec": profile.spec.to_dict(), "null_count": profile.null_count}
    arrays = [profile.counts.astype("<i8").tobytes()]
    if isinstance(profile, NumericProfile):
        header.update(
            minimum=_finite_or_str(profile.minimum),
            maximum=_finite_or_str(profile.maximum),
            mean=profile.mean,
            m2=profile.m2,
        )
        arrays.append(profile.sums.astype("<f8").tobytes())
    head = orjson.dumps(header)
    return MAGIC + _LEN.pack(len(head)) + head + b"".join(arrays)


def profile_from_bytes(payload: bytes) -> Profile:
    """Decode a profile written by `Profile.to_bytes`; InputError if it is not one."""
    if payload[:4] != MAGIC or len(payload) < 8:
        raise InputError("not a modelwatch profile payload (bad magic)")
    (size,) = _LEN.unpack_from(payload, 4)
    try:
        header = orjson.loads(payload[8 : 8 + size])
        spec = spec_from_dict(header["spec"])
    except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise InputError(f"corrupt profile payload header: {exc}") from None
    body = payload[8 + size :]
    nb = spec.n_buckets
    expected = nb * 8 * (2 if spec.kind == "numeric" else 1)
    if len(body) != expected:
        raise InputError(f"corrupt profile payload for column '{spec.column}': bad length")
    counts = np.frombuffer(body, dtype="<i8", count=nb).astype(np.int64)
    if spec.kind == "categorical":
        return CategoricalProfile(spec, counts, int(header["null_count"]))
    return NumericProfile(
        spec=spec,
        counts=counts,
        sums=np.frombuffer(body, dtype="<f8", offset=nb * 8).astype(np.float64),
        null_count=int(header["null_count"]),
        minimum=float(header["minimum"]),
        maximum=float(header["maximum"]),
        mean=float(header["mean"]),
        m2=float(header["m2"]),
    )


def _finite_or_str(value: float) -> float | str:
    # JSON has no infinity; an empty profile's min/max are ±inf.
    return value if np.isfinite(value) else str(value)
