"""Binary encoding of profiles: magic, JSON header (spec and scalars), raw arrays."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
import orjson
from numpy.typing import NDArray

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
    sums = None
    if spec.kind == "numeric":
        sums = np.frombuffer(payload, dtype="<f8", count=nb, offset=at + nb * 8).astype(np.float64)
    flaws = (int(counts.min()) < 0, sums is not None and not np.isfinite(sums).all())
    return _profile(spec, header, (counts, sums), int(counts.sum()), where, flaws)


def profiles_from_bytes(payloads: Sequence[bytes], where: Callable[[int], str]) -> list[Profile]:
    """`profile_from_bytes` of each payload (`where(i)` names the i-th), equal bit for bit, with
    the arrays of all payloads on one spec read, checked and counted at once: one `frombuffer`,
    one `min`, one `isfinite` and one row sum per spec instead of per profile (a burst decodes
    ~50,000 profiles of a few dozen specs). Each profile's arrays are one row of its spec's
    stacked arrays. When any payload is invalid, they are decoded one by one, so the error is
    the same CorruptProfileError, naming the first invalid one.
    """
    try:
        return _stacked(payloads)
    except CorruptProfileError:
        return [profile_from_bytes(payload, where(i)) for i, payload in enumerate(payloads)]


def _stacked(payloads: Sequence[bytes]) -> list[Profile]:
    parts = [_parts(payload, "") for payload in payloads]
    groups: dict[int, list[int]] = {}
    for i, (spec, _, _) in enumerate(parts):
        groups.setdefault(id(spec), []).append(i)  # a spec is one object per JSON (`_SPECS`)
    out: list[Profile] = [None] * len(parts)  # type: ignore[list-item]
    for idx in groups.values():
        spec = parts[idx[0]][0]
        width = spec.n_buckets * 8
        counts = _rows(payloads, parts, idx, 0, width).view("<i8").astype(np.int64)
        sums: Any = [None] * len(idx)
        if spec.kind == "numeric":
            sums = _rows(payloads, parts, idx, width, width).view("<f8").astype(np.float64)
        if int(counts.min()) < 0 or (spec.kind == "numeric" and not np.isfinite(sums).all()):
            raise _corrupt("", spec.column, "negative counts or non-finite sums")
        sizes = counts.sum(axis=1).tolist()
        for j, i in enumerate(idx):
            arrays = (counts[j], sums[j])
            out[i] = _profile(spec, parts[i][1], arrays, sizes[j], "", (False, False))
    return out


def _rows(
    payloads: Sequence[bytes],
    parts: Sequence[tuple[ColumnSpec, Any, int]],
    idx: Sequence[int],
    skip: int,
    width: int,
) -> NDArray[np.uint8]:
    """Bytes `[at + skip, at + skip + width)` of each payload in `idx`, one row each."""
    joined = b"".join(payloads[i][parts[i][2] + skip : parts[i][2] + skip + width] for i in idx)
    return np.frombuffer(joined, dtype=np.uint8).reshape(len(idx), width)


def _profile(
    spec: ColumnSpec,
    header: dict[str, Any],
    arrays: tuple[NDArray[np.int64], NDArray[np.float64] | None],
    n: int,
    where: str,
    flaws: tuple[bool, bool],
) -> Profile:
    """The profile of the arrays (counts, and sums when numeric) and the header's scalars,
    checked in this order (`flaws`: negative counts, non-finite sums), its `n` (a cached
    property) set: every decoded profile is asked for it (a comparison's sizes)."""
    counts, sums = arrays
    null_count = header.get("null_count")
    if type(null_count) is not int or null_count < 0 or flaws[0]:
        raise _corrupt(where, spec.column, "negative or missing counts")
    if sums is None:
        return _built(CategoricalProfile, (spec, counts, null_count), n)
    mean, m2 = header.get("mean"), header.get("m2")
    for name, value in (("mean", mean), ("m2", m2)):
        if not _is_finite(value):
            raise _corrupt(where, spec.column, f"{name} is {value!r}")
    if flaws[1]:
        raise _corrupt(where, spec.column, "non-finite bin sums")
    minimum = _bound(header.get("minimum"), where, spec.column)
    maximum = _bound(header.get("maximum"), where, spec.column)
    m2 = max(float(m2), 0.0)  # type: ignore[arg-type]
    values = (spec, counts, sums, null_count, minimum, maximum, float(mean), m2)  # type: ignore[arg-type]
    return _built(NumericProfile, values, n)


P = TypeVar("P", NumericProfile, CategoricalProfile)
_FIELDS = {
    k: tuple(f.name for f in dataclasses.fields(k)) for k in (NumericProfile, CategoricalProfile)
}


def _built(kind: type[P], values: tuple[Any, ...], n: int) -> P:
    """A profile of `kind` with its fields in order and its `n` (a cached property) set, without
    the dataclass constructor: what its `__post_init__` checks (array shapes on the spec, finite
    moments) the decoder has checked, and the constructor costs ~4x this (~50,000 per burst)."""
    profile = object.__new__(kind)
    profile.__dict__.update(zip(_FIELDS[kind], values, strict=True), n=n)
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
