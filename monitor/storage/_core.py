"""Core tables: models, their versions, aliases (active, last-known-good) and baselines."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    CheckConstraint,
    ForeignKey,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from monitor.storage.base import Base, JSONDoc, UTCDateTime, utcnow

ALIASES = ("active", "last_known_good")


class Model(Base):
    """A monitored model, identified by name."""

    __tablename__ = "models"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    description: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    versions: Mapped[list[ModelVersion]] = relationship(
        back_populates="model", cascade="all, delete-orphan", order_by="ModelVersion.id"
    )


class ModelVersion(Base):
    """One version of a model, optionally with its artifact (an ONNX file)."""

    __tablename__ = "model_versions"
    __table_args__ = (UniqueConstraint("model_id", "version"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    model_id: Mapped[int] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"), index=True)
    version: Mapped[str] = mapped_column(String(100))
    artifact_uri: Mapped[str | None] = mapped_column(Text)
    artifact_sha256: Mapped[str | None] = mapped_column(String(64))
    # A failed gate for this version moves `active` back to last-known-good.
    auto_rollback: Mapped[bool] = mapped_column(default=False)
    # How the version was optimized: precision, quantization, batching, runtime, free meta.
    settings: Mapped[dict[str, Any]] = mapped_column(JSONDoc, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    model: Mapped[Model] = relationship(back_populates="versions")


class ModelAlias(Base):
    """A named pointer from a model to one of its versions: `active` or `last_known_good`."""

    __tablename__ = "model_aliases"
    __table_args__ = (
        CheckConstraint("alias IN ('active', 'last_known_good')", name="alias_known"),
    )

    model_id: Mapped[int] = mapped_column(
        ForeignKey("models.id", ondelete="CASCADE"), primary_key=True
    )
    alias: Mapped[str] = mapped_column(String(32), primary_key=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("model_versions.id", ondelete="CASCADE"))
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    version: Mapped[ModelVersion] = relationship()


class Baseline(Base):
    """Profiles of a reference dataset (training/validation), made once and compared many times."""

    __tablename__ = "baselines"
    __table_args__ = (UniqueConstraint("model_version_id", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    model_version_id: Mapped[int] = mapped_column(
        ForeignKey("model_versions.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(100), default="default")
    source: Mapped[str | None] = mapped_column(Text)
    source_sha256: Mapped[str | None] = mapped_column(String(64))
    n_rows: Mapped[int] = mapped_column(Integer)
    slice_by: Mapped[list[str]] = mapped_column(JSONDoc, default=list)
    settings: Mapped[dict[str, Any]] = mapped_column(JSONDoc, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    profiles: Mapped[list[BaselineProfile]] = relationship(
        back_populates="baseline", cascade="all, delete-orphan"
    )


class BaselineProfile(Base):
    """One column's serialised profile within a baseline, overall or for one slice."""

    __tablename__ = "baseline_profiles"
    __table_args__ = (UniqueConstraint("baseline_id", "slice_key", "column"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    baseline_id: Mapped[int] = mapped_column(
        ForeignKey("baselines.id", ondelete="CASCADE"), index=True
    )
    # "" is the whole dataset; otherwise a canonical JSON of {slice column: value}.
    slice_key: Mapped[str] = mapped_column(String(500), default="")
    column: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(20))
    n: Mapped[int] = mapped_column(Integer)
    payload: Mapped[bytes] = mapped_column(LargeBinary)

    baseline: Mapped[Baseline] = relationship(back_populates="profiles")
