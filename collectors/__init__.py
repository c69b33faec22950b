"""Sources (Kafka, JSONL serving logs, HTTP via an intake log), decoding, dead letters, windowing
and label join.

The entry point for any input is :class:`Ingestor`: raw payloads with their positions in, one
transaction with aggregates, counters, dead letters, label join and positions out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from monitor.common.lazy import lazy_surface

if TYPE_CHECKING:
    from collectors._adapters import adapter_names, make_adapter, register_adapter
    from collectors._base import (
        Adapter,
        Batch,
        BatchResult,
        DecodeError,
        LabelEvent,
        PredictionEvent,
        RawRecord,
        Rejection,
        Source,
    )
    from collectors._http_bodies import CE_BATCH, CE_STRUCTURED, RequestBody, check_request
    from collectors._http_intake import (
        Accepted,
        Backlog,
        HttpIntake,
        IntakeFull,
        check_idempotency_key,
        read_backlog,
    )
    from collectors._ingest import Ingestor
    from collectors._intake_requests import (
        RequestDeadLetter,
        RequestState,
        count_dead_letters,
        keyed_request_state,
        request_dead_letters,
        request_state,
        stored_key,
    )
    from collectors._profiling import ProfileBackend
    from collectors._scrape import ScrapeError, scrape_resources
    from collectors.runner import RunState, run
    from collectors.status import CollectStatus, ModelStatus, SourceStatus, collect_status

__all__ = [
    "CE_BATCH",
    "CE_STRUCTURED",
    "Accepted",
    "Adapter",
    "Batch",
    "BatchResult",
    "Backlog",
    "CollectStatus",
    "DecodeError",
    "HttpIntake",
    "Ingestor",
    "IntakeFull",
    "LabelEvent",
    "ModelStatus",
    "PredictionEvent",
    "ProfileBackend",
    "RawRecord",
    "RequestBody",
    "Rejection",
    "RequestDeadLetter",
    "RequestState",
    "RunState",
    "Source",
    "SourceStatus",
    "ScrapeError",
    "adapter_names",
    "check_idempotency_key",
    "check_request",
    "collect_status",
    "count_dead_letters",
    "keyed_request_state",
    "make_adapter",
    "read_backlog",
    "register_adapter",
    "request_dead_letters",
    "request_state",
    "run",
    "scrape_resources",
    "stored_key",
]

# Each name loads with its module when first read: reading the adapters' names (config
# validation) does not load the ingestor, the HTTP intake or the runner.
__getattr__ = lazy_surface(
    __name__,
    {
        "collectors._adapters": (
            "adapter_names",
            "make_adapter",
            "register_adapter",
        ),
        "collectors._base": (
            "Adapter",
            "Batch",
            "BatchResult",
            "DecodeError",
            "LabelEvent",
            "PredictionEvent",
            "RawRecord",
            "Rejection",
            "Source",
        ),
        "collectors._http_bodies": (
            "CE_BATCH",
            "CE_STRUCTURED",
            "RequestBody",
            "check_request",
        ),
        "collectors._http_intake": (
            "Accepted",
            "Backlog",
            "HttpIntake",
            "IntakeFull",
            "check_idempotency_key",
            "read_backlog",
        ),
        "collectors._ingest": ("Ingestor",),
        "collectors._intake_requests": (
            "RequestDeadLetter",
            "RequestState",
            "count_dead_letters",
            "keyed_request_state",
            "request_dead_letters",
            "request_state",
            "stored_key",
        ),
        "collectors._profiling": ("ProfileBackend",),
        "collectors._scrape": ("ScrapeError", "scrape_resources"),
        "collectors.runner": (
            "RunState",
            "run",
        ),
        "collectors.status": (
            "CollectStatus",
            "ModelStatus",
            "SourceStatus",
            "collect_status",
        ),
    },
)
