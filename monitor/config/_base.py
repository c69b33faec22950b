"""Shared base for every config model: strict, frozen, unknown keys rejected."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """A config section: unknown keys are errors, values are immutable after validation."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)
