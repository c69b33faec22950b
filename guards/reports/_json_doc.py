"""The verdict document as strict JSON text."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def render_json(doc: Mapping[str, Any]) -> str:
    """Indented, strict JSON (non-finite floats were already written as null)."""
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"
