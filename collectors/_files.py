"""JSONL serving logs (plain or gzip) matched by a glob, followed like `tail -F`.

Each file is identified by a fingerprint of its first line (sha256 of up to 4 KiB) — not by its
name — so a rename during rotation keeps its position, a new file reusing an inode starts from
zero, and a compressed copy of an already-read file (`app.jsonl` → `app.jsonl.1.gz`) is not read
twice. Device and inode are kept to follow renames of open files and stored with the position.
A plain file that shrinks below its stored position was truncated (copytruncate) and is read
again from the start. Positions are byte offsets in the uncompressed stream; a line is read
only once it ends with a newline (a gzip file's last line may end at EOF).
"""

from __future__ import annotations

import glob
import gzip
import hashlib
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from collectors._base import Batch, RawRecord

FINGERPRINT_BYTES = 4096


@dataclass
class _File:
    path: str
    dev: int
    ino: int
    key: str
    gz: bool
    offset: int = 0
    handle: IO[bytes] | None = None
    pending: bytes = b""
    gone: bool = False
    eof: bool = False
    size: int = 0
    detail: dict[str, Any] = field(default_factory=dict)


def _first_line(path: str, gz: bool) -> bytes | None:
    opener: Callable[..., IO[bytes]] = gzip.open if gz else open  # type: ignore[assignment]
    try:
        with opener(path, "rb") as fh:
            head = fh.read(FINGERPRINT_BYTES)
    except (OSError, EOFError):
        return None
    end = head.find(b"\n")
    if end >= 0:
        return head[: end + 1]
    # A gzip file is complete; a plain file's first line may still be being written.
    return head if gz and head else (head if len(head) >= FINGERPRINT_BYTES else None)


def fingerprint(path: str) -> str | None:
    """The file's identity: sha256 of its first line (None until that line is complete)."""
    line = _first_line(path, path.endswith(".gz"))
    if line is None:
        return None
    return "fp:" + hashlib.sha256(line).hexdigest()[:32]


class JsonlSource:
    """Follows every file matching `pattern`; yields batches of complete lines."""

    type = "jsonl"

    def __init__(
        self,
        name: str,
        pattern: str,
        stored: Callable[[list[str]], Mapping[str, int]],
        batch_size: int = 5000,
        chunk_bytes: int = 1 << 20,
        poll_interval: float = 0.5,
        follow: bool = True,
    ) -> None:
        self.name = name
        self.pattern = pattern
        self.stored = stored
        self.batch_size = batch_size
        self.chunk_bytes = chunk_bytes
        self.poll_interval = poll_interval
        self.follow = follow
        self.files: dict[str, _File] = {}  # by key
        self.targets: dict[str, int] | None = None  # key -> size at start (caught-up target)
        self.committed_offsets: dict[str, int] = {}
        self.stopped = False

    # --- discovery -------------------------------------------------------------------------
    def _scan(self) -> None:
        seen: set[tuple[int, int]] = set()
        for path in sorted(glob.glob(self.pattern)):
            try:
                st = os.stat(path)
            except OSError:
                continue
            seen.add((st.st_dev, st.st_ino))
            if any(
                (f.dev, f.ino) == (st.st_dev, st.st_ino) and f.handle for f in self.files.values()
            ):
                continue
            key = fingerprint(path)
            if key is None or (key in self.files and self.files[key].handle is not None):
                continue
            self._open(path, key, st)
        for f in self.files.values():
            f.gone = (f.dev, f.ino) not in seen

    def _open(self, path: str, key: str, st: os.stat_result) -> None:
        gz = path.endswith(".gz")
        known = self.files.get(key)
        offset = known.offset if known else self.stored([key]).get(key, 0)
        if not gz and st.st_size < offset:
            offset = 0  # truncated in place (copytruncate): the same file starts over
        handle: IO[bytes] = gzip.open(path, "rb") if gz else open(path, "rb")  # type: ignore[assignment]
        if offset:
            handle.seek(offset)
        detail = {"path": path, "device": st.st_dev, "inode": st.st_ino, "gzip": gz}
        self.files[key] = _File(
            path, st.st_dev, st.st_ino, key, gz, offset, handle, size=st.st_size, detail=detail
        )
        self.committed_offsets.setdefault(key, offset)

    def _snapshot_targets(self) -> None:
        self._scan()
        self.targets = {}
        for key, f in self.files.items():
            self.targets[key] = self._readable_end(f)

    def _readable_end(self, f: _File) -> int:
        if f.gz:
            return -1  # unknown until read to EOF; caught up when EOF was reached
        try:
            return os.fstat(f.handle.fileno()).st_size if f.handle else f.offset
        except OSError:
            return f.offset

    # --- reading ---------------------------------------------------------------------------
    def _truncated(self, f: _File) -> bool:
        if f.gz or f.handle is None:
            return False
        try:
            return os.fstat(f.handle.fileno()).st_size < f.offset + len(f.pending)
        except OSError:
            return False

    def _read(self, f: _File, budget: int) -> list[RawRecord]:
        assert f.handle is not None
        records: list[RawRecord] = []
        if self._truncated(f):
            # Truncated in place: its new content is a new file (new fingerprint) for _scan.
            self._close(f)
            f.pending, f.eof = b"", True
            return records
        while len(records) < budget:
            chunk = f.handle.read(self.chunk_bytes)
            if not chunk:
                f.eof = True
                if f.gz and f.pending:
                    records.append(self._record(f, f.pending))
                    f.pending = b""
                break
            f.eof = False
            data = f.pending + chunk
            lines = data.split(b"\n")
            f.pending = lines.pop()
            records.extend(self._record(f, line + b"\n") for line in lines)
        return records

    def _record(self, f: _File, line: bytes) -> RawRecord:
        start = f.offset
        f.offset += len(line)
        return RawRecord(f.key, start, f.offset, line.rstrip(b"\r\n") or b" ")

    def batches(self) -> Iterator[Batch]:
        if self.targets is None:
            self._snapshot_targets()
        while not self.stopped:
            records: list[RawRecord] = []
            for f in list(self.files.values()):
                if f.handle is None:
                    continue
                got = self._read(f, self.batch_size - len(records))
                records.extend(got)
                if not got and f.gone and not f.pending:
                    self._close(f)  # rotated away and read to its end
                if len(records) >= self.batch_size:
                    break
            if records:
                yield self._batch(records)
                continue
            if not self.follow:
                return
            yield Batch(())  # idle tick: lets the runner check caught_up() and stop
            time.sleep(self.poll_interval)
            self._scan()

    def _batch(self, records: list[RawRecord]) -> Batch:
        keys = {r.key for r in records}
        ends = {k: max(self.files[k].offset, self._readable_end(self.files[k])) for k in keys}
        return Batch(records, ends, {k: self.files[k].detail for k in keys})

    def _close(self, f: _File) -> None:
        if f.handle is not None:
            f.handle.close()
            f.handle = None

    # --- Source protocol -------------------------------------------------------------------
    def committed(self, positions: Mapping[str, int]) -> None:
        self.committed_offsets.update(positions)

    def caught_up(self) -> bool:
        """Every file present at start was read to its size then (gzip: to EOF) and committed."""
        if self.targets is None:
            return False
        for key, target in self.targets.items():
            f = self.files[key]
            if self.committed_offsets.get(key, 0) < f.offset:
                return False
            if target < 0 and not f.eof:
                return False
            if target >= 0 and f.offset + len(f.pending) < target:
                return False
        return True

    def close(self) -> None:
        self.stopped = True
        for f in self.files.values():
            self._close(f)
