"""Profile backend on `monitor.profiles` (placeholder counting backend until it lands)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson


@dataclass(frozen=True)
class CountProfile:
    """Counts only: n values, of which `nulls` are null."""

    kind: str
    n: int
    nulls: int

    def merge(self, other: CountProfile) -> CountProfile:
        return CountProfile(self.kind, self.n + other.n, self.nulls + other.nulls)

    def to_bytes(self) -> bytes:
        return orjson.dumps({"kind": self.kind, "n": self.n, "nulls": self.nulls})


class MonitorProfileBackend:
    """Counting placeholder with the ProfileBackend surface."""

    def learn(self, column: str, values: Sequence[Any]) -> Any:
        numeric = any(isinstance(v, int | float) for v in values)
        return "numeric" if numeric else "categorical"

    def spec_of(self, payload: bytes) -> Any:
        return orjson.loads(payload)["kind"]

    def build(self, spec: Any, values: Sequence[Any]) -> CountProfile:
        return CountProfile(str(spec), len(values), sum(v is None for v in values))

    def load(self, payload: bytes) -> CountProfile:
        d = orjson.loads(payload)
        return CountProfile(d["kind"], d["n"], d["nulls"])

    def kind(self, spec: Any) -> str:
        return str(spec)
