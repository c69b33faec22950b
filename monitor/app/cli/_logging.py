"""Logging for long-running commands: a level, plain or JSON lines, and a quiet scheduler.

APScheduler logs two INFO lines per job run ("Running job", "executed successfully"); at a
tick every few seconds that buries everything else, so they (and Alembic's per-check "Context
impl" line) are demoted to DEBUG. So is its WARNING that a run was skipped because the previous
one is still running: with one instance per job that is the designed behaviour of a tick that
outlasts its interval (a loaded machine, a long burst), not a fault, and it would repeat every
interval; how long ticks take is in the job metrics.

Every handler configured here carries :class:`RedactSecrets`, so no line at any level (ours,
or a library's such as httpx's "HTTP Request: POST <url>" and httpcore's DEBUG traces) shows
URL userinfo, query tokens, bearer credentials or key=value secrets; the rules themselves are
`monitor.common.redact`'s (their one home). Values the config names as secrets (API tokens, signing
secrets, the database password) are also replaced wherever they appear. The records of the
worker processes a command spawns reach these same handlers through `monitor.common.childlog`.
"""

from __future__ import annotations

import json
import logging
import urllib.parse
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from monitor.common.redact import REDACTED, scrub

if TYPE_CHECKING:
    from monitor.config import Config

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LEVELS = ("debug", "info", "warning", "error")
FORMATS = ("text", "json")
# Per-tick chatter: APScheduler's job runs, Alembic's "Context impl" on every schema check.
NOISY = ("apscheduler", "alembic.runtime.migration")
# APScheduler's per-tick WARNING when a run is skipped because the previous one still runs.
SKIPPED_RUN = "maximum number of running instances reached"


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (UTC), level, logger, message, exception if any."""

    def format(self, record: logging.LogRecord) -> str:
        doc = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            doc["exception"] = record.exc_text
        return json.dumps(doc, ensure_ascii=False)


class RedactSecrets(logging.Filter):
    """Rewrites each record's message, traceback and stack without secrets (never drops one).

    `secrets`: literal values to replace as well (the config's tokens and signing secrets),
    for secrets that no pattern can recognise.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        # Longest first, so a secret containing another is replaced whole; short values
        # (a 1-character "secret") would shred ordinary text and are left to the patterns.
        self.secrets = sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True)

    def clean(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return scrub(text)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: logging itself reports it on emit
            return True
        record.msg, record.args = self.clean(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.clean(record.exc_text)
        if record.stack_info:
            record.stack_info = self.clean(record.stack_info)
        return True


class DemoteNoise(logging.Filter):
    """Turn INFO records of the noisy loggers into DEBUG ones, dropped below the chosen level."""

    def __init__(self, level: int) -> None:
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith(NOISY) and (
            record.levelno == logging.INFO
            or (record.levelno == logging.WARNING and SKIPPED_RUN in str(record.msg))
        ):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return record.levelno >= self.level


def configure(level: str = "info", fmt: str = "text", secrets: Iterable[str] = ()) -> None:
    """Root logging to stderr at `level` (one of LEVELS), plain text or JSON lines, with
    secrets redacted (`secrets`: literal values to hide besides what the patterns find)."""
    numeric = getattr(logging, level.upper())
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(LOG_FORMAT))
    handler.addFilter(DemoteNoise(numeric))
    handler.addFilter(RedactSecrets(secrets))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(min(numeric, logging.INFO))  # noisy INFO records must reach the filter
    for name in NOISY:  # their demoted records must reach the filter too
        logging.getLogger(name).setLevel(
            logging.DEBUG if numeric <= logging.DEBUG else logging.INFO
        )


def config_secrets(config: Config, environ: Mapping[str, str]) -> list[str]:
    """The secret values a config names: API tokens, receivers' signing secrets and routing
    keys, and the passwords in the database and receiver URLs (their query values are the
    patterns' to find: a literal `require` would be hidden everywhere)."""
    out = [t.token or environ.get(t.token_env or "", "") for t in config.api.tokens]
    for receiver in config.alerts.receivers:
        names = (receiver.secret_env, receiver.routing_key_env)
        out += [environ.get(name, "") for name in names if name]
    for url in (config.database_url, *(r.url for r in config.alerts.receivers)):
        out.append(urllib.parse.urlsplit(url).password or "")
    return [s for s in out if s]


def announcement(text: str, fmt: str) -> str:
    """A line printed whatever the level (e.g. "serving on ..."), in the chosen log format."""
    if fmt != "json":
        return text
    record = logging.makeLogRecord({"name": "modelwatch", "levelno": 20, "levelname": "INFO",
                                    "msg": text})  # fmt: skip
    return JsonFormatter().format(record)
