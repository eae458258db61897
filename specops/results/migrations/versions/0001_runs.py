"""runs: one row per RunResult, the full record as JSON beside the columns queries use.

Revision ID: 0001
Revises:
Create Date: 2026-01-01
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("uid", sa.String(64), primary_key=True),
        sa.Column("run_id", sa.String(128), nullable=False),
        sa.Column("profile", sa.String(128), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("verdict", sa.String(16), nullable=False),
        sa.Column("method", sa.String(64), nullable=False),
        sa.Column("backend", sa.String(64), nullable=False),
        # epoch seconds, as RunResult holds them: exact round trip, same ordering on every engine
        sa.Column("started_at", sa.Double, nullable=False),
        sa.Column("finished_at", sa.Double, nullable=False),
        sa.Column("speedup", sa.Double),
        sa.Column("speedup_low", sa.Double),
        sa.Column("speedup_high", sa.Double),
        sa.Column("schema_version", sa.Integer, nullable=False),
        sa.Column("result", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"), nullable=False),
    )
    op.create_index("ix_runs_profile_started_at", "runs", ["profile", "started_at"])
    op.create_index("ix_runs_run_id", "runs", ["run_id"])


def downgrade() -> None:
    op.drop_index("ix_runs_run_id", table_name="runs")
    op.drop_index("ix_runs_profile_started_at", table_name="runs")
    op.drop_table("runs")
