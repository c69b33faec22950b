"""Alert rules, state, grouping, silences and durable signed webhook delivery."""

from __future__ import annotations

__all__: list[str] = []
