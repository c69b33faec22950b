"""User-supplied regular expressions run on RE2: linear time in the text, so no pattern can hang
a tick, and fully anchored, as Prometheus and Alertmanager match labels.

RE2 refuses what needs backtracking (backreferences such as ``\\1``, lookaround such as
``(?=...)``); such patterns are rejected where they are written, with the field named.
"""

from __future__ import annotations

import functools
from typing import Any

import re2

_OPTIONS = re2.Options()
# Errors come back as exceptions; RE2's own stderr logging would only duplicate them.
_OPTIONS.log_errors = False


@functools.lru_cache(maxsize=4096)
def compile_regex(pattern: str) -> Any:
    """The compiled RE2 pattern; ValueError naming the pattern and RE2's reason otherwise."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except UnicodeEncodeError:
        raise ValueError(f"invalid regex {pattern!r}: not valid Unicode") from None
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "rejected"
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise ValueError(f"invalid regex {pattern!r} (RE2 syntax): {reason}") from None


def fullmatch(pattern: str, text: str) -> bool:
    """Whether `pattern` matches the whole of `text`."""
    compiled = compile_regex(pattern)
    try:
        return compiled.fullmatch(text) is not None
    except UnicodeEncodeError:
        # RE2 reads UTF-8; a lone surrogate (possible in a label from lenient JSON) must not
        # stop the tick, so it is matched as U+FFFD.
        safe = text.encode("utf-8", "replace").decode("utf-8")
        return compiled.fullmatch(safe) is not None
