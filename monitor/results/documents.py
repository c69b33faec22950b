"""The document of a computed result (drift, outcome, SLO): every field by name, the slice as
`slice`. Apart from `monitor.results.store` (which adds stored rows) so that a report of computed
results, such as `modelwatch drift --json`, does not load the storage layer and SQLAlchemy.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from monitor.detectors import DriftResult
from monitor.profiles import parse_slice_key

if TYPE_CHECKING:
    from monitor.outcomes import OutcomeResult
    from monitor.slo.result import SloResult


def computed_document(result: DriftResult | OutcomeResult | SloResult) -> dict[str, Any]:
    """The document of a computed result (what `monitor.results.store.result_document` gives it)."""
    if isinstance(result, DriftResult):
        return with_slice(result.to_dict())  # the report's key order, the derived `decided_by`
    return with_slice({f.name: getattr(result, f.name) for f in dataclasses.fields(result)})


def with_slice(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` with a stored `slice_key` parsed into `slice` (None for the whole window)."""
    if "slice_key" in doc:
        doc["slice"] = parse_slice_key(doc.pop("slice_key"))
    return doc
