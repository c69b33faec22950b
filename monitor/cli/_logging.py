"""Logging for long-running commands: a level, plain or JSON lines, and a quiet scheduler.

APScheduler logs two INFO lines per job run ("Running job", "executed successfully"); at a
tick every few seconds that buries everything else, so they (and Alembic's per-check "Context
impl" line) are demoted to DEBUG. So is its WARNING that a run was skipped because the previous
one is still running: with one instance per job that is the designed behaviour of a tick that
outlasts its interval (a loaded machine, a long burst), not a fault, and it would repeat every
interval; how long ticks take is in the job metrics.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

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
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        return json.dumps(doc, ensure_ascii=False)


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


def configure(level: str = "info", fmt: str = "text") -> None:
    """Root logging to stderr at `level` (one of LEVELS), plain text or JSON lines."""
    numeric = getattr(logging, level.upper())
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(LOG_FORMAT))
    handler.addFilter(DemoteNoise(numeric))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(min(numeric, logging.INFO))  # noisy INFO records must reach the filter
    for name in NOISY:  # their demoted records must reach the filter too
        logging.getLogger(name).setLevel(
            logging.DEBUG if numeric <= logging.DEBUG else logging.INFO
        )


def announcement(text: str, fmt: str) -> str:
    """A line printed whatever the level (e.g. "serving on ..."), in the chosen log format."""
    if fmt != "json":
        return text
    record = logging.makeLogRecord({"name": "modelwatch", "levelno": 20, "levelname": "INFO",
                                    "msg": text})  # fmt: skip
    return JsonFormatter().format(record)
