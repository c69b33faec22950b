"""Sources (Kafka, JSONL serving logs, HTTP), decoding, dead letters, windowing and label join."""

from __future__ import annotations

__all__: list[str] = []
