"""The label join's waiting rooms: entries stored a batch at a time, found by an in-memory index.

A model has two rooms, "prediction" (predictions waiting for their labels) and "label" (labels
that came first). Each batch's entries of a room are ONE row of `waiting_batches`: `keys` the
64-bit stable hashes of their request ids, `body` their columns, `used` a bitmap of the entries
taken (matched or superseded), `open` how many are not. A process finds entries through
`WaitingRooms`, per (model, room) sorted numpy arrays of (hash, batch id, position): ~20 bytes
per waiting entry, rebuilt from the table when a process starts and topped up from rows other
writers added. The table is the truth: a take re-reads the touched rows' `used`, checks the
request id behind every hash match (colliding hashes never join wrong pairs) and the event
time, sets the bits, and deletes a row whose entries are all taken.

Every transaction that joins labels of a model first bumps the model's `waiting_heads.seq`.
Its row lock serialises those transactions until commit on PostgreSQL (SQLite's write lock
does it anyway), so two replicas never take the same entry and a model's batch ids grow in
commit order; a process that finds the counter one past the value it saw last knows that no
one else wrote and reads nothing more. The index reflects committed state only: what a
transaction adds or removes is staged and applied by `commit()`, dropped by `rollback()`.

Body format (little-endian): a 4-byte length, a JSON header {"rid": request ids, "ver":
versions (predictions), "other": None when every value is a number, else per entry None (the
number), [] (None) or [value], "sv": {slice column: values}}, then the event times (int64 µs)
and the numbers (float64, NaN where the value is not one). Values of any JSON kind round-trip,
NaN and infinities stay numbers, a slice added to the config later reads None.
"""

from __future__ import annotations

import struct
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import eq
from typing import Any

import numpy as np
import orjson
from numpy.typing import NDArray
from sqlalchemy import bindparam, text
from sqlalchemy.orm import Session

PREDICTION, LABEL = "prediction", "label"
ROOMS = (PREDICTION, LABEL)
_EXACT = 2**53
_NUMBERS = frozenset({float, int})
_JSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
_HEADER = struct.Struct("<I")
_FNV_OFFSET, _FNV_PRIME = np.uint64(0xCBF29CE484222325), np.uint64(0x100000001B3)
_MIX = (np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53))
# Decoded bodies kept per process (a batch's entries are taken over the next few batches).
_BODY_CACHE = 64
# Ids up to this long are hashed together whatever their lengths (their padding costs little).
_SHORT = 64
# Length classes of at most this many ids are hashed one id at a time.
_FEW = 8

Hasher = Callable[[Sequence[str]], NDArray[np.int64]]


def stable_hashes(ids: Sequence[str]) -> NDArray[np.int64]:
    """64-bit hashes of request ids, the same in every process (FNV-1a over the code points,
    vectorised over the ids, then a 64-bit finaliser).

    Ids are hashed in groups of similar length (within 2x): a group is padded to its longest id,
    so one very long id costs its own length, not its length times the batch's size."""
    if not ids:
        return np.empty(0, np.int64)
    lengths = np.fromiter(map(len, ids), np.int64, len(ids))
    if lengths.max() <= max(2 * lengths.min(), _SHORT):
        return _fnv(ids)
    classes = np.frexp(np.maximum(lengths, _SHORT).astype(np.float64))[1]
    out = np.empty(len(ids), np.int64)
    for c in np.unique(classes).tolist():
        at = np.flatnonzero(classes == c)
        group = [ids[i] for i in at.tolist()]
        # A few long ids: per code point, Python's int arithmetic beats numpy's per-call cost.
        out[at] = _fnv(group) if len(group) > _FEW else [_fnv_one(i) for i in group]
    return out


def _fnv_one(rid: str) -> int:
    """`_fnv` of one id, in Python integers (the same value, as a signed int64)."""
    h = int(_FNV_OFFSET)
    prime, mask = int(_FNV_PRIME), 2**64 - 1
    text = rid.rstrip("\0")  # numpy's str drops trailing NULs, as `_fnv` sees the id
    for point in map(ord, text):
        if point:
            h = ((h ^ point) * prime) & mask
    h ^= len(text)
    for mix in map(int, _MIX):
        h ^= h >> 33
        h = (h * mix) & mask
    h ^= h >> 33
    return h - 2**64 if h >= 2**63 else h


