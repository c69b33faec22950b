"""Secrets out of text: the one home of the redaction rules.

`redact` makes a stored or served error safe (one line, bounded, no URLs at all: `/readyz`,
`modelwatch status`, alert labels); `scrub` keeps every line and a URL's scheme, host and path
but none of its secrets (log lines: every handler the CLI configures filters through it).
Standard library only: the CLI's logging imports it before anything heavy.
"""

from __future__ import annotations

import re

MAX_ERROR = 300
# scheme://anything (connection strings, URLs with tokens), and key=value secrets.
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://\S+")
_SECRET = re.compile(r"(?i)\b(password|passwd|pwd|token|secret|user)=\S+")
# Finer rules for text that keeps its URLs (log lines): the userinfo of scheme://user:pw@host,
# every query value (a token may have any name), `Authorization: Bearer/Basic ...` and
# key=value or key: value secrets (connection strings, signing secrets, API keys).
_USERINFO = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s@?#'\"]+@")
_QUERY_VALUE = re.compile(r"(?<=\S)([?&])([^=&#\s'\"?]+)=[^&#\s'\"]*")
_CREDENTIAL = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{6,}")
_KEY_VALUE = re.compile(
    r"(?i)\b(password|passwd|pwd|token|secret|api[_-]?key|access[_-]?token|signature)"
    r"(['\"]?\s*[=:]\s*['\"]?)[^\s'\",;&]+"
)
REDACTED = "<redacted>"


def redact(error: BaseException | str) -> str:
    """A one-line error safe to show: type and first line, no URLs or credentials, bounded."""
    if isinstance(error, BaseException):
        text = f"{type(error).__name__}: {error}"
    else:
        text = error
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    line = _SECRET.sub(rf"\1={REDACTED}", _URL.sub(REDACTED, scrub(line)))
    return line if len(line) <= MAX_ERROR else line[: MAX_ERROR - 1] + "…"


def scrub(text: str) -> str:
    """`text` (any length, every line kept) with its secrets replaced by `<redacted>`: URL
    userinfo, URL query values, bearer/basic credentials and key=value secrets. URLs keep
    their scheme, host, port and path, so a log line still says where a request went."""
    if not text:
        return text
    text = _USERINFO.sub(rf"\1{REDACTED}@", text)
    text = _QUERY_VALUE.sub(rf"\1\2={REDACTED}", text)
    text = _CREDENTIAL.sub(rf"\1 {REDACTED}", text)
    return _KEY_VALUE.sub(rf"\1\2{REDACTED}", text)
