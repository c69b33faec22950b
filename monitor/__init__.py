"""modelwatch service core: config, storage, CLI and the statistics that compare windows."""

from __future__ import annotations

from monitor._version import __version__

__all__ = ["__version__"]
