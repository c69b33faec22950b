"""Defaults shown in `--help` and used by the config models, in a module that imports nothing.

The CLI builds its options (and their help text) without loading the config models, so each
`modelwatch COMMAND --help` answers at once; a default both need lives here, once.
"""

from __future__ import annotations

DEFAULT_DATABASE_URL = "sqlite:///modelwatch.db"
