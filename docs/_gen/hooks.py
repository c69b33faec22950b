"""MkDocs hook: replaces `<!-- gen:NAME -->` in a page with Markdown generated from the code.

Names: `config` (the pydantic config models), `http-api` (the daemon's OpenAPI document),
`metrics` (the registered Prometheus metrics) and `signals` (the alert signal kinds). The CLI
reference is rendered by mkdocs-click from the click commands themselves.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Import this checkout's packages (not an installed copy), and `docs._gen` itself.
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from docs._gen import reference, sources  # noqa: E402

MARKER = re.compile(r"<!-- gen:([a-z-]+) -->")

GENERATORS: dict[str, Callable[[], str]] = {
    "config": lambda: reference.config_markdown(sources.config_model()),
    "http-api": lambda: reference.api_markdown(sources.openapi_document()),
    "metrics": lambda: reference.metrics_markdown(
        reference.metric_docs(list(sources.metric_collectors()))
    ),
    "signals": lambda: reference.signals_markdown(sources.signal_docs()),
}


def render(markdown: str) -> str:
    """The page with every marker replaced; an unknown name is an error naming it."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(f"unknown generated section {name!r}; known: {', '.join(GENERATORS)}")
        return GENERATORS[name]()

    return MARKER.sub(one, markdown)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """MkDocs event: generate the reference sections of a page."""
    return render(markdown)
