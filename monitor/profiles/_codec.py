"""Binary encoding of profiles: magic, JSON header (spec and scalars), raw arrays."""

from __future__ import annotations

import math
from typing import Any, TypeVar

import numpy as np
import orjson

from monitor.errors import CorruptProfileError
from monitor.profiles._wire import LENGTH, MAGIC
from monitor.profiles.categorical import CategoricalProfile
from monitor.profiles.kinds import Profile
from monitor.profiles.numeric import NumericProfile
from monitor.profiles.spec import ColumnSpec, spec_from_dict

# Decoded specs by their JSON: a window's ~200 profiles share a few dozen specs, and building
# one (validating its edges) costs ~20x re-encoding it to look it up (bench/soak.py profile).
_SPECS: dict[bytes, ColumnSpec] = {}
_SPECS_MAX = 4096


def encode(profile: Profile) -> bytes:
    """The profile's bytes (`Profile.to_bytes`; the format is in `monitor.profiles._wire`)."""
    return profile.to_bytes()


def profile_from_bytes(payload: bytes, where: str = "") -> Profile:
    """Decode and validate a profile written by `Profile.to_bytes`.

    CorruptProfileError (naming `where`, e.g. "model 'm' window ...", and the column) when it is
    not one, or holds what no profile can: negative counts, non-finite sums or moments.
    """
    spec, header, at = _parts(payload, where)
    nb = spec.n_buckets
    counts = np.frombuffer(payload, dtype="<i8", count=nb, offset=at).astype(np.int64)
    null_count = header.get("null_count")
    if type(null_count) is not int or null_count < 0 or int(counts.min()) < 0:
        raise _corrupt(where, spec.column, "negative or missing counts")
    if spec.kind == "categorical":
        return _counted(CategoricalProfile(spec, counts, null_count))
    sums = np.frombuffer(payload, dtype="<f8", count=nb, offset=at + nb * 8).astype(np.float64)
    mean, m2 = header.get("mean"), header.get("m2")
    for name, value in (("mean", mean), ("m2", m2)):
        if not _is_finite(value):
            raise _corrupt(where, spec.column, f"{name} is {value!r}")
    if not np.isfinite(sums).all():
        raise _corrupt(where, spec.column, "non-finite bin sums")
    return _counted(
        NumericProfile(
            spec=spec,
            counts=counts,
            sums=sums,
            null_count=null_count,
            minimum=_bound(header.get("minimum"), where, spec.column),
            maximum=_bound(header.get("maximum"), where, spec.column),
            mean=float(mean),  # type: ignore[arg-type]
            m2=max(float(m2), 0.0),  # type: ignore[arg-type]
        )
    )


P = TypeVar("P", NumericProfile, CategoricalProfile)


def _counted(profile: P) -> P:
    """The profile with its `n` (a cached property) set: every decoded profile is asked for it
    (a comparison's sizes), and one `sum` of the counts here costs less than the descriptor."""
    profile.__dict__["n"] = int(profile.counts.sum())
    return profile


def profile_spec(payload: bytes, where: str = "") -> ColumnSpec:
    """The spec a stored profile was built on (its header only; its values are not checked)."""
    return _parts(payload, where)[0]


def _parts(payload: bytes, where: str) -> tuple[ColumnSpec, dict[str, Any], int]:
    """The payload's spec, header fields and the offset of its arrays (checked lengths)."""
    if payload[:4] != MAGIC or len(payload) < 8:
        raise _corrupt(where, None, "not a modelwatch profile payload (bad magic)")
    (size,) = LENGTH.unpack_from(payload, 4)
    try:
        spec, header = _header(payload[8 : 8 + size])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise _corrupt(where, None, f"corrupt header: {exc}") from None
    expected = spec.n_buckets * 8 * (2 if spec.kind == "numeric" else 1)
    if len(payload) - 8 - size != expected or not isinstance(header, dict):
        raise _corrupt(where, spec.column, "bad length")
    return spec, header, 8 + size


def _header(head: bytes) -> tuple[ColumnSpec, Any]:
    """The header's spec and its other fields.

    `encode_parts` writes `{"spec":SPEC,"null_count":...}`: the spec's own JSON text is the
    cache key, so a cached spec is neither parsed nor re-encoded (JSON strings escape their
    quotes, so `,"null_count":` cannot occur inside SPEC). Anything else is parsed whole.
    """
    end = head.rfind(_AFTER_SPEC)
    if head.startswith(_BEFORE_SPEC) and end > 0:
        key = head[len(_BEFORE_SPEC) : end]
        spec = _SPECS.get(key)
        if spec is None:
            spec = _spec(key, orjson.loads(key))
        return spec, orjson.loads(b"{" + head[end + 1 :])
    header = orjson.loads(head)
    return _spec(orjson.dumps(header["spec"]), header["spec"]), header


_BEFORE_SPEC, _AFTER_SPEC = b'{"spec":', b',"null_count":'


def _spec(key: bytes, doc: Any) -> ColumnSpec:
    spec = _SPECS.get(key)
    if spec is None:
        spec = spec_from_dict(doc)
        if len(_SPECS) >= _SPECS_MAX:
            _SPECS.clear()
        _SPECS[key] = spec
    return spec


def _corrupt(where: str, column: str | None, why: str) -> CorruptProfileError:
    place = " ".join(p for p in (where, f"column '{column}'" if column else "") if p)
    return CorruptProfileError(f"stored profile{' of ' + place if place else ''} is invalid: {why}")


def _is_finite(value: object) -> bool:
    # `type(...) in`: bool (an int subclass) is not a number here, and it is faster than
    # isinstance with a union (~160,000 calls per burst).
    return type(value) in _NUMBERS and math.isfinite(value)  # type: ignore[arg-type]


_NUMBERS = (int, float)


def _bound(value: object, where: str, column: str) -> float:
    if _is_finite(value) or value in ("inf", "-inf"):
        return float(value)  # type: ignore[arg-type]
    raise _corrupt(where, column, f"minimum/maximum is {value!r}")
