"""Alembic environment and revisions; the only way modelwatch's schema changes."""