def _fnv(ids: Sequence[str]) -> NDArray[np.int64]:
    codes = np.array(ids, dtype=str)
    points = codes.view(np.uint32).reshape(len(ids), -1)
    h = np.full(len(ids), _FNV_OFFSET, np.uint64)
    with np.errstate(over="ignore"):
        for column in points.T:  # padding (code point 0) past an id's end changes nothing
            h = np.where(column != 0, (h ^ column) * _FNV_PRIME, h)
        h ^= np.char.str_len(codes).astype(np.uint64)
        for mix in _MIX:
            h ^= h >> np.uint64(33)
            h *= mix
        h ^= h >> np.uint64(33)
    return h.view(np.int64)


def micros(seconds: NDArray[np.float64]) -> NDArray[np.int64]:
    """Epoch seconds -> integer epoch microseconds, as stored."""
    out: NDArray[np.int64] = np.round(seconds * 1e6).astype(np.int64)
    return out


@dataclass(frozen=True)
class Body:
    """A stored batch's entries, decoded."""

    request_id: list[str]
    version: list[str]
    ts: NDArray[np.int64]
    numbers: NDArray[np.float64]
    other: list[Any] | None
    slices: dict[str, list[Any]]

    def values(self, at: Sequence[int]) -> list[Any]:
        """The values of entries `at`."""
        if self.other is None:
            out: list[Any] = self.numbers[np.asarray(at, np.intp)].tolist()
            return out
        nums, other = self.numbers, self.other
        return [
            float(nums[i]) if other[i] is None else other[i][0] if other[i] else None for i in at
        ]


def encode_body(
    request_id: Sequence[str],
    version: Sequence[str] | None,
    ts: NDArray[np.int64],
    values: Sequence[Any],
    slices: Mapping[str, Sequence[Any]],
) -> bytes:
    """Entries' columns -> a stored body (see the module's docstring)."""
    numbers, other = _split(values)
    header: dict[str, Any] = {"rid": list(request_id), "other": other, "sv": dict(slices)}
    if version is not None:
        header["ver"] = list(version)
    doc = orjson.dumps(header, option=_JSON_OPTIONS)
    stamps = np.ascontiguousarray(ts, "<i8").tobytes()
    return _HEADER.pack(len(doc)) + doc + stamps + numbers.astype("<f8").tobytes()


def decode_body(body: bytes) -> Body:
    (size,) = _HEADER.unpack_from(body)
    header = orjson.loads(body[_HEADER.size : _HEADER.size + size])
    rids = header["rid"]
    n, start = len(rids), _HEADER.size + size
    ts = np.frombuffer(body, "<i8", n, start).astype(np.int64)
    numbers = np.frombuffer(body, "<f8", n, start + 8 * n).astype(np.float64)
    version = header.get("ver") or [""] * n
    return Body(rids, version, ts, numbers, header["other"], header["sv"])


def _split(values: Sequence[Any]) -> tuple[NDArray[np.float64], list[Any] | None]:
    """Values -> (numbers, NaN elsewhere; the others: None when all are numbers)."""
    kinds = set(map(type, values))
    if kinds <= _NUMBERS and (
        int not in kinds or (-_EXACT <= min(values) and max(values) <= _EXACT)
    ):
        return np.asarray(values, np.float64).reshape(len(values)), None
    numbers = np.full(len(values), np.nan)
    other: list[Any] = []
    for i, v in enumerate(values):
        if type(v) is float or (type(v) is int and -_EXACT <= v <= _EXACT):
            numbers[i] = v
            other.append(None)
        else:
            other.append([] if v is None else [v])
    return numbers, other


Chunk = tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int32]]


