"""Sources (Kafka, JSONL serving logs, HTTP), decoding, dead letters, windowing and label join.

The entry point for any input is :class:`Ingestor`: raw payloads with their positions in, one
transaction with aggregates, counters, dead letters, label join and positions out.
"""

from __future__ import annotations

from collectors.adapters import adapter_names, make_adapter, register_adapter
from collectors.base import (
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
from collectors.ingest import Ingestor
from collectors.profiling import ProfileBackend
from collectors.runner import RunState, run
from collectors.status import CollectStatus, ModelStatus, SourceStatus, collect_status

__all__ = [
    "Adapter",
    "Batch",
    "BatchResult",
    "CollectStatus",
    "DecodeError",
    "Ingestor",
    "LabelEvent",
    "ModelStatus",
    "PredictionEvent",
    "ProfileBackend",
    "RawRecord",
    "Rejection",
    "RunState",
    "Source",
    "SourceStatus",
    "adapter_names",
    "collect_status",
    "make_adapter",
    "register_adapter",
    "run",
]
