"""The long-running service: HTTP API, scheduler with cross-replica leases, graceful shutdown."""

from __future__ import annotations

__all__: list[str] = []
