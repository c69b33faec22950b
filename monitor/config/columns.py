"""Column roles of a model's data (`models[].columns`), the config twin of the CLI's ROLES."""

from __future__ import annotations

from pydantic import Field

from monitor.config._base import StrictModel


class ColumnsConfig(StrictModel):
    """Which columns are ids, timestamps, excluded, the target and the prediction.

    `exclude`, `id` and `timestamp` are never compared for drift; `target` and `prediction` are
    (label and prediction drift). Command-line flags override these per key; `--exclude` adds.
    """

    exclude: list[str] = Field(default_factory=list)
    id: str | None = None
    target: str | None = None
    prediction: str | None = None
    timestamp: str | None = None