class _Keys:
    """One room's index: runs of (hash, batch id, position) sorted by hash, ~20 bytes an entry.

    A batch's entries come in as a new run; the newest run is merged into the one before while
    it is at least half its size, so a room of N entries has O(log N) runs and each entry is
    merged O(log N) times. Batches whose row is gone are dropped lazily: their entries are
    skipped at lookup and removed once they are half of the index.
    """

    def __init__(self) -> None:
        self.runs: list[Chunk] = []
        self.sizes: dict[int, int] = {}  # batch id -> its entries in the index
        self.dead: set[int] = set()
        self.dead_entries = 0

    def add(self, hashes: NDArray[np.int64], batch: int, positions: NDArray[np.int64]) -> None:
        if not len(hashes):
            return
        order = np.argsort(hashes, kind="stable")
        ids = np.full(len(order), batch, np.int64)
        self.runs.append((hashes[order], ids, positions[order].astype(np.int32)))
        self.sizes[batch] = self.sizes.get(batch, 0) + len(order)
        while len(self.runs) > 1 and 2 * len(self.runs[-1][0]) >= len(self.runs[-2][0]):
            last = self.runs.pop()
            self.runs[-1] = _merged([self.runs[-1], last])

    def drop(self, batches: Sequence[int]) -> None:
        for bid in batches:
            if bid in self.sizes and bid not in self.dead:
                self.dead.add(bid)
                self.dead_entries += self.sizes[bid]
        if self.dead and 2 * self.dead_entries >= len(self):
            gone = np.fromiter(self.dead, np.int64, len(self.dead))
            runs = []
            for h, b, p in self.runs:
                keep = ~np.isin(b, gone)
                if keep.any():
                    runs.append((h[keep], b[keep], p[keep]))
            self.runs = runs
            for bid in self.dead:
                del self.sizes[bid]
            self.dead, self.dead_entries = set(), 0

    def find(
        self, hashes: NDArray[np.int64]
    ) -> tuple[NDArray[np.intp], NDArray[np.int64], NDArray[np.int64]]:
        """Every indexed entry whose hash is one of `hashes`: (query index, batch id, position)."""
        order = np.argsort(hashes)
        needles = hashes[order]
        found = [_matches(run, needles, order) for run in self.runs]
        if not found:
            empty = np.empty(0, np.int64)
            return np.empty(0, np.intp), empty, empty
        q, b, p = (np.concatenate([f[k] for f in found]) for k in range(3))
        if self.dead:
            live = ~np.isin(b, np.fromiter(self.dead, np.int64, len(self.dead)))
            q, b, p = q[live], b[live], p[live]
        return q.astype(np.intp), b, p.astype(np.int64)

    def __len__(self) -> int:
        return sum(len(run[0]) for run in self.runs)


def _merged(runs: list[Chunk]) -> Chunk:
    h, b, p = (np.concatenate([run[k] for run in runs]) for k in range(3))
    order = np.argsort(h, kind="stable")  # sorted runs: a merge
    return h[order], b[order], p[order]


def _matches(
    run: Chunk, needles: NDArray[np.int64], order: NDArray[np.intp]
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int32]]:
    """Entries of `run` with a hash in `needles` (sorted; `order` maps them to the query)."""
    h, b, p = run
    left = np.searchsorted(h, needles, "left")
    counts = np.searchsorted(h, needles, "right") - left
    total = int(counts.sum())
    if not total:
        empty = np.empty(0, np.int64)
        return empty, empty, np.empty(0, np.int32)
    query = np.repeat(order, counts)
    at = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts) + np.repeat(left, counts)
    return query, b[at], p[at]


@dataclass
class _ModelIndex:
    seq: int | None = None
    last_id: int = 0
    rooms: dict[str, _Keys] = field(default_factory=lambda: {r: _Keys() for r in ROOMS})


@dataclass(frozen=True)
class Taken:
    """Entries taken from a room, per stored batch: (its body, the index of each entry's id in
    the query, the entry's position in the body). Of several stored entries of one id only the
    newest is listed (the older ones were only superseded)."""

    groups: list[tuple[Body, list[int], list[int]]]


