"""Column roles of a model's data (`models[].columns`), the config twin of the CLI's ROLES."""

from __future__ import annotations

from pydantic import Field

from monitor.config._base import StrictModel


class ColumnsConfig(StrictModel):
    """Which columns are ids, timestamps, excluded, the target and the prediction.

    `exclude`, `id` and `timestamp` are never compared for drift; `target` and `prediction` are
    (label and prediction drift). Command-line flags override these per key; `--exclude` adds.
    """

    exclude: list[str] = Field(
        default_factory=list, description="Columns never compared (`--exclude` adds to these)."
    )
    id: str | None = Field(default=None, description="Row id column: never compared.")
    target: str | None = Field(default=None, description="Label column: compared (target drift).")
    prediction: str | None = Field(
        default=None, description="Prediction column: compared (prediction drift)."
    )
    timestamp: str | None = Field(default=None, description="Timestamp column: never compared.")
