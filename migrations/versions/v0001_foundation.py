"""Foundation: models, versions, aliases, baselines and their profiles.

Revision ID: 0001_foundation
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001_foundation"
down_revision = None
branch_labels = None
depends_on = None

JSON_DOC = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "models",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_models")),
        sa.UniqueConstraint("name", name=op.f("uq_models_name")),
    )
    op.create_table(
        "model_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.String(100), nullable=False),
        sa.Column("artifact_uri", sa.Text(), nullable=True),
        sa.Column("artifact_sha256", sa.String(64), nullable=True),
        sa.Column("auto_rollback", sa.Boolean(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
            ondelete="CASCADE",
            name=op.f("fk_model_versions_model_id_models"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_model_versions")),
        sa.UniqueConstraint("model_id", "version", name=op.f("uq_model_versions_model_id_version")),
    )
    op.create_index(op.f("ix_model_versions_model_id"), "model_versions", ["model_id"])
    op.create_table(
        "model_aliases",
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("alias", sa.String(32), nullable=False),
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.CheckConstraint(
            "alias IN ('active', 'last_known_good')", name=op.f("ck_model_aliases_alias_known")
        ),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
            ondelete="CASCADE",
            name=op.f("fk_model_aliases_model_id_models"),
        ),
        sa.ForeignKeyConstraint(
            ["version_id"],
            ["model_versions.id"],
            ondelete="CASCADE",
            name=op.f("fk_model_aliases_version_id_model_versions"),
        ),
        sa.PrimaryKeyConstraint("model_id", "alias", name=op.f("pk_model_aliases")),
    )
    op.create_table(
        "baselines",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("model_version_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("source", sa.Text(), nullable=True),
        sa.Column("source_sha256", sa.String(64), nullable=True),
        sa.Column("n_rows", sa.Integer(), nullable=False),
        sa.Column("slice_by", JSON_DOC, nullable=False),
        sa.Column("settings", JSON_DOC, nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["model_version_id"],
            ["model_versions.id"],
            ondelete="CASCADE",
            name=op.f("fk_baselines_model_version_id_model_versions"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_baselines")),
        sa.UniqueConstraint(
            "model_version_id", "name", name=op.f("uq_baselines_model_version_id_name")
        ),
    )
    op.create_index(op.f("ix_baselines_model_version_id"), "baselines", ["model_version_id"])
    op.create_table(
        "baseline_profiles",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("baseline_id", sa.Integer(), nullable=False),
        sa.Column("slice_key", sa.String(500), nullable=False),
        sa.Column("column", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["baseline_id"],
            ["baselines.id"],
            ondelete="CASCADE",
            name=op.f("fk_baseline_profiles_baseline_id_baselines"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_baseline_profiles")),
        sa.UniqueConstraint(
            "baseline_id",
            "slice_key",
            "column",
            name=op.f("uq_baseline_profiles_baseline_id_slice_key_column"),
        ),
    )
    op.create_index(op.f("ix_baseline_profiles_baseline_id"), "baseline_profiles", ["baseline_id"])


def downgrade() -> None:
    op.drop_table("baseline_profiles")
    op.drop_table("baselines")
    op.drop_table("model_aliases")
    op.drop_table("model_versions")
    op.drop_table("models")