class WaitingRooms:
    """A process's index of the waiting rooms, one per Ingestor (see the module's docstring).

    `begin` starts a model's join in a batch transaction; `take`, `wait` and `expire` work on
    the table and stage index changes; `commit()` after the transaction commits, `rollback()`
    when it fails.
    """

    def __init__(self, hasher: Hasher = stable_hashes) -> None:
        self.hasher = hasher
        self._models: dict[str, _ModelIndex] = {}
        self._staged: list[Callable[[], None]] = []
        self._bodies: OrderedDict[int, Body] = OrderedDict()

    def commit(self) -> None:
        for change in self._staged:
            change()
        self._staged.clear()

    def rollback(self) -> None:
        self._staged.clear()

    def begin(self, session: Session, model: str) -> None:
        """Bump the model's head (serialising its joins) and read rows others wrote."""
        seq = session.execute(_BUMP, {"model": model}).scalar_one()
        index = self._models.setdefault(model, _ModelIndex())
        if index.seq is None or seq != index.seq + 1:
            self._top_up(session, model, index)

        def advance() -> None:
            index.seq = seq

        self._staged.append(advance)

    def _top_up(self, session: Session, model: str, index: _ModelIndex) -> None:
        """Index committed rows of `model` past the last id seen (all of them at first)."""
        rows = session.execute(_NEWER, {"model": model, "last": index.last_id})
        for bid, room, n, keys, used in rows:
            hashes = np.frombuffer(keys, "<i8", n).astype(np.int64)
            free = np.flatnonzero(~_bits(used, n))
            index.rooms[room].add(hashes[free], bid, free)
            index.last_id = max(index.last_id, bid)

    def take(
        self,
        session: Session,
        model: str,
        room: str,
        ids: Sequence[str],
        hashes: NDArray[np.int64],
        since: int,
    ) -> Taken:
        """Take the entries of `ids` (with their `hashes`) not older than `since` (µs)."""
        query, batch, pos = self._models[model].rooms[room].find(hashes)
        if not len(query):
            return Taken([])
        touched = np.unique(batch).tolist()
        stored = {
            r.id: (r.n, r.open, _bits(r.used, r.n))
            for r in session.execute(_STATE, {"ids": touched})
        }
        bodies = self._read_bodies(session, [b for b in touched if b in stored])
        hits: dict[int, NDArray[np.int64]] = {}
        chosen = []  # per batch: (query indexes, batch ids, positions) of its valid entries
        for b in bodies:
            sel = batch == b
            qs, ps = query[sel], pos[sel]
            body = bodies[b]
            ok = ~stored[b][2][ps] & (body.ts[ps] >= since)
            qs, ps = qs[ok], ps[ok]
            same = list(
                map(eq, map(body.request_id.__getitem__, ps.tolist()), map(ids.__getitem__, qs))
            )  # a hash match is a match only with the same request id
            if not all(same):
                keep = np.asarray(same, bool)
                qs, ps = qs[keep], ps[keep]
            if len(ps):
                hits[b] = ps
                chosen.append((qs, np.full(len(qs), b, np.int64), ps))
        self._mark(session, model, room, stored, hits, [b for b in touched if b not in stored])
        return Taken(_newest(chosen, bodies))

    def _read_bodies(self, session: Session, batches: list[int]) -> dict[int, Body]:
        missing = [b for b in batches if b not in self._bodies]
        if missing:
            for bid, body in session.execute(_BODIES, {"ids": missing}):
                self._bodies[bid] = decode_body(body)
        out = {}
        for b in batches:
            self._bodies.move_to_end(b)
            out[b] = self._bodies[b]
        while len(self._bodies) > _BODY_CACHE:
            self._bodies.popitem(last=False)
        return out

    def _mark(
        self,
        session: Session,
        model: str,
        room: str,
        stored: dict[int, tuple[int, int, NDArray[np.bool_]]],
        hits: dict[int, NDArray[np.int64]],
        gone: list[int],
    ) -> None:
        """Set the used bits of `hits`; delete rows with none left open."""
        updates, deleted = [], list(gone)
        for b, positions in hits.items():
            n, still, used = stored[b]
            used = used.copy()
            used[positions] = True
            left = still - len(np.unique(positions))
            if left <= 0:
                deleted.append(b)
            else:
                updates.append({"id": b, "open": left, "used": np.packbits(used).tobytes()})
        if updates:
            session.execute(_MARK, updates)
        if deleted:
            session.execute(_DELETE, {"ids": deleted})
            self._stage_drop(model, room, deleted)

    def _stage_drop(self, model: str, room: str, batches: list[int]) -> None:
        index = self._models[model]

        def drop() -> None:
            index.rooms[room].drop(batches)

        self._staged.append(drop)

    def wait(
        self,
        session: Session,
        model: str,
        room: str,
        hashes: NDArray[np.int64],
        ts: NDArray[np.int64],
        body: bytes,
    ) -> None:
        """Store one batch's entries of a room (their hashes, event times in µs and body)."""
        n = len(hashes)
        if not n:
            return
        bid = session.execute(
            _INSERT,
            {
                "model": model,
                "room": room,
                "n": n,
                "open": n,
                "ts_min": int(ts.min()),
                "ts_max": int(ts.max()),
                "keys": np.ascontiguousarray(hashes, "<i8").tobytes(),
                "body": body,
                "used": bytes((n + 7) // 8),
            },
        ).scalar_one()
        index = self._models[model]

        def add() -> None:
            index.rooms[room].add(hashes, bid, np.arange(n, dtype=np.int64))
            index.last_id = max(index.last_id, bid)

        self._staged.append(add)

    def expire(self, session: Session, model: str, before: int) -> None:
        """Delete the model's batches whose every entry is older than `before` (µs)."""
        rows = session.execute(_EXPIRE, {"model": model, "before": before}).all()
        for room in ROOMS:
            gone = [bid for bid, r in rows if r == room]
            if gone:
                self._stage_drop(model, room, gone)


def _newest(
    chosen: list[tuple[NDArray[np.intp], NDArray[np.int64], NDArray[np.int64]]],
    bodies: Mapping[int, Body],
) -> list[tuple[Body, list[int], list[int]]]:
    """Of the valid entries of each query index the newest (highest batch id), grouped by batch,
    in query order within a group."""
    if not chosen:
        return []
    q, b, p = (np.concatenate([c[k] for c in chosen]) for k in range(3))
    order = np.lexsort((-b, q))
    q, b, p = q[order], b[order], p[order]
    first = np.ones(len(q), bool)
    first[1:] = q[1:] != q[:-1]
    q, b, p = q[first], b[first], p[first]
    groups = []
    for bid in np.unique(b).tolist():
        sel = b == bid
        groups.append((bodies[bid], q[sel].tolist(), p[sel].tolist()))
    return groups


def _bits(used: bytes, n: int) -> NDArray[np.bool_]:
    out: NDArray[np.bool_] = np.unpackbits(np.frombuffer(used, np.uint8), count=n).astype(bool)
    return out


@dataclass(frozen=True)
class WaitingEntry:
    """One entry stored in a waiting room ("" version for a label)."""

    request_id: str
    version: str
    ts: float
    value: Any
    slice_values: dict[str, Any]


def waiting_entries(session: Session, model: str, room: str) -> list[WaitingEntry]:
    """The entries stored in a model's room and not taken, by request id (tests, diagnostics).

    Entries past the label horizon are listed until their batch row is deleted."""
    out = []
    for n, used, stored in session.execute(_ENTRIES, {"model": model, "room": room}):
        body = decode_body(stored)
        at = np.flatnonzero(~_bits(used, n)).tolist()
        for i, value in zip(at, body.values(at), strict=True):
            values = {c: v[i] for c, v in body.slices.items()}
            entry = WaitingEntry(
                body.request_id[i], body.version[i], body.ts[i] / 1e6, value, values
            )
            out.append(entry)
    return sorted(out, key=lambda e: e.request_id)


_BUMP = text(
    "INSERT INTO waiting_heads (model, seq) VALUES (:model, 1) "
    "ON CONFLICT (model) DO UPDATE SET seq = waiting_heads.seq + 1 RETURNING seq"
)
_NEWER = text(
    "SELECT id, room, n, keys, used FROM waiting_batches WHERE model = :model AND id > :last "
    "ORDER BY id"
)
_STATE = text("SELECT id, n, open, used FROM waiting_batches WHERE id IN :ids").bindparams(
    bindparam("ids", expanding=True)
)
_BODIES = text("SELECT id, body FROM waiting_batches WHERE id IN :ids").bindparams(
    bindparam("ids", expanding=True)
)
_MARK = text("UPDATE waiting_batches SET open = :open, used = :used WHERE id = :id")
_DELETE = text("DELETE FROM waiting_batches WHERE id IN :ids").bindparams(
    bindparam("ids", expanding=True)
)
_INSERT = text(
    "INSERT INTO waiting_batches (model, room, n, open, ts_min, ts_max, keys, body, used) "
    "VALUES (:model, :room, :n, :open, :ts_min, :ts_max, :keys, :body, :used) RETURNING id"
)
_EXPIRE = text(
    "DELETE FROM waiting_batches WHERE model = :model AND ts_max < :before RETURNING id, room"
)
_ENTRIES = text(
    "SELECT n, used, body FROM waiting_batches WHERE model = :model AND room = :room ORDER BY id"
)
