"""`modelwatch demo`: the whole loop on embedded defaults, on synthetic fraud-like traffic."""

from __future__ import annotations

__all__: list[str] = []
